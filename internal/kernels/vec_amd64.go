//go:build amd64 && !purego

package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func axpyF16AVX2(n int, a float32, v *uint16, o *float32)

//go:noescape
func f32ToF16AVX2(n int, src *float32, dst *uint16)

//go:noescape
func dotsF16TAVX2(hd int, q *float32, kT *uint16, stride int, n int, out *float32)

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return
	}
	DotsF16T = func(out, q []float32, kT []uint16, stride int) {
		n, hd := len(out), len(q)
		if n == 0 || hd == 0 {
			clear(out)
			return
		}
		_ = kT[(hd-1)*stride+n-1] // every element read is inside kT
		n8 := n &^ 7
		if n8 > 0 {
			dotsF16TAVX2(hd, &q[0], &kT[0], stride, n8, &out[0])
		}
		for j := n8; j < n; j++ {
			var s float32
			for i, x := range q {
				p := x * quant.F16ToF32(kT[i*stride+j])
				s += p
			}
			out[j] = s
		}
	}
	AxpyF16 = func(o []float32, a float32, v []uint16) {
		n := len(o)
		v = v[:n]
		n8 := n &^ 7
		if n8 > 0 {
			axpyF16AVX2(n8, a, &v[0], &o[0])
		}
		axpyF16Generic(o[n8:], a, v[n8:])
	}
	F32ToF16s = func(dst []uint16, src []float32) {
		n := len(src)
		dst = dst[:n]
		n8 := n &^ 7
		if n8 > 0 {
			f32ToF16AVX2(n8, &src[0], &dst[0])
		}
		f32ToF16sGeneric(dst[n8:], src[n8:])
	}
}

//go:noescape
func quantQ8_0AVX2(nb int, x *float32, y *byte)

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasF16C) {
		return
	}
	actQuantizers[tensor.Q8_0] = func(y []byte, x []float32) {
		nb := len(x) / 32
		if nb == 0 {
			return
		}
		_ = y[nb*34-1]
		quantQ8_0AVX2(nb, &x[0], &y[0])
	}
}
