//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func ropeNormAVX2(n int, x, cs *float32)

//go:noescape
func ropeNeoXAVX2(h int, x, c, s *float32)

func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA) {
		return
	}
	ropeNorm.register("avx2", func(x, cs []float32) {
		n := len(x)
		cs = cs[:n]
		n8 := n &^ 7
		if n8 > 0 {
			ropeNormAVX2(n8, &x[0], &cs[0])
		}
		ropeNormGeneric(x[n8:], cs[n8:])
	})
	ropeNeoX.register("avx2", func(x, c, s []float32) {
		h := len(x) / 2
		c, s = c[:h], s[:h]
		h8 := h &^ 7
		if h8 == h && h > 0 {
			ropeNeoXAVX2(h, &x[0], &c[0], &s[0])
			return
		}
		ropeNeoXGeneric(x, c, s)
	})
}
