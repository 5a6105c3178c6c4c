//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func dotQ4_0VNNI(nb int, x, y *byte, ys, yc *float32) float32

//go:noescape
func dotQ8_0VNNI(nb int, x, y *byte, ys *float32) float32

func init() {
	if !(cpu.X86.HasAVX512VNNI && cpu.X86.HasAVX512VL && cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return
	}
	// y is a Q8_0 activation row followed by its scale tail (see actTail).
	registerScaled(tensor.Q4_0, "avx512vnni", func(n int, x, y []byte) float32 {
		nb := n / 32
		if nb == 0 {
			return 0
		}
		_ = x[nb*18-1]
		_ = y[nb*34+8*nb-1]
		ys := (*float32)(unsafe.Pointer(&y[nb*34]))
		yc := (*float32)(unsafe.Pointer(&y[nb*34+4*nb]))
		return dotQ4_0VNNI(nb, &x[0], &y[0], ys, yc)
	})
	registerScaled(tensor.Q8_0, "avx512vnni", func(n int, x, y []byte) float32 {
		nb := n / 32
		if nb == 0 {
			return 0
		}
		_ = x[nb*34-1]
		_ = y[nb*34+8*nb-1]
		return dotQ8_0VNNI(nb, &x[0], &y[0], (*float32)(unsafe.Pointer(&y[nb*34])))
	})
}
