package kernels

import (
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
