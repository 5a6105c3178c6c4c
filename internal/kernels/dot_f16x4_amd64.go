//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func dotF16x4AVX512(n int, x *byte, y *float32, ystride int, out *float32)

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL) {
		return
	}
	one := floatDot(tensor.F16, dotF16F32AVX2)
	g := genericDot(tensor.F16)
	registerX4(tensor.F16, "avx2+avx512vl", func(n int, x, y []byte, ystride int, out []float32) {
		if n == 0 {
			clear(out[:4])
			return
		}
		n8 := n &^ 7
		_ = x[2*n-1]
		_ = y[3*ystride+4*n-1]
		_ = out[3]
		if n8 == 0 {
			clear(out[:4])
		} else {
			dotF16x4AVX512(n8, &x[0], (*float32)(unsafe.Pointer(&y[0])), ystride, &out[0])
		}
		if n8 < n { // the tail as the one-token wrapper adds it
			for t := range 4 {
				out[t] += g(n-n8, x[2*n8:], y[t*ystride+4*n8:])
			}
		}
	}, one)
}
