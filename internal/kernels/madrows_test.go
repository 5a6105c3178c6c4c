package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMadRows runs every registered MadRows against nj MadF32 calls a
// query at a time, with the MadF32 of the same name (the order reference:
// per element the same fused multiply-adds in row order): the same bits,
// for query counts around the 4-query block, rows 1..33 and head sizes
// with and without a 64-column tail, with strides wider than used.
func TestMadRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	mad := map[string]func(y, x []float32, v float32){}
	for _, im := range madF32Op.impls {
		mad[im.name] = im.f
	}
	for _, im := range madRowsOp.impls {
		ref, ok := mad[im.name]
		if !ok {
			t.Fatalf("MadRows %s has no MadF32 of its name", im.name)
		}
		for _, hd := range []int{1, 15, 16, 63, 64, 65, 80, 128, 130} {
			for _, nq := range []int{1, 3, 4, 5, 7, 8, 9} {
				for _, nj := range []int{1, 2, 17, 32, 33} {
					as, ws, vs := hd+3, nj+5, hd+7
					acc := make([]float32, nq*as)
					w := make([]float32, nq*ws)
					v := make([]float32, nj*vs)
					for i := range acc {
						acc[i] = float32(rng.NormFloat64())
					}
					for i := range w {
						w[i] = float32(rng.Float64())
						if rng.IntN(6) == 0 {
							w[i] = 0 // masked positions weigh zero
						}
					}
					for i := range v {
						v[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(10)-5)))
					}
					want := append([]float32(nil), acc...)
					for q := range nq {
						for j := range nj {
							ref(want[q*as:q*as+hd], v[j*vs:j*vs+hd], w[q*ws+j])
						}
					}
					got := append([]float32(nil), acc...)
					im.f(got, as, w, ws, v, vs, nq, nj, hd)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("MadRows %s hd=%d nq=%d nj=%d [%d] (query %d col %d): %g, reference %g", im.name, hd, nq, nj, i, i/as, i%as, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
