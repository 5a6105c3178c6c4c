package kernels

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// fmaVecCase draws one element's operands: ordinary values, subnormals,
// huge and tiny exponents (overflow, underflow to subnormal), infinities,
// exact cancellations, and sums that cancel the product to its rounding
// error (where fused and unfused rounding differ).
func fmaVecCase(rng *rand.Rand) (x, w, y float32) {
	any32 := func() float32 { // any finite or infinite float32, NaN excluded
		for {
			v := math.Float32frombits(rng.Uint32())
			if !math.IsNaN(float64(v)) {
				return v
			}
		}
	}
	sub := func() float32 { // a subnormal
		v := math.Float32frombits(rng.Uint32N(1<<23-1) + 1)
		if rng.IntN(2) == 0 {
			v = -v
		}
		return v
	}
	norm := func() float32 { return float32(rng.NormFloat64()) }
	exp := func(lo, hi int) float32 { // a normal value scaled by 2^[lo, hi)
		return float32(math.Ldexp(rng.NormFloat64(), lo+rng.IntN(hi-lo)))
	}
	switch rng.IntN(10) {
	case 0:
		return norm(), norm(), norm()
	case 1:
		return sub(), norm(), sub()
	case 2:
		return exp(-75, -60), exp(-75, -60), sub() // product below float32's range
	case 3:
		return exp(60, 70), exp(60, 70), exp(100, 128) // near overflow
	case 4:
		return any32(), any32(), any32()
	case 5: // y cancels x·w to its rounding error: fused ≠ unfused
		x, w = norm(), norm()
		return x, w, -(x * w)
	case 6: // y within a few ulps of −x·w
		x, w = exp(-130, -100), norm()
		p := -(x * w)
		return x, w, math.Float32frombits(math.Float32bits(p) + uint32(rng.IntN(5)) - 2)
	case 7: // ties of the unfused sum: y of a much smaller exponent
		x, w = norm(), norm()
		return x, w, exp(-30, -20)
	case 8:
		return sub(), sub(), sub()
	default:
		return exp(-20, 20), exp(-20, 20), exp(-40, 40)
	}
}

func sameF32(a, b float32) bool {
	if math.IsNaN(float64(a)) || math.IsNaN(float64(b)) {
		return math.IsNaN(float64(a)) && math.IsNaN(float64(b))
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// TestFMAVec: every implementation equals the generic (FMA32 per element)
// bit for bit on every length 0..300, tails included, and writes nothing
// past len(y).
func TestFMAVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const guard = 40
	differ := 0
	for n := 0; n <= 300; n++ {
		x, w, y0 := make([]float32, n+guard), make([]float32, n+guard), make([]float32, n+guard)
		for j := range y0 {
			x[j], w[j], y0[j] = fmaVecCase(rng)
		}
		for j := range n {
			if !sameF32(x[j]*w[j]+y0[j], FMA32(x[j], w[j], y0[j])) {
				differ++
			}
		}
		want := append([]float32(nil), y0...)
		fmaVecGeneric(want[:n], x, w)
		for _, im := range fmaVecOp.impls {
			got := append([]float32(nil), y0...)
			im.f(got[:n], x[:n], w[:n])
			for j := range got {
				if !sameF32(got[j], want[j]) {
					t.Fatalf("%s n=%d: y[%d] = fma(%g, %g, %g) = %g (%#08x), generic %g (%#08x)", im.name, n, j,
						x[j], w[j], y0[j], got[j], math.Float32bits(got[j]), want[j], math.Float32bits(want[j]))
				}
			}
		}
	}
	t.Logf("%d elements where fused and unfused rounding differ", differ)
	for _, im := range fmaVecOp.impls {
		t.Logf("checked %s", im.name)
	}
	if differ < 100 {
		t.Fatalf("only %d elements where fused and unfused rounding differ", differ)
	}
}

// TestFMAVecFMA32: the generic's FMA32 is x·w + y rounded once to
// float32 (nearest even, subnormals included), checked against exact
// arithmetic.
func TestFMAVecFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	exact := func(x, w, y float32) float32 {
		if math.IsInf(float64(x), 0) || math.IsInf(float64(w), 0) || math.IsInf(float64(y), 0) {
			return float32(float64(x)*float64(w) + float64(y)) // IEEE's special cases
		}
		p := new(big.Float).SetPrec(1000).SetFloat64(float64(x))
		p.Mul(p, new(big.Float).SetFloat64(float64(w)))
		p.Add(p, new(big.Float).SetFloat64(float64(y)))
		f, _ := p.Float32()
		if f == 0 && math.Signbit(float64(f)) != math.Signbit(float64(float32(float64(x)*float64(w)+float64(y)))) {
			// big.Float has no signed zero of an exact cancellation: IEEE's
			// rule (+0, or −0 when both terms are −0) is float64's.
			f = float32(float64(x)*float64(w) + float64(y))
		}
		return f
	}
	for range 100000 {
		x, w, y := fmaVecCase(rng)
		if got, want := FMA32(x, w, y), exact(x, w, y); !sameF32(got, want) {
			t.Fatalf("FMA32(%g, %g, %g) = %g (%#08x), exact %g (%#08x)", x, w, y,
				got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// BenchmarkFMAVec: one token of a convolution's taps, 6144 channels × 4
// taps (a Qwen3.5 delta net's), as the decoder's convRun computes it: per
// tap one FMAVec over the channels (weights tap-major), and for comparison
// the per-channel loop of FMA32 calls it replaced (weights channel-major).
func BenchmarkFMAVec(b *testing.B) {
	const ch, taps = 6144, 4
	rng := rand.New(rand.NewPCG(1, 2))
	in, w := randF32s(rng, taps*ch, 1), randF32s(rng, taps*ch, 0.5) // in [taps][ch], w [taps][ch]
	wc := make([]float32, taps*ch)                                  // w as [ch][taps]
	for c := range ch {
		for i := range taps {
			wc[c*taps+i] = w[i*ch+c]
		}
	}
	out := make([]float32, ch)
	b.Run("channel-major-FMA32", func(b *testing.B) {
		b.SetBytes(int64(taps * ch * 4))
		for b.Loop() {
			for c := range ch {
				var sum float32
				for i := range taps {
					sum = FMA32(in[i*ch+c], wc[c*taps+i], sum)
				}
				out[c] = sum
			}
		}
	})
	for _, im := range fmaVecOp.impls {
		b.Run(im.name, func(b *testing.B) {
			restore, err := fmaVecOp.use(im.name)
			if err != nil {
				b.Fatal(err)
			}
			defer restore()
			b.SetBytes(int64(taps * ch * 4))
			for b.Loop() {
				clear(out)
				for i := range taps {
					FMAVec(out, in[i*ch:(i+1)*ch], w[i*ch:(i+1)*ch])
				}
			}
		})
	}
}
