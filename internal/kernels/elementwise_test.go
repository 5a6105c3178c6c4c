package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestElementwise runs every registered ScaleMul and AddTo against the
// portable references bit for bit, tails included.
func TestElementwise(t *testing.T) {
	for i := range scaleMul.impls {
		t.Run(scaleMul.impls[i].name, func(t *testing.T) { testElementwise(t, scaleMul.impls[i].f, addTo.impls[i].f) })
	}
}

func testElementwise(t *testing.T, ScaleMul func(out, x, w []float32, s float32), AddTo func(x, y []float32)) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 7, 8, 9, 64, 100, 2048 + 5} {
		x, w, y := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i], w[i], y[i] = float32(rng.NormFloat64()*10), float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		s := float32(0.37)
		a, b := make([]float32, n), make([]float32, n)
		ScaleMul(a, x, w, s)
		scaleMulGeneric(b, x, w, s)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("ScaleMul n=%d [%d]: %v, reference %v", n, i, a[i], b[i])
			}
		}
		a, b = append([]float32(nil), x...), append([]float32(nil), x...)
		AddTo(a, y)
		addToGeneric(b, y)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("AddTo n=%d [%d]: %v, reference %v", n, i, a[i], b[i])
			}
		}
	}
}
