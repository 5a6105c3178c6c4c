package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// BenchmarkFloatDecode: one token against float weights too large for the
// caches (eight matrices of a tinyllama FFN's shapes, used in turn: up
// 5632×2048, down 2048×5632, whose long rows test the activation row's
// room in L1), GB/s of weights read: decode's bound is the memory bandwidth.
func BenchmarkFloatDecode(b *testing.B) {
	const mats = 8
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range []struct {
		name       string
		rows, cols int
	}{{"up", 5632, 2048}, {"down", 2048, 5632}} {
		for _, typ := range []tensor.DType{tensor.F16, tensor.BF16} {
			floatDecode(b, rng, sh.name, typ, sh.rows, sh.cols, mats)
		}
	}
}

// floatDecode runs BenchmarkFloatDecode on one shape and type.
func floatDecode(b *testing.B, rng *rand.Rand, shape string, typ tensor.DType, rows, cols, mats int) {
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
		// tokens5: speculative verification's k+1 tokens in the
		// one-token order; batch4: four sequences' decode in the batch
		// order (the float GEMM). Ideally both still bound by the
		// weights' read.
		for _, c := range []struct {
			name string
			n    int
			one  bool
		}{{"tokens1", 1, false}, {"tokens5", 5, true}, {"batch4", 4, false}} {
			n := c.n
			ws := Workspace{OneTokenOrder: c.one}
			kern := ms[0].Kernel()
			if !c.one && n > 1 {
				kern = ms[0].GemmKernel()
			}
			b.Run(fmt.Sprintf("%s/%v/%s/t%d/%s", shape, typ, kern, threads, c.name), func(b *testing.B) {
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

// BenchmarkQuantDecode: BenchmarkFloatDecode's one-token product on the
// quantized types' packed kernels (random blocks of each type), GB/s of
// weights read: at one thread, how close the kernels come to the memory
// bandwidth that BenchmarkFloatDecode's F16 reaches.
func BenchmarkQuantDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range []struct {
		name       string
		rows, cols int
	}{{"up", 5632, 2048}, {"down", 2048, 5632}} {
		for _, typ := range []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K} {
			// Enough matrices that the ones used in turn (≥ 160 MB)
			// cannot stay in the last-level cache.
			rb, _ := tensor.RowBytes(typ, uint64(sh.cols))
			ms := make([]*Matrix, 1+160<<20/(sh.rows*int(rb)))
			mats := len(ms)
			for i := range ms {
				var data []byte
				for range sh.rows {
					data = append(data, randomRow(rng, typ, sh.cols)...)
				}
				ms[i], _ = NewMatrix("w", typ, sh.rows, sh.cols, data)
			}
			PackAll(ms) // as the engine does: one huge-page arena
			x := make([]float32, sh.cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			out := make([]float32, sh.rows)
			for _, threads := range []int{1, 2} {
				p := parallel.New(threads)
				var ws Workspace
				ws.Reserve(1, ms)
				b.Run(fmt.Sprintf("%s/%v/%s/t%d", sh.name, typ, ms[0].Kernel(), threads), func(b *testing.B) {
					b.SetBytes(int64(len(ms[0].Data)))
					i := 0
					for b.Loop() {
						ws.MatMul(p, ms[i%mats], x, 1, out)
						i++
					}
				})
				p.Close()
			}
		}
	}
}
