package kernels

import (
	"github.com/loom-inference/loom/internal/quant"
)

// Vector helpers of the KV cache and activation quantizers, each with a portable
// reference (the *Generic functions) that the SIMD versions are tested
// against. The function variables are swapped at init on CPUs with
// kernels.

func f32ToF16sGeneric(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = quant.F32ToF16(x)
	}
}
