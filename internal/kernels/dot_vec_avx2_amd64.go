//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/loom-inference/loom/internal/tensor"
)

//go:noescape
func dotF16VecAVX2(n int, x *byte, y *float32) float32

//go:noescape
func dotBF16VecAVX2(n int, x *byte, y *float32) float64

// One-token F16 and BF16 products on AVX2 in the AVX-512 build's orders
// (dotF16VecOrder, dotBF16VecOrder): llama.cpp's haswell build sums F16 in
// 32-element steps of 8 lanes, and a model's logits would then depend on
// the CPU (on the recurrent hybrids by more than the recordings'
// tolerances, see recurrent_amd64.go). dot_amd64.go's init registers them,
// before the AVX-512 kernels, which take over where the CPU has them.
func registerFloatVecAVX2() {
	register(tensor.F16, "avx2", f16VecDot(dotF16VecAVX2))
	register(tensor.BF16, "avx2", func(n int, x, y []byte) float32 {
		if n == 0 {
			return 0
		}
		_, _ = x[2*n-1], y[4*n-1]
		np := n &^ 31
		var sum float64
		if np > 0 {
			sum = dotBF16VecAVX2(np, &x[0], (*float32)(unsafe.Pointer(&y[0])))
		}
		return bf16VecTail(sum, x, y, np, n)
	})
}

// f16VecDot wraps a one-token F16 kernel over whole 64-element steps (the
// AVX-512 build's order) with the portable tail of that order.
func f16VecDot(k func(n int, x *byte, y *float32) float32) DotFunc {
	return func(n int, x, y []byte) float32 {
		if n == 0 {
			return 0
		}
		_, _ = x[2*n-1], y[4*n-1]
		np := n &^ 63
		var s float32
		if np > 0 {
			s = k(np, &x[0], (*float32)(unsafe.Pointer(&y[0])))
		}
		return f16VecTail(s, x, y, np, n)
	}
}
