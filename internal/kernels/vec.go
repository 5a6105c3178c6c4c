package kernels

import (
	"math"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Vector helpers of the KV cache, the activation quantizers and the
// converters, each with a portable reference (the *Generic functions)
// that the SIMD versions registered in ops.go are tested against.

func f32ToF16sGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = quant.F32ToF16(x)
	}
}

func roundF16sGeneric(x []float32) {
	for i, v := range x {
		x[i] = quant.RoundF16(v)
	}
}

func f16ToF32sGeneric(dst []float32, src []byte) {
	if err := quant.Dequantize(tensor.F16, dst, src[:2*len(dst)]); err != nil {
		panic(err) // F16 is always supported, and src was sliced to length
	}
}

// scaleMaxGeneric multiplies x by s in place and returns the largest
// product (−∞ for none): softmax's scale and max (ggml_soft_max_ext's
// scale, then ggml_vec_max_f32). Every product is rounded alone and max
// is exact, so any order gives these bits.
func scaleMaxGeneric(x []float32, s float32) float32 {
	mx := float32(math.Inf(-1))
	for i := range x {
		x[i] *= s
		mx = max(mx, x[i])
	}
	return mx
}

// scaleRoundF16Generic computes x[i] = RoundF16(x[i]·s): softmax's
// normalization (ggml_vec_scale_f32) and attention's F32 → F16 weights in
// one pass.
func scaleRoundF16Generic(x []float32, s float32) {
	for i := range x {
		x[i] = quant.RoundF16(x[i] * s)
	}
}
