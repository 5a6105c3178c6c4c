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

// TestSumSquares runs every registered SumSquares against the portable
// reference bit for bit: row counts around the eight-row blocks, row
// lengths around the eight-element steps, values over twelve orders of
// magnitude (where the order of the float64 additions shows in the last
// bits: the test first checks that a sum in another order differs), and
// rows holding a NaN or an infinity.
func TestSumSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	sensitive := false
	for _, dim := range []int{1, 7, 8, 9, 16, 63, 64, 100, 2048 + 3} {
		for _, rows := range []int{1, 7, 8, 9, 16, 17, 30} {
			x := make([]float32, rows*dim)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Pow(10, 6*(2*rng.Float64()-1)))
			}
			if rows > 9 {
				x[3*dim+dim/2] = float32(math.NaN())
				x[9*dim] = float32(math.Inf(-1))
			}
			want := make([]float64, rows)
			for r0 := 0; r0 < rows; r0 += 8 {
				ss := sumSquaresGeneric(x[r0*dim:min(rows, r0+8)*dim], dim)
				copy(want[r0:], ss[:min(8, rows-r0)])
			}
			for r := range rows { // the same squares summed from the back
				var s float64
				for i := dim - 1; i >= 0; i-- {
					v := x[r*dim+i]
					s += float64(v * v)
				}
				sensitive = sensitive || (s != want[r] && !math.IsNaN(s) && !math.IsInf(s, 0))
			}
			for _, im := range sumSq.impls {
				got := make([]float64, rows)
				for r0 := 0; r0 < rows; r0 += 8 {
					ss := im.f(x[r0*dim:min(rows, r0+8)*dim], dim)
					copy(got[r0:], ss[:min(8, rows-r0)])
					for _, v := range ss[min(8, rows-r0):] {
						if v != 0 {
							t.Fatalf("SumSquares %s dim=%d: a sum past the rows", im.name, dim)
						}
					}
				}
				for r := range got {
					if math.Float64bits(got[r]) != math.Float64bits(want[r]) && !(math.IsNaN(got[r]) && math.IsNaN(want[r])) {
						t.Fatalf("SumSquares %s dim=%d rows=%d: row %d %v, reference %v", im.name, dim, rows, r, got[r], want[r])
					}
				}
			}
		}
	}
	if !sensitive {
		t.Fatal("no row's sum depends on the order of its additions: the test cannot tell the orders apart")
	}
	for _, im := range sumSq.impls { // no rows: zeros, whatever x holds
		for _, dim := range []int{0, -1, -8, -9} {
			if ss := im.f(make([]float32, 64), dim); ss != [8]float64{} {
				t.Fatalf("SumSquares %s dim=%d: %v, want zeros", im.name, dim, ss)
			}
		}
	}
	x := make([]float32, 8*64)
	if testing.AllocsPerRun(10, func() { _ = SumSquares(x, 64) }) > 0 {
		t.Fatal("SumSquares allocates")
	}
}
