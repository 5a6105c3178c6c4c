//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func scaleMulAVX2(n int, out, x, w *float32, s float32)

//go:noescape
func addToAVX2(n int, x, y *float32)

func init() {
	if !cpu.X86.HasAVX2 {
		return
	}
	scaleMul.register("avx2", func(out, x, w []float32, s float32) {
		n := len(out)
		x, w = x[:n], w[:n]
		n8 := n &^ 7
		if n8 > 0 {
			scaleMulAVX2(n8, &out[0], &x[0], &w[0], s)
		}
		scaleMulGeneric(out[n8:], x[n8:], w[n8:], s)
	})
	addTo.register("avx2", func(x, y []float32) {
		n := len(x)
		y = y[:n]
		n8 := n &^ 7
		if n8 > 0 {
			addToAVX2(n8, &x[0], &y[0])
		}
		addToGeneric(x[n8:], y[n8:])
	})
}
