package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRope runs every registered RopeNorm and RopeNeoX against the
// portable references bit for bit, and pins the fused multiply-add: one
// rotation whose unfused evaluation differs in the last bit.
func TestRope(t *testing.T) {
	for i := range ropeNorm.impls {
		t.Run(ropeNorm.impls[i].name, func(t *testing.T) { testRope(t, ropeNorm.impls[i].f, ropeNeoX.impls[i].f) })
	}
}

func testRope(t *testing.T, RopeNorm func(x, cs []float32), RopeNeoX func(x, c, s []float32)) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, n := range []int{2, 8, 14, 16, 32, 64, 80, 128} {
		x := make([]float32, n)
		cs := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 3)
		}
		for i := 0; i < n/2; i++ {
			a := rng.Float64() * 50
			cs[2*i], cs[2*i+1] = float32(math.Cos(a)), float32(math.Sin(a))
		}
		a, b := append([]float32(nil), x...), append([]float32(nil), x...)
		RopeNorm(a, cs)
		ropeNormGeneric(b, cs)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("RopeNorm n=%d [%d]: %v, reference %v", n, i, a[i], b[i])
			}
		}
		c, s := make([]float32, n/2), make([]float32, n/2)
		for i := range c {
			c[i], s[i] = cs[2*i], cs[2*i+1]
		}
		a, b = append([]float32(nil), x...), append([]float32(nil), x...)
		RopeNeoX(a, c, s)
		ropeNeoXGeneric(b, c, s)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("RopeNeoX n=%d [%d]: %v, reference %v", n, i, a[i], b[i])
			}
		}
	}
	// Find a rotation where fusing matters and check both kernels fuse.
	found := false
	for range 10000 {
		x0, x1 := float32(rng.NormFloat64()), float32(rng.NormFloat64())
		ang := rng.Float64() * 6
		c, s := float32(math.Cos(ang)), float32(math.Sin(ang))
		unfused := x0*c - x1*s
		if fused := FMA32(x0, c, -(x1 * s)); fused == unfused {
			continue
		}
		found = true
		// Eight values: the SIMD kernels take whole vectors.
		x := []float32{x0, x1, x0, x1, x0, x1, x0, x1}
		RopeNorm(x, []float32{c, s, c, s, c, s, c, s})
		if x[0] != FMA32(x0, c, -(x1*s)) || x[1] != FMA32(x0, s, x1*c) {
			t.Fatalf("RopeNorm does not fuse: %v", x)
		}
		y := []float32{x0, x0, x0, x0, x0, x0, x0, x0, x1, x1, x1, x1, x1, x1, x1, x1}
		cv := []float32{c, c, c, c, c, c, c, c}
		sv := []float32{s, s, s, s, s, s, s, s}
		RopeNeoX(y, cv, sv)
		if y[0] != FMA32(x0, c, -(x1*s)) || y[8] != FMA32(x0, s, x1*c) {
			t.Fatalf("RopeNeoX does not fuse: %v", y)
		}
		break
	}
	if !found {
		t.Fatal("no rotation where the fused multiply-add differs")
	}
}
