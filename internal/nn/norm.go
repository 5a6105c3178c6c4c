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
// The sum of squares stays a scalar loop: ggml adds each float32 square to
// a float64 in element order, and that chain of dependent additions is
// both the exact result and the speed limit (a vectorized sum would be
// reordered, i.e. another number). The scaling is kernels.ScaleMul.
//
//	x, out [n, dim]; w [dim]
func RMSNorm(out, x, w []float32, eps float32) {
	dim := len(w)
	for r := 0; r+dim <= len(x); r += dim {
		row := x[r : r+dim]
		var ss float64
		for _, v := range row {
			ss += float64(v * v)
		}
		mean := float32(ss / float64(dim))
		scale := 1 / float32(math.Sqrt(float64(mean+eps)))
		kernels.ScaleMul(out[r:r+dim], row, w, scale)
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
