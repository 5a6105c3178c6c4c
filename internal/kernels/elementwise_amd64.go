//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func scaleMulAVX2(n int, out, x, w *float32, s float32)

//go:noescape
func addToAVX2(n int, x, y *float32)

//go:noescape
func sumSquares8AVX2(n int, x *float32, stride int, ss *float64)

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
	sumSq.register("avx2", func(x []float32, dim int) [8]float64 {
		n8 := dim &^ 7
		if dim < 8 || len(x) < 8*dim {
			return sumSquaresGeneric(x, dim)
		}
		rows := x[:8*dim]
		var ss [8]float64
		sumSquares8AVX2(n8, &rows[0], 4*dim, &ss[0])
		// The last dim%8 elements, after the others, in order.
		for i := range ss {
			s := ss[i]
			for _, v := range rows[i*dim+n8 : (i+1)*dim] {
				s += float64(v * v)
			}
			ss[i] = s
		}
		return ss
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
