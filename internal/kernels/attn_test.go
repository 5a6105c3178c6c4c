package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
)

func randF16s(rng *rand.Rand, n int) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = quant.F32ToF16(float32(rng.NormFloat64()))
	}
	return v
}

func randRoundedF16(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = quant.RoundF16(float32(rng.NormFloat64() * scale))
	}
	return v
}

// TestAttnKernels runs the installed ScoresF16 and MixF16 against the
// portable references bit for bit, in both orders, for head sizes with and
// without a float64 tail and position counts with and without a partial
// 16-column block.
func TestAttnKernels(t *testing.T) {
	for i, im := range scoresF16.impls {
		t.Run(im.name, func(t *testing.T) { testAttnKernels(t, im.f, mixF16.impls[i].f) })
	}
}

func testAttnKernels(t *testing.T, ScoresF16 func(out, q []float32, kT []uint16, off []int32, o AttnOrder),
	MixF16 func(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder)) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
		for _, hd := range []int{8, 16, 48, 64, 80, 128} {
			if o == OrderGemm && hd%16 != 0 {
				continue
			}
			for _, nk := range []int{1, 5, 16, 17, 31, 32, 63, 64, 65, 100, 129, 200} {
				// Scores: transposed K with a wider stride than nk.
				stride := nk + 9
				kT := randF16s(rng, hd*stride)
				q := randRoundedF16(rng, hd, 1)
				a, b := make([]float32, nk), make([]float32, nk)
				koff := Strides(hd, stride)
				ScoresF16(a, q, kT, koff, o)
				scoresF16Generic(b, q, kT, koff, o)
				for j := range a {
					if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
						t.Fatalf("ScoresF16 order %d hd=%d nk=%d [%d]: %v, reference %v", o, hd, nk, j, a[j], b[j])
					}
				}
				// Mix: position-major V with 3 heads per row, the middle one
				// used, rows stored in shuffled order as a paged cache may.
				vstride := 3 * hd
				v := randF16s(rng, nk*vstride)
				p := randRoundedF16(rng, nk, 0.3)
				voff := Strides(nk, vstride)
				rng.Shuffle(len(voff), func(i, j int) { voff[i], voff[j] = voff[j], voff[i] })
				for _, nkv := range []int{(nk + 31) &^ 31, nk + 200} {
					oa, ob := make([]float32, hd), make([]float32, hd)
					MixF16(oa, p, v[hd:], voff, nkv, o)
					mixF16Generic(ob, p, v[hd:], voff, nkv, o)
					for d := range oa {
						if math.Float32bits(oa[d]) != math.Float32bits(ob[d]) {
							t.Fatalf("MixF16 order %d hd=%d nk=%d nkv=%d [%d]: %v, reference %v", o, hd, nk, nkv, d, oa[d], ob[d])
						}
					}
				}
			}
		}
	}
}

// TestAttnOrders pins the two summation orders on sums whose float32
// results depend on the order: 1 + s + s with s = 2⁻²⁴ is 1 when s meets 1
// alone (each addition rounds the half-ulp tie to even) and 1 + 2⁻²³ when
// the two s are added first or in float64.
func TestAttnOrders(t *testing.T) {
	s := quant.F32ToF16(float32(math.Ldexp(1, -24)))
	one := float32(1)
	up := float32(1 + math.Ldexp(1, -23))
	for _, c := range []struct {
		hd     int
		small  []int // elements holding s (element 0 holds 1)
		o      AttnOrder
		want   float32
		reason string
	}{
		{64, []int{16, 48}, OrderGemm, one, "16 lanes: 16 and 48 join lane 0 one at a time"},
		{64, []int{16, 48}, OrderVecDot, up, "64 lanes: 16 and 48 meet at the 32-fold, then join 1"},
		{64, []int{1, 17}, OrderGemm, up, "16 lanes: 1 and 17 share lane 1"},
		{48, []int{16, 32}, OrderGemm, one, "16 lanes: 16 and 32 join lane 0 one at a time"},
		{48, []int{16, 32}, OrderVecDot, up, "no 64-element vector: a float64 sum"},
	} {
		q := make([]float32, c.hd)
		kT := make([]uint16, c.hd)
		for e := range q {
			q[e] = 1
		}
		kT[0] = quant.F32ToF16(1)
		for _, e := range c.small {
			kT[e] = s
		}
		out := make([]float32, 1)
		ScoresF16(out, q, kT, Strides(c.hd, 1), c.o)
		if out[0] != c.want {
			t.Errorf("hd %d, s at %v, order %d: %v, want %v (%s)", c.hd, c.small, c.o, out[0], c.want, c.reason)
		}
		// The same sums as attention-weighted values (p·V over positions).
		MixF16(out, q, kT, Strides(c.hd, 1), c.hd, c.o)
		if out[0] != c.want {
			t.Errorf("MixF16 hd %d, s at %v, order %d: %v, want %v (%s)", c.hd, c.small, c.o, out[0], c.want, c.reason)
		}
	}
	if OrderFor(1, 64) != OrderVecDot || OrderFor(2, 64) != OrderGemm || OrderFor(2, 8) != OrderVecDot {
		t.Error("OrderFor: tinyBLAS takes n ≥ 2 and k a multiple of 16")
	}
}
