// Package nn holds the layers of the forward pass other than matrix
// products: norms, rotary position embeddings, activation functions and
// attention. Each follows the ggml CPU op whose numbers Loom must match.
package nn

import "math"

// RMSNorm: out = x / sqrt(mean(x²) + eps) · w, per row of length len(w)
// (ggml_rms_norm followed by ggml_mul; the mean is summed in float64 as ggml
// does).
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
		o := out[r : r+dim]
		for i, v := range row {
			o[i] = float32(v*scale) * w[i]
		}
	}
}

// Add: x += y elementwise.
func Add(x, y []float32) {
	y = y[:len(x)]
	for i := range x {
		x[i] += y[i]
	}
}

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

// SwiGLU: gate = silu(gate)·up, with silu(x) = x/(1+e^-x) (ggml_silu, ggml_mul).
func SwiGLU(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = float32(g/(1+float32(math.Exp(float64(-g))))) * up[i]
	}
}

// SwiGLUTask runs SwiGLU over rows of a pool job (a Task, so no allocation).
type SwiGLUTask struct {
	Gate, Up []float32 // [n, hidden]
	Hidden   int
}

// Do implements parallel.Task over rows [lo, hi).
func (t *SwiGLUTask) Do(_, lo, hi int) {
	SwiGLU(t.Gate[lo*t.Hidden:hi*t.Hidden], t.Up[lo*t.Hidden:hi*t.Hidden])
}

// Softmax in place over x (max-subtracted, summed in float64 like ggml_soft_max).
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	mx := x[0]
	for _, v := range x[1:] {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}
