package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Vector helpers of attention and the KV cache, each with a portable
// reference (the *Generic functions) that the SIMD versions are tested
// against. The function variables are swapped at init on CPUs with
// kernels.

// actQuantizers replaces quant's activation quantizers (same results,
// tested by TestActQuantizers) where this CPU has a kernel.
var actQuantizers = map[tensor.DType]func(y []byte, x []float32){}

// DotsF16T computes out[j] = Σ_i q[i]·f16(kT[i·stride + j]) for every j <
// len(out), each sum in element order (multiply, then add): the scores of
// one query against len(out) positions of a transposed K.
var DotsF16T = dotsF16TGeneric

// AxpyF16 is o[i] += a·f16(v[i]) (a multiply, then an add: two roundings).
var AxpyF16 = axpyF16Generic

// F32ToF16s converts src to F16 bits in dst, rounding to nearest even.
var F32ToF16s = f32ToF16sGeneric

func axpyF16Generic(o []float32, a float32, v []uint16) {
	v = v[:len(o)]
	for i := range o {
		p := a * quant.F16ToF32(v[i])
		o[i] += p
	}
}

func f32ToF16sGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = quant.F32ToF16(x)
	}
}

func dotsF16TGeneric(out, q []float32, kT []uint16, stride int) {
	for j := range out {
		var s float32
		for i, x := range q {
			p := x * quant.F16ToF32(kT[i*stride+j])
			s += p
		}
		out[j] = s
	}
}
