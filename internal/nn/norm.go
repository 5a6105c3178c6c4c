// Package nn holds the layers of the forward pass other than matrix
// products: norms, rotary position embeddings, activation functions and
// attention. Each follows the ggml CPU op whose numbers Loom must match.
package nn

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
)

// RMSNorm: out = x / sqrt(mean(x²) + eps) · w, per row of length len(w)
// (ggml_rms_norm followed by ggml_mul).
//
// ggml adds each float32 square to a float64 in element order; that chain
// of dependent additions is the exact result, so it is kept, eight rows'
// chains side by side (kernels.SumSquares). The scaling is
// kernels.ScaleMul.
//
//	x, out [n, dim]; w [dim]
func RMSNorm(out, x, w []float32, eps float32) {
	dim := len(w)
	if dim == 0 {
		return
	}
	n := len(x) / dim
	for r0 := 0; r0 < n; r0 += 8 {
		k := min(8, n-r0)
		ss := kernels.SumSquares(x[r0*dim:(r0+k)*dim], dim)
		for i := range k {
			r := (r0 + i) * dim
			mean := float32(ss[i] / float64(dim))
			scale := 1 / float32(math.Sqrt(float64(mean+eps)))
			kernels.ScaleMul(out[r:r+dim], x[r:r+dim], w, scale)
		}
	}
}

// Add: x += y elementwise (the residual connections).
func Add(x, y []float32) { kernels.AddTo(x, y) }

// AddBias adds b to every row of x ([n, len(b)]).
func AddBias(x, b []float32) {
	d := len(b)
	for r := 0; r+d <= len(x); r += d {
		row := x[r : r+d]
		for i := range row {
			row[i] += b[i]
		}
	}
}

// SwiGLU: gate = silu(gate)·up (ggml_silu with ggml's vectorized exp, then
// ggml_mul; see kernels.SiLUMul).
func SwiGLU(gate, up []float32) { kernels.SiLUMul(gate, up) }
