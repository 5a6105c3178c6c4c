//go:build amd64 && !purego

package kernels

import (
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func f32ToF16AVX2(n int, src *float32, dst *uint16)

//go:noescape
func f16ToF32AVX2(n int, src *byte, dst *float32)

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return
	}
	f16ToF32s.register("avx2", func(dst []float32, src []byte) {
		n := len(dst)
		src = src[:2*n]
		n8 := n &^ 7
		if n8 > 0 {
			f16ToF32AVX2(n8, &src[0], &dst[0])
		}
		if n8 < n { // the generic call costs a type lookup even when empty
			f16ToF32sGeneric(dst[n8:], src[2*n8:])
		}
	})
	roundF16s.register("avx2", func(x []float32) {
		n8 := len(x) &^ 7
		if n8 > 0 {
			roundF16sAVX2(n8, &x[0])
		}
		roundF16sGeneric(x[n8:])
	})
	f32ToF16s.register("avx2", func(dst []uint16, src []float32) {
		n := len(src)
		dst = dst[:n]
		n8 := n &^ 7
		if n8 > 0 {
			f32ToF16AVX2(n8, &src[0], &dst[0])
		}
		f32ToF16sGeneric(dst[n8:], src[n8:])
	})
}

//go:noescape
func quantQ8_0AVX2(nb int, x *float32, y *byte)

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasF16C) {
		return
	}
	actQuant[tensor.Q8_0].register("avx2", func(y []byte, x []float32) {
		nb := lQ8_0.Blocks(len(x))
		if nb == 0 {
			return
		}
		_ = y[nb*lQ8_0.Size-1]
		quantQ8_0AVX2(nb, &x[0], &y[0])
	})
}

//go:noescape
func quantQ8KAVX512(nb int, x *float32, y *byte)

// quantQ8KAVX2 is quantQ8KAVX512 for AVX2 CPUs, the same bytes.
//
//go:noescape
func quantQ8KAVX2(nb int, x *float32, y *byte)

// The Q8_K quantizer of the K-quants' activations (10% of tinyllama
// Q4_K_M prefill at one thread as portable Go). The assembly writes the
// block at fixed offsets: d at 0, the quants at 4, the bsums at 4+256,
// blocks 4+256+32 bytes apart; it runs only where the layout is that.
func init() {
	l := lQ8_K
	if l.Elems != 256 || l.D != 0 || l.QS != 4 || l.Bsums != l.QS+l.Elems || l.Size != l.Bsums+32 {
		return
	}
	q8k := func(k func(nb int, x *float32, y *byte)) func(y []byte, x []float32) {
		return func(y []byte, x []float32) {
			nb := l.Blocks(len(x))
			if nb == 0 {
				return
			}
			_ = y[nb*l.Size-1]
			k(nb, &x[0], &y[0])
		}
	}
	if cpu.X86.HasAVX2 {
		actQuant[tensor.Q8_K].register("avx2", q8k(quantQ8KAVX2))
	}
	if cpu.X86.HasAVX512F {
		actQuant[tensor.Q8_K].register("avx512", q8k(quantQ8KAVX512))
	}
}

//go:noescape
func roundF16sAVX2(n int, x *float32)

//go:noescape
func roundF16AVX512(n int, x *float32, y *byte)

//go:noescape
func roundBF16AVX512(n int, x *float32, y *byte)

// roundWriter wraps a one-token rounding of float activations (n a
// multiple of 16) with its bounds check, the elements past the last 16 to
// quant's reference.
func roundWriter(f func(n int, x *float32, y *byte), ref func(y []byte, x []float32)) func(y []byte, x []float32) {
	return func(y []byte, x []float32) {
		n16 := len(x) &^ 15
		if n16 > 0 {
			_ = y[4*n16-1]
			f(n16, &x[0], &y[0])
		}
		ref(y[4*n16:], x[n16:])
	}
}

// The one-token activations of F16 and BF16 weights (gemm_pack_amd64.s);
// this file's init runs after ops.go's, which makes actQuant.
func init() {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL) {
		return
	}
	actQuant[tensor.F16].register("avx512", roundWriter(roundF16AVX512, actQuant[tensor.F16].impls[0].f))
	actQuant[tensor.BF16].register("avx512", roundWriter(roundBF16AVX512, actQuant[tensor.BF16].impls[0].f))
}

//go:noescape
func scaleMaxAVX512(n int, x *float32, s float32) float32

//go:noescape
func scaleMaxAVX2(n int, x *float32, s float32) float32

//go:noescape
func scaleRoundF16AVX512(n int, x *float32, s float32)

//go:noescape
func scaleRoundF16AVX2(n int, x *float32, s float32)

// Softmax's passes: the bulk in SIMD (a multiple of the vector width),
// the tail by the reference (elementwise products and an exact max: the
// same bits in any order); the AVX-512 kernels take the tail themselves
// under a mask (width 1: every length), which a 128-token prompt's
// attention rows, 1–15 elements past a multiple of 16, spent 0.4% of F16
// prefill on in portable Go.
func init() {
	type impl struct {
		name  string
		ok    bool
		width int
		max   func(n int, x *float32, s float32) float32
		round func(n int, x *float32, s float32)
	}
	for _, im := range []impl{
		{"avx2", cpu.X86.HasAVX2 && cpu.X86.HasF16C, 8, scaleMaxAVX2, scaleRoundF16AVX2},
		{"avx512", cpu.X86.HasAVX512F, 1, scaleMaxAVX512, scaleRoundF16AVX512},
	} {
		if !im.ok {
			continue
		}
		scaleMax.register(im.name, func(x []float32, s float32) float32 {
			nv := len(x) / im.width * im.width
			mx := scaleMaxGeneric(x[nv:], s)
			if nv > 0 {
				mx = max(mx, im.max(nv, &x[0], s))
			}
			return mx
		})
		scaleRF16.register(im.name, func(x []float32, s float32) {
			nv := len(x) / im.width * im.width
			if nv > 0 {
				im.round(nv, &x[0], s)
			}
			scaleRoundF16Generic(x[nv:], s)
		})
	}
}

//go:noescape
func dequantQ8_0AVX512(nb int, x *byte, y *float32)

func init() {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasF16C {
		return
	}
	dequantQ8_0Op.register("avx512", func(y []float32, x []byte) {
		nb := lQ8_0.Blocks(len(y))
		if nb == 0 {
			return
		}
		_ = x[nb*lQ8_0.Size-1]
		_ = y[nb*lQ8_0.Elems-1]
		dequantQ8_0AVX512(nb, &x[0], &y[0])
	})
}
