package kernels

// Elementwise float32 kernels of the norms and residuals. Each output is
// one or two IEEE roundings of its own inputs, so every implementation
// gives the same bits; the SIMD versions only go faster.

// ScaleMul computes out[i] = (x[i]·s)·w[i], two roundings: ggml_rms_norm's
// scale followed by ggml_mul by the norm weight.

// AddTo computes x[i] += y[i] (ggml_add: the residual connections).

func scaleMulGeneric(out, x, w []float32, s float32) {
	x, w = x[:len(out)], w[:len(out)]
	for i := range out {
		out[i] = float32(x[i]*s) * w[i]
	}
}

func addToGeneric(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}
