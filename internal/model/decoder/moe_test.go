package decoder

import (
	"math"
	"testing"
)

// TestRoute: router logits → softmax → top k (ggml_argsort's order: among
// equal probabilities the lower expert first) → weights renormalized.
func TestRoute(t *testing.T) {
	cases := []struct {
		logits []float32
		k      int
		sel    []int32
		w      []float64
	}{
		// softmax of [0 ln2 ln4 0] = [1 2 4 1]/8: top 2 = experts 2, 1 with 4/6, 2/6.
		{[]float32{0, float32(math.Ln2), float32(2 * math.Ln2), 0}, 2, []int32{2, 1}, []float64{4.0 / 6, 2.0 / 6}},
		// All equal: the lowest indices, equal weights.
		{[]float32{3, 3, 3, 3}, 2, []int32{0, 1}, []float64{0.5, 0.5}},
		// Ties below the top: expert 0 before 3.
		{[]float32{1, 0, 5, 1}, 3, []int32{2, 0, 3}, nil},
	}
	for i, c := range cases {
		probs := append([]float32(nil), c.logits...)
		order := make([]int32, len(probs))
		sel, w := make([]int32, c.k), make([]float32, c.k)
		Route(probs, c.k, order, sel, w)
		for r := range sel {
			if sel[r] != c.sel[r] {
				t.Fatalf("case %d: selected %v, want %v", i, sel, c.sel)
			}
		}
		sum := 0.0
		for r := range w {
			sum += float64(w[r])
			if c.w != nil && math.Abs(float64(w[r])-c.w[r]) > 1e-6 {
				t.Errorf("case %d: weights %v, want %v", i, w, c.w)
			}
		}
		if math.Abs(sum-1) > 1e-6 {
			t.Errorf("case %d: weights sum to %v", i, sum)
		}
	}
}

// TestRouteTopK: the top k router logits (equal logits: the lower expert
// first), weighed by a softmax over those k alone — the other experts'
// logits do not dilute the weights, as they do with Route.
func TestRouteTopK(t *testing.T) {
	cases := []struct {
		logits []float32
		k      int
		sel    []int32
		w      []float64
	}{
		// Top 2 of [0 ln2 ln4 9]: experts 3 and 2; softmax of (9, ln4).
		{[]float32{0, float32(math.Ln2), float32(2 * math.Ln2), 9}, 2, []int32{3, 2},
			[]float64{1 / (1 + 4/math.Exp(9)), (4 / math.Exp(9)) / (1 + 4/math.Exp(9))}},
		// Ties: the lowest indices, equal weights.
		{[]float32{3, 3, 3, 3}, 2, []int32{0, 1}, []float64{0.5, 0.5}},
		// Weights are the softmax of the chosen logits: (ln3, 0) → 3/4, 1/4.
		{[]float32{-50, float32(math.Log(3)), 0, -50}, 2, []int32{1, 2}, []float64{0.75, 0.25}},
	}
	for i, c := range cases {
		logits := append([]float32(nil), c.logits...)
		order := make([]int32, len(logits))
		sel, w := make([]int32, c.k), make([]float32, c.k)
		RouteTopK(logits, c.k, order, sel, w)
		for r := range sel {
			if sel[r] != c.sel[r] {
				t.Fatalf("case %d: selected %v, want %v", i, sel, c.sel)
			}
		}
		for r := range w {
			if math.Abs(float64(w[r])-c.w[r]) > 1e-6 {
				t.Errorf("case %d: weights %v, want %v", i, w, c.w)
			}
		}
	}
}
