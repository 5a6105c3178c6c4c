//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func siluMulAVX512(n int, gate, up *float32)

//go:noescape
func expSumAVX512(n int, x, y *float32, max float32) float64

//go:noescape
func siluMulAVX2(n int, gate, up *float32)

//go:noescape
func expSumAVX2(n int, x, y *float32, max float32) float64

// hasExpAVX512: the AVX-512 ggml_v_expf needs F (scalef, masks) and DQ
// (VEXTRACTF32X8), as ggml's own #if does.
var hasExpAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// expImpl is one SIMD implementation of SiLUMul and ExpSum; each kernel
// takes whole 16-element vectors (n a multiple of 16).
type expImpl struct {
	name  string
	silu  func(n int, gate, up *float32)
	esum  func(n int, x, y *float32, max float32) float64
	wrapS func(gate, up []float32)
	wrapE func(y, x []float32, max float32) float64
}

func newExpImpl(name string, silu func(int, *float32, *float32), esum func(int, *float32, *float32, float32) float64) *expImpl {
	e := &expImpl{name: name, silu: silu, esum: esum}
	e.wrapS = func(gate, up []float32) {
		n := len(gate)
		up = up[:n]
		n16 := n &^ 15
		if n16 > 0 {
			e.silu(n16, &gate[0], &up[0])
		}
		siLUMulGeneric(gate[n16:], up[n16:])
	}
	e.wrapE = func(y, x []float32, max float32) float64 {
		n := len(x)
		y = y[:n]
		n16 := n &^ 15
		var sum float64
		if n16 > 0 {
			sum = e.esum(n16, &x[0], &y[0], max)
		}
		return expTail(sum, y, x, max, n16)
	}
	return e
}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		registerExp(newExpImpl("avx2", siluMulAVX2, expSumAVX2))
	}
	if hasExpAVX512 {
		registerExp(newExpImpl("avx512", siluMulAVX512, expSumAVX512))
	}
}

func registerExp(e *expImpl) {
	siLUMul.register(e.name, e.wrapS)
	expSum.register(e.name, e.wrapE)
}
