//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

//go:noescape
func siluMulAVX512(n int, gate, up *float32)

//go:noescape
func expSumAVX512(n int, x, y *float32, max float32) float64

// hasExpAVX512: the AVX-512 ggml_v_expf needs F (scalef, masks) and DQ
// (VEXTRACTF32X8), as ggml's own #if does.
var hasExpAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

func init() {
	if !hasExpAVX512 {
		return
	}
	SiLUMul = func(gate, up []float32) {
		n := len(gate)
		up = up[:n]
		n16 := n &^ 15
		if n16 > 0 {
			siluMulAVX512(n16, &gate[0], &up[0])
		}
		siLUMulGeneric(gate[n16:], up[n16:])
	}
	ExpSum = func(y, x []float32, max float32) float64 {
		n := len(x)
		y = y[:n]
		n16 := n &^ 15
		var sum float64
		if n16 > 0 {
			sum = expSumAVX512(n16, &x[0], &y[0], max)
		}
		for i := n16; i < n; i++ {
			e := libmExpf(x[i] - max)
			y[i] = e
			sum += float64(e)
		}
		return sum
	}
}
