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

// sumSquaresGeneric is SumSquares' reference: the sums of squares of up
// to eight rows of dim elements in x, each float32 square widened and
// added to a float64 in element order, as ggml_rms_norm sums (ggml_float).
// That chain of dependent additions is both the exact result and one
// row's speed limit, so the SIMD version runs the eight rows' chains side
// by side, one in each lane: every row keeps its own order, and the bits.
// dim ≤ 0 gives zeros.
func sumSquaresGeneric(x []float32, dim int) (ss [8]float64) {
	if dim <= 0 {
		return ss
	}
	for r := range min(len(ss), len(x)/dim) {
		var s float64
		for _, v := range x[r*dim : (r+1)*dim] {
			s += float64(v * v)
		}
		ss[r] = s
	}
	return ss
}
