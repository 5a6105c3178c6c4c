package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// BenchmarkFloatDecode: one token against float weights too large for the
// caches (eight 5632×2048 matrices, a tinyllama FFN's shape, used in
// turn), GB/s of weights read: decode's bound is the memory bandwidth.
func BenchmarkFloatDecode(b *testing.B) {
	const rows, cols, mats = 5632, 2048, 8
	rng := rand.New(rand.NewPCG(3, 4))
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16} {
		ms := make([]*Matrix, mats)
		for i := range ms {
			data := randomFloatRows(rng, typ, rows, cols)
			ms[i], _ = NewMatrix("w", typ, rows, cols, data)
			ms[i].Pack()
		}
		x := make([]float32, 5*cols)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, 5*rows)
		for _, threads := range []int{1, 2} {
			p := parallel.New(threads)
			// n > 1: speculative verification's k+1 tokens in the
			// one-token order; ideally still bound by the weights' read.
			for _, n := range []int{1, 5} {
				ws := Workspace{OneTokenOrder: n > 1}
				b.Run(fmt.Sprintf("%v/%s/t%d/tokens%d", typ, ms[0].Kernel(), threads, n), func(b *testing.B) {
					b.SetBytes(int64(len(ms[0].Data)))
					i := 0
					for b.Loop() {
						ws.MatMul(p, ms[i%mats], x, n, out)
						i++
					}
				})
			}
			p.Close()
		}
	}
}
