package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps is the distance in float32 steps between two finite floats of the
// same sign.
func ulps(a, b float32) int64 {
	d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
	if d < 0 {
		d = -d
	}
	return d
}

// TestExpF32 checks the reference ggml_v_expf against float64 exp: ggml
// states a maximum error of 1.45 + 0.5 ulp, and its range limits.
func TestExpF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	worst := int64(0)
	for range 200000 {
		x := float32(rng.Float64()*170 - 85)
		got, want := ExpF32(x), float32(math.Exp(float64(x)))
		if u := ulps(got, want); u > worst {
			worst = u
		}
	}
	if worst > 2 {
		t.Fatalf("ExpF32 is %d ulp from exp somewhere in [-85, 85]", worst)
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1},
		{float32(math.Inf(-1)), 0},
		{float32(math.Inf(1)), float32(math.Inf(1))},
		{-200, 0},
		{100, float32(math.Inf(1))},
	} {
		if got := ExpF32(c.x); got != c.want {
			t.Errorf("ExpF32(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := ExpF32(float32(math.NaN())); !math.IsNaN(float64(got)) {
		t.Errorf("ExpF32(NaN) = %v", got)
	}
	// Subnormal results are rounded once (scalef), not flushed.
	if got := ExpF32(-100); got == 0 || got >= 1.2e-38 {
		t.Errorf("ExpF32(-100) = %v, want a subnormal", got)
	}
}

// expInputs are values that reach every branch of ExpF32: ordinary ones,
// subnormal results, |n| > 192 both ways, ±Inf, NaN, −0.
func expInputs(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	special := []float32{0, float32(math.Copysign(0, -1)), -87.5, -100, -103.9, -104, -150, -300, 88, 89, 200,
		float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.NaN())}
	for i := range x {
		if rng.IntN(8) == 0 {
			x[i] = special[rng.IntN(len(special))]
		} else {
			x[i] = float32(rng.NormFloat64() * 6)
		}
	}
	return x
}

func sameBits(a, b float32) bool {
	if math.IsNaN(float64(a)) && math.IsNaN(float64(b)) {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// TestSiLUMulExpSum runs every SiLUMul and ExpSum this CPU supports
// against the portable references bit for bit, tails included.
func TestSiLUMulExpSum(t *testing.T) {
	for i, im := range siLUMul.impls {
		t.Run(im.name, func(t *testing.T) { testSiLUMulExpSum(t, im.f, expSum.impls[i].f) })
	}
}

func testSiLUMulExpSum(t *testing.T, SiLUMul func(gate, up []float32), ExpSum func(y, x []float32, max float32) float64) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 100, 1024, 5632 + 7} {
		g := expInputs(rng, n)
		u := make([]float32, n)
		for i := range u {
			u[i] = float32(rng.NormFloat64())
		}
		a, b := append([]float32(nil), g...), append([]float32(nil), g...)
		SiLUMul(a, u)
		siLUMulGeneric(b, u)
		for i := range a {
			if !sameBits(a[i], b[i]) {
				t.Fatalf("SiLUMul n=%d [%d] x=%v: %v, reference %v", n, i, g[i], a[i], b[i])
			}
		}
		// Softmax inputs: finite scores and masked (−Inf) ones.
		x := make([]float32, n)
		mx := float32(math.Inf(-1))
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 8)
			if rng.IntN(5) == 0 {
				x[i] = float32(math.Inf(-1))
			}
			mx = max(mx, x[i])
		}
		ya, yb := make([]float32, n), make([]float32, n)
		sa, sb := ExpSum(ya, x, mx), expSumGeneric(yb, x, mx)
		if math.Float64bits(sa) != math.Float64bits(sb) && !(math.IsNaN(sa) && math.IsNaN(sb)) {
			t.Fatalf("ExpSum n=%d: sum %v, reference %v", n, sa, sb)
		}
		for i := range ya {
			if !sameBits(ya[i], yb[i]) {
				t.Fatalf("ExpSum n=%d [%d]: %v, reference %v", n, i, ya[i], yb[i])
			}
		}
	}
}
