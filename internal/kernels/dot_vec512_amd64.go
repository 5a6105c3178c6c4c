//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func dotF16VecAVX512(n int, x *byte, y *float32) float32

//go:noescape
func dotF32VecAVX512(n int, x, y *float32) float32

//go:noescape
func dotF16Vec4RowsAVX512(n int, x0, x1, x2, x3 *byte, y *uint16, out *float32)

//go:noescape
func dotF16Vec4AVX512(n int, x *byte, y *float32, ystride int, out *float32)

// The AVX-512 vec_dot orders of F16 and F32 (llama.cpp's one-token path on
// this CPU, and its path for products tinyBLAS declines). Registered last,
// so they take over from the AVX2 F16 kernels, whose order is the AVX2
// build's.
func init() {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ) {
		return
	}
	one := f16VecDot(dotF16VecAVX512)
	// Four tokens in the one-token order (the weights read once): the
	// products speculative verification and row-kernel batches run.
	four := func(n int, x, y []byte, ystride int, out []float32) {
		_ = out[3]
		if n == 0 {
			clear(out[:4])
			return
		}
		_, _ = x[2*n-1], y[3*ystride+4*n-1]
		np := n &^ 63
		if np > 0 {
			dotF16Vec4AVX512(np, &x[0], (*float32)(unsafe.Pointer(&y[0])), ystride, &out[0])
		} else {
			clear(out[:4])
		}
		for t := range 4 {
			out[t] = f16VecTail(out[t], x, y[t*ystride:], np, n)
		}
	}
	rows4 := func(n int, x0, x1, x2, x3, y []byte, out []float32) {
		_ = out[3]
		if n == 0 {
			clear(out[:4])
			return
		}
		_, _, _, _, _ = x0[2*n-1], x1[2*n-1], x2[2*n-1], x3[2*n-1], y[2*n-1]
		np := n &^ 63
		if np > 0 {
			dotF16Vec4RowsAVX512(np, &x0[0], &x1[0], &x2[0], &x3[0], (*uint16)(unsafe.Pointer(&y[0])), &out[0])
		} else {
			clear(out[:4])
		}
		for r, x := range [4][]byte{x0, x1, x2, x3} {
			out[r] = f16VecTailNarrow(out[r], x, y, np, n)
		}
	}
	// rows4 reads the activations as F16 (the F16-rounded float32 row
	// converted back, exact).
	narrow := func(dst, y []byte, n int) {
		if n == 0 {
			return
		}
		_, _ = dst[2*n-1], y[4*n-1]
		F32ToF16s(unsafe.Slice((*uint16)(unsafe.Pointer(&dst[0])), n), unsafe.Slice((*float32)(unsafe.Pointer(&y[0])), n))
	}
	registerDot(tensor.F16, Impl{Name: "avx512", Dot: one, Dot4: four, Rows4: rows4, Narrow: narrow})
	register(tensor.F32, "avx512", func(n int, x, y []byte) float32 {
		if n == 0 {
			return 0
		}
		_, _ = x[4*n-1], y[4*n-1]
		np := n &^ 63
		var s float32
		if np > 0 {
			s = dotF32VecAVX512(np, (*float32)(unsafe.Pointer(&x[0])), (*float32)(unsafe.Pointer(&y[0])))
		}
		return f32VecTail(s, x, y, np, n)
	})
}
