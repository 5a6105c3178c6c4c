//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func fmaVecAVX512(n int, y, x, w *float32)

//go:noescape
func fmaVecAVX2(n int, y, x, w *float32)

func registerFMAVec(name string, f func(n int, y, x, w *float32)) {
	fmaVecOp.register(name, func(y, x, w []float32) {
		n := len(y)
		if n == 0 {
			return
		}
		x, w = x[:n], w[:n]
		f(n, &y[0], &x[0], &w[0])
	})
}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		registerFMAVec("avx2", fmaVecAVX2)
	}
	if cpu.X86.HasAVX512F {
		registerFMAVec("avx512", fmaVecAVX512)
	}
}
