package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/tensor"
)

// bestIndexBisect is ggml's best_index_int8 as written: bisection.
func bestIndexBisect(val *[16]int8, x float32) int {
	n := len(val)
	if x <= float32(val[0]) {
		return 0
	}
	if x >= float32(val[n-1]) {
		return n - 1
	}
	ml, mu := 0, n-1
	for mu-ml > 1 {
		mav := (ml + mu) / 2
		if x < float32(val[mav]) {
			mu = mav
		} else {
			ml = mav
		}
	}
	if float32(x-float32(val[mu-1])) < float32(float32(val[mu])-x) {
		return mu - 1
	}
	return mu
}

// TestBestIndex: the table lookup picks what ggml's bisection picks, at
// every integer, at the midpoints and their float neighbours, and at random.
func TestBestIndex(t *testing.T) {
	v := &kvaluesIQ4NL
	var xs []float32
	for i := -140; i <= 130; i++ {
		f := float32(i)
		xs = append(xs, f, math.Nextafter32(f, -1000), math.Nextafter32(f, 1000), f+0.5,
			math.Nextafter32(f+0.5, -1000), math.Nextafter32(f+0.5, 1000))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		xs = append(xs, float32(r.NormFloat64()*60))
	}
	xs = append(xs, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)))
	for _, x := range xs {
		if a, b := bestIndex(v, x), bestIndexBisect(v, x); a != b {
			t.Fatalf("x=%v: %d, ggml %d", x, a, b)
		}
	}
}

// TestAbsMax: the branch-free scan finds ggml's element (the first of
// the largest magnitude; +0 for an all-zero group; NaNs skipped).
func TestAbsMax(t *testing.T) {
	nan := float32(math.NaN())
	negz := float32(math.Copysign(0, -1))
	cases := [][]float32{
		{0, 0, 0}, {negz, negz}, {negz, 0, 1e-30}, {1, -1}, {-1, 1}, {-2, 2, -2}, {3, nan, -4}, {nan, nan},
		{1e-45, -1e-45}, {float32(math.Inf(-1)), 5}, {0.5, -0.75, 0.75},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		c := make([]float32, 32)
		for i := range c {
			c[i] = float32(r.IntN(9) - 4)
		}
		cases = append(cases, c)
	}
	for _, c := range cases {
		var wm, wa float32 // ggml's scan
		for _, v := range c {
			if a := absf(v); wa < a {
				wa, wm = a, v
			}
		}
		m, a := absMax(c)
		if math.Float32bits(m) != math.Float32bits(wm) || math.Float32bits(a) != math.Float32bits(wa) {
			t.Fatalf("%v: (%v, %v), ggml (%v, %v)", c, m, a, wm, wa)
		}
	}
}

// TestDequantF16: the bit-arithmetic conversion equals the table on
// every half.
func TestDequantF16(t *testing.T) {
	x := make([]byte, 2<<16)
	for i := range 1 << 16 {
		x[2*i], x[2*i+1] = byte(i), byte(i>>8)
	}
	y := make([]float32, 1<<16)
	dequantF16(y, x)
	for i, v := range y {
		if w := f16Table[i]; math.Float32bits(v) != math.Float32bits(w) {
			t.Fatalf("%#04x: %v, table %v", i, v, w)
		}
	}
}

func BenchmarkQuantize(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, 1<<20)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 0.02)
	}
	for _, typ := range []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.IQ4_NL, tensor.MXFP4, tensor.Q3_K, tensor.Q4_K, tensor.Q6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			n, _ := tensor.RowBytes(typ, uint64(len(x)))
			y := make([]byte, n)
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				if err := Quantize(typ, y, x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestRoundf: half away from zero, as C's roundf, around every half and
// on random values.
func TestRoundf(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	check := func(f float32) {
		if got, want := roundf(f), int32(math.Round(float64(f))); got != want {
			t.Fatalf("roundf(%v) = %d, want %d", f, got, want)
		}
	}
	for i := -300; i <= 300; i++ {
		h := float32(i) / 2
		check(h)
		check(math.Nextafter32(h, -1000))
		check(math.Nextafter32(h, 1000))
	}
	for range 1_000_000 {
		check(float32(r.NormFloat64() * 64))
	}
}

// TestRoundEven: the float rounding of the hot fits equals ggml's
// nearest_int (nearestInt) around every half, near ±2^22 and on random
// values, and clampf is MAX(lo, MIN(hi, ·)).
func TestRoundEven(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	check := func(f float32) {
		if got, want := roundEven(f), float32(nearestInt(f)); got != want {
			t.Fatalf("roundEven(%v) = %v, nearest_int %v", f, got, want)
		}
	}
	for i := -300; i <= 300; i++ {
		h := float32(i) / 2
		check(h)
		check(math.Nextafter32(h, -1000))
		check(math.Nextafter32(h, 1000))
	}
	for _, f := range []float32{1<<22 - 1, -(1 << 22), 1<<21 + 0.5, -(1<<21 + 0.5), 0, float32(math.Copysign(0, -1))} { // nearest_int holds below 2^22
		check(f)
	}
	for range 1_000_000 {
		check(float32(r.NormFloat64() * 64))
	}
	for _, c := range [][4]float32{{-5, -4, 3, -4}, {4, -4, 3, 3}, {1, -4, 3, 1}, {-4, -4, 3, -4}} {
		if got := clampf(c[0], c[1], c[2]); got != c[3] {
			t.Fatalf("clampf(%v, %v, %v) = %v, want %v", c[0], c[1], c[2], got, c[3])
		}
	}
}

// TestMinMax: the branch-free minMax equals ggml's scan bit for bit (signs
// of zero included) on random blocks, blocks mixing ±0, all-equal blocks,
// infinities and NaNs.
func TestMinMax(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	negz := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	blocks := [][]float32{
		{0, negz, 1}, {negz, 0, 1}, {negz, 0, -1}, {0, negz}, {negz, 0}, {negz}, {0},
		{3, 3, 3}, {inf, -inf, 1}, {inf, inf}, {-inf}, {nan, 1, -2}, {1, nan, negz, 0}, {nan, nan},
	}
	for range 20000 {
		b := make([]float32, 32)
		for i := range b {
			switch r.IntN(8) {
			case 0:
				b[i] = 0
			case 1:
				b[i] = negz
			default:
				b[i] = float32(r.NormFloat64())
			}
		}
		blocks = append(blocks, b)
	}
	for _, b := range blocks {
		lo, hi := minMax(b)
		wlo, whi := minMaxScan(b)
		if math.Float32bits(lo) != math.Float32bits(wlo) || math.Float32bits(hi) != math.Float32bits(whi) {
			t.Fatalf("minMax(%v) = %v, %v; the scan gives %v, %v", b, lo, hi, wlo, whi)
		}
	}
}
