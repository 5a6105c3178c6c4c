package nn

import (
	"math"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
)

// TestLayerNorm: a hand-computed row. x = [1 2 3 4]: mean 2.5, variance
// 1.25, so (x−mean)/√(1.25+eps) = [−1.3416 −0.4472 0.4472 1.3416]; then ·w + b.
func TestLayerNorm(t *testing.T) {
	x := []float32{1, 2, 3, 4, 10, 10, 10, 10}
	w := []float32{1, 2, 1, 0.5}
	b := []float32{0, 0, 1, -1}
	out := make([]float32, 8)
	LayerNorm(out, x, w, b, 0)
	want := []float64{-1.3416408, -0.8944272, 1.4472136, -0.3291796, 0, 0, 1, -1}
	for i := range want {
		if math.Abs(float64(out[i])-want[i]) > 1e-6 {
			t.Errorf("out[%d] = %v, want %v", i, out[i], want[i])
		}
	}
}

// TestGELU: ggml's table GELU: F16-rounded input, F16-rounded result of
// the tanh form; 0 below −10 and x above 10.
func TestGELU(t *testing.T) {
	cases := []struct{ x, want float32 }{
		{0, 0},
		{1, quant.F16ToF32(quant.F32ToF16(0.8411920))}, // 0.5·(1+tanh(√(2/π)·(1+0.044715)))
		{-1, quant.F16ToF32(quant.F32ToF16(-0.1588080))},
		{3, quant.F16ToF32(quant.F32ToF16(2.9963627))},
		{-11, 0},
		{12.5, 12.5},
	}
	for _, c := range cases {
		x := []float32{c.x}
		GELU(x)
		if x[0] != c.want {
			t.Errorf("gelu(%v) = %v, want %v", c.x, x[0], c.want)
		}
	}
	// GeGLU multiplies by up after the gate's GELU.
	g, u := []float32{1, -1}, []float32{2, 3}
	GeGLU(g, u)
	if g[0] != 2*quant.F16ToF32(quant.F32ToF16(0.8411920)) || g[1] != 3*quant.F16ToF32(quant.F32ToF16(-0.1588080)) {
		t.Errorf("geglu = %v", g)
	}
}

// TestSoftcap: cap·tanh(x/cap): ≈x for small x, bounded by cap.
func TestSoftcap(t *testing.T) {
	x := []float32{0, 1, -1, 50, 1000, -1000}
	Softcap(x, 50)
	want := []float64{0, 50 * math.Tanh(0.02), -50 * math.Tanh(0.02), 50 * math.Tanh(1), 50, -50}
	for i := range want {
		if math.Abs(float64(x[i])-want[i]) > 1e-5 {
			t.Errorf("softcap[%d] = %v, want %v", i, x[i], want[i])
		}
	}
}

// TestSlidingWindow: with a window of 2, a token at position 3 sees
// positions 2 and 3 only: the others weigh 0; a window wider than the
// context masks nothing; a symmetric window of 4 shows a token at 3 the
// positions 1 to 5 of a bidirectional row of 8.
func TestSlidingWindow(t *testing.T) {
	for _, c := range []struct {
		window     int
		symmetric  bool
		p, nk      int
		wantLo, hi int
	}{
		{2, false, 3, 4, 2, 4},
		{4096, false, 3, 4, 0, 4},
		{0, false, 3, 4, 0, 4},
		{4, true, 3, 8, 1, 6},
		{4, true, 0, 8, 0, 3},
		{4, true, 7, 8, 5, 8},
		{4096, true, 3, 8, 0, 8},
	} {
		a := &Attention{Window: c.window, Symmetric: c.symmetric}
		if lo, hi := a.visible(c.p, c.nk); lo != c.wantLo || hi != c.hi {
			t.Errorf("%+v: visible [%d, %d)", c, lo, hi)
		}
	}
	sc := make([]float32, 16)
	for j := range sc[:4] {
		sc[j] = 1
	}
	sc[0], sc[1] = float32(math.Inf(-1)), float32(math.Inf(-1)) // as Do masks them
	softmax(sc, 4, 1, float32(math.NaN()))
	if sc[0] != 0 || sc[1] != 0 || math.Abs(float64(sc[2])-0.5) > 1e-6 || math.Abs(float64(sc[3])-0.5) > 1e-6 {
		t.Errorf("weights %v", sc[:4])
	}
}

// TestSoftmaxSink: a sink logit joins the denominator and takes no weight:
// with scores (0, 0) and a sink of 0 each position weighs 1/3; a sink far
// above the scores takes almost all the mass (the weights sum to ~0), one
// far below changes nothing.
func TestSoftmaxSink(t *testing.T) {
	for _, c := range []struct {
		sink, want float32
	}{{0, 1.0 / 3}, {30, 0}, {-100, 0.5}} {
		sc := make([]float32, 16)
		softmax(sc, 2, 1, c.sink)
		for j := range 2 {
			if math.Abs(float64(sc[j]-c.want)) > 1e-6 {
				t.Errorf("sink %v: weight %d = %v, want %v", c.sink, j, sc[j], c.want)
			}
		}
	}
}
