//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func dotQ8_0AVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ4_0AVX2(nb int, x, y *byte) float32

//go:noescape
func dotF16F32AVX2(n int, x *byte, y *float32) float32

//go:noescape
func dotQ5_0AVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ4_0x4AVX2(nb int, x, y *byte, ystride int, out *float32)

//go:noescape
func dotQ8_0x4AVX2(nb int, x, y *byte, ystride int, out *float32)

// rowsQ8_0AVX2 is dotQ8_0AVX2 for four weight rows and one token (decode).
//
//go:noescape
func rowsQ8_0AVX2(nb int, x0, x1, x2, x3, y *byte, out *float32)

// rowsQ5_0AVX2 is dotQ5_0AVX2 for four weight rows and one token.
//
//go:noescape
func rowsQ5_0AVX2(nb int, x0, x1, x2, x3, y *byte, out *float32)

// dotQ5_0x4AVX2 is dotQ5_0AVX2 for four activation rows (prefill).
//
//go:noescape
func dotQ5_0x4AVX2(nb int, x, y *byte, ystride int, out *float32)

// dot4 wraps a four-token kernel of type t: y holds at least 3·ystride +
// one row of t's activations.
func dot4(t tensor.DType, k func(nb int, x, y *byte, ystride int, out *float32)) Dot4Func {
	bs, xb, yb := layout(t)
	return func(n int, x, y []byte, ystride int, out []float32) {
		nb := n / bs
		if nb == 0 {
			clear(out[:4])
			return
		}
		_ = x[nb*xb-1]
		_ = y[3*ystride+nb*yb-1]
		_ = out[3]
		k(nb, &x[0], &y[0], ystride, &out[0])
	}
}

// layout is t's block: elements, weight bytes, and bytes of the
// activations it is multiplied with, from the type tables.
func layout(t tensor.DType) (bs, xb, yb int) {
	return t.BlockSize(), t.Traits().TypeSize, table[t].ref.ActType.Traits().TypeSize
}

// blockDot wraps a kernel of type t over nb whole blocks, checking the
// slices' lengths once so the assembly can run without bounds checks.
func blockDot(t tensor.DType, k func(nb int, x, y *byte) float32) DotFunc {
	bs, xb, yb := layout(t)
	return func(n int, x, y []byte) float32 {
		nb := n / bs
		if nb == 0 {
			return 0
		}
		_ = x[nb*xb-1]
		_ = y[nb*yb-1]
		return k(nb, &x[0], &y[0])
	}
}

// floatDot wraps a float kernel that needs n a multiple of 8; the tail
// goes to the generic code.
func floatDot(t tensor.DType, k func(n int, x *byte, y *float32) float32) DotFunc {
	tail := genericDot(t)
	return func(n int, x, y []byte) float32 {
		if n == 0 {
			return 0
		}
		_ = x[2*n-1]
		_ = y[4*n-1]
		n8 := n &^ 7
		var s float32
		if n8 > 0 {
			s = k(n8, &x[0], (*float32)(unsafe.Pointer(&y[0])))
		}
		if n8 < n {
			s += tail(n-n8, x[2*n8:], y[4*n8:])
		}
		return s
	}
}

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return
	}
	registerDot(tensor.Q8_0, Impl{Name: "avx2", Dot: blockDot(tensor.Q8_0, dotQ8_0AVX2),
		Dot4: dot4(tensor.Q8_0, dotQ8_0x4AVX2), Rows4: rows4(tensor.Q8_0, rowsQ8_0AVX2)})
	registerX4(tensor.Q4_0, "avx2", dot4(tensor.Q4_0, dotQ4_0x4AVX2), blockDot(tensor.Q4_0, dotQ4_0AVX2))
	registerDot(tensor.Q5_0, Impl{Name: "avx2", Dot: blockDot(tensor.Q5_0, dotQ5_0AVX2),
		Dot4: dot4(tensor.Q5_0, dotQ5_0x4AVX2), Rows4: rows4(tensor.Q5_0, rowsQ5_0AVX2)})
	registerFloatVecAVX2()
	registerX4(tensor.Q4_K, "avx2", dot4(tensor.Q4_K, dotQ4_Kx4AVX2), blockDot(tensor.Q4_K, dotQ4_KAVX2))
	registerX4(tensor.Q6_K, "avx2", dot4(tensor.Q6_K, dotQ6_Kx4AVX2), blockDot(tensor.Q6_K, dotQ6_KAVX2))
	register(tensor.Q4_1, "avx2", blockDot(tensor.Q4_1, dotQ4_1AVX2))
	register(tensor.Q5_1, "avx2", blockDot(tensor.Q5_1, dotQ5_1AVX2))
	register(tensor.Q5_K, "avx2", blockDot(tensor.Q5_K, dotQ5_KAVX2))
	register(tensor.Q2_K, "avx2", blockDot(tensor.Q2_K, dotQ2_KAVX2))
	registerBatch(tensor.IQ4_NL, "avx2", blockDot(tensor.IQ4_NL, dotIQ4_NLAVX2), blockDot(tensor.IQ4_NL, dotIQ4_NLBatchAVX2))
	register(tensor.Q3_K, "avx2", blockDot(tensor.Q3_K, dotQ3_KAVX2))
}

//go:noescape
func dotIQ4_NLAVX2(nb int, x, y *byte) float32

//go:noescape
func dotIQ4_NLBatchAVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ2_KAVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ3_KAVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ4_1AVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ5_1AVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ5_KAVX2(nb int, x, y *byte) float32

//go:noescape
func dotQ4_KAVX2(nb int, x, y *byte) float32

// dotQ4_Kx4AVX2 is dotQ4_KAVX2 for four activation rows ystride bytes
// apart (prefill): the weights unpacked once, each result the same bits.
//
//go:noescape
func dotQ4_Kx4AVX2(nb int, x, y *byte, ystride int, out *float32)

//go:noescape
func dotQ6_KAVX2(nb int, x, y *byte) float32

// dotQ6_Kx4AVX2 is dotQ6_KAVX2 for four activation rows, as dotQ4_Kx4AVX2.
//
//go:noescape
func dotQ6_Kx4AVX2(nb int, x, y *byte, ystride int, out *float32)
