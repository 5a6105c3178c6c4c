//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func dotBF16VecAVX512(n int, x *byte, y *float32) float64

//go:noescape
func dotBF16Vec4AVX512(n int, x *byte, y *float32, ystride int, out *float64)

//go:noescape
func dotBF16Vec4RowsAVX512(n int, x0, x1, x2, x3 *byte, y *uint16, out *float64)

//go:noescape
func dpbf16x16(acc *[16]float32, a, b *[16]uint32)

// The AVX-512 order of ggml_vec_dot_bf16 (llama.cpp's one-token path on
// this CPU kind, see bf16.go). Registered after the AVX2 kernel (this file
// sorts after dot_amd64.go), whose order is another build's, so that it
// runs.
func init() {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ) {
		return
	}
	one := func(n int, x, y []byte) float32 {
		if n == 0 {
			return 0
		}
		_, _ = x[2*n-1], y[4*n-1]
		np := n &^ 31
		sum := 0.0
		if np > 0 {
			sum = dotBF16VecAVX512(np, &x[0], (*float32)(unsafe.Pointer(&y[0])))
		}
		return bf16VecTail(sum, x, y, np, n)
	}
	// Four tokens in the one-token order (the weights read once): the
	// products speculative verification and row-kernel batches run.
	four := func(n int, x, y []byte, ystride int, out []float32) {
		_ = out[3]
		if n == 0 {
			clear(out[:4])
			return
		}
		_, _ = x[2*n-1], y[3*ystride+4*n-1]
		np := n &^ 31
		var sums [4]float64
		if np > 0 {
			dotBF16Vec4AVX512(np, &x[0], (*float32)(unsafe.Pointer(&y[0])), ystride, &sums[0])
		}
		for t := range 4 {
			out[t] = bf16VecTail(sums[t], x, y[t*ystride:], np, n)
		}
	}
	rows4 := func(n int, x0, x1, x2, x3, y []byte, out []float32) {
		_ = out[3]
		if n == 0 {
			clear(out[:4])
			return
		}
		_, _, _, _, _ = x0[2*n-1], x1[2*n-1], x2[2*n-1], x3[2*n-1], y[2*n-1]
		np := n &^ 31
		var sums [4]float64
		if np > 0 {
			dotBF16Vec4RowsAVX512(np, &x0[0], &x1[0], &x2[0], &x3[0], (*uint16)(unsafe.Pointer(&y[0])), &sums[0])
		}
		for r, x := range [4][]byte{x0, x1, x2, x3} {
			out[r] = bf16VecTailNarrow(sums[r], x, y, np, n)
		}
	}
	registerDot(tensor.BF16, Impl{Name: "avx512", Dot: one, Dot4: four, Rows4: rows4, Narrow: narrowBF16})
}
