package kernels

// FMAVec is the per-tap step of the causal depthwise convolution
// (ggml_ssm_conv): ggml's `sumf += s*c` is contracted by GCC into a fused
// multiply-add, so each channel's sum is fma(input, weight, sum), one
// rounding per tap. With the weights stored tap-major, one tap over all the
// channels is this elementwise fused multiply-add. The portable reference
// uses FMA32 (correctly rounded in software); fmavec_amd64.go registers
// VFMADD231PS versions, which round the same.

var fmaVecOp = newOp("FMAVec", fmaVecGeneric)

// FMAVec computes y[j] = fma(x[j], w[j], y[j]), x[j]·w[j] + y[j] rounded
// once, over len(y) elements (x and w at least as long).
func FMAVec(y, x, w []float32) { fmaVecOp.run(y, x, w) }

func fmaVecGeneric(y, x, w []float32) {
	x, w = x[:len(y)], w[:len(y)]
	for j := range y {
		y[j] = FMA32(x[j], w[j], y[j])
	}
}
