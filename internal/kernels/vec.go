package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Vector helpers of the KV cache and activation quantizers, each with a portable
// reference (the *Generic functions) that the SIMD versions are tested
// against. The function variables are swapped at init on CPUs with
// kernels.

// actQuantizers replaces quant's activation quantizers (same results,
// tested by TestActQuantizers) where this CPU has a kernel.
var actQuantizers = map[tensor.DType]func(y []byte, x []float32){}

// F32ToF16s converts src to F16 bits in dst, rounding to nearest even.
var F32ToF16s = f32ToF16sGeneric

func f32ToF16sGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = quant.F32ToF16(x)
	}
}
