package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestVecHelpers runs every registered F32ToF16s against its portable
// reference for lengths with and without tails.
func TestVecHelpers(t *testing.T) {
	for _, im := range f32ToF16s.impls {
		t.Run(im.name, func(t *testing.T) { testF32ToF16s(t, im.f) })
	}
}

func testF32ToF16s(t *testing.T, F32ToF16s func(dst []uint16, src []float32)) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 31, 32, 33, 64, 100, 128, 257} {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
		}
		h1, h2 := make([]uint16, n), make([]uint16, n)
		F32ToF16s(h1, src)
		f32ToF16sGeneric(h2, src)
		for i := range h1 {
			if h1[i] != h2[i] {
				t.Fatalf("F32ToF16s n=%d [%d] of %g: %#x, reference %#x", n, i, src[i], h1[i], h2[i])
			}
		}
	}
}

// TestRoundF16s runs every registered RoundF16s against its portable
// reference on values across F16's range (subnormals, overflow to ∞,
// NaN), lengths with and without tails: the same float32 bits.
func TestRoundF16s(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, im := range roundF16s.impls {
		for _, n := range []int{0, 1, 7, 8, 9, 31, 64, 100, 257} {
			src := make([]float32, n)
			for i := range src {
				src[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(60)-35)))
			}
			if n > 3 {
				src[0], src[1], src[2] = float32(math.Inf(1)), float32(math.NaN()), 65520
			}
			got, want := append([]float32(nil), src...), append([]float32(nil), src...)
			im.f(got)
			roundF16sGeneric(want)
			for i := range got {
				g, w := got[i], want[i]
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					t.Fatalf("%s n=%d [%d] of %g: %g, reference %g", im.name, n, i, src[i], g, w)
				}
			}
		}
	}
}

// TestF16ToF32s converts every F16 bit pattern (and lengths with tails)
// with each registered implementation: the same float32 bits as the
// reference, NaNs as NaNs.
func TestF16ToF32s(t *testing.T) {
	src := make([]byte, 2*65536+6)
	for h := range 65536 {
		src[2*h], src[2*h+1] = byte(h), byte(h>>8)
	}
	want := make([]float32, 65536+3)
	f16ToF32sGeneric(want, src)
	for _, im := range f16ToF32s.impls {
		for _, n := range []int{0, 1, 7, 8, 9, 65536 + 3} {
			got := make([]float32, n)
			im.f(got, src)
			for i := range got {
				g, w := got[i], want[i]
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					t.Fatalf("%s n=%d: F16 %#04x → %#08x, reference %#08x", im.name, n, i, math.Float32bits(g), math.Float32bits(w))
				}
			}
		}
	}
}

// TestActQuantizers: the SIMD activation quantizers equal quant's: Q8_0
// blocks, and the float activations of F16 and BF16 weights (rounded,
// held as float32).
func TestActQuantizers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for typ, op := range actQuant {
		if len(op.impls) == 1 {
			continue // only quant's own quantizer
		}
		weights := map[tensor.DType]tensor.DType{tensor.Q8_0: tensor.Q4_0, tensor.Q8_K: tensor.Q4_K, tensor.F16: tensor.F16, tensor.BF16: tensor.BF16}[typ]
		if weights == 0 {
			t.Fatalf("%v: the test makes Q8_0, Q8_K, F16 and BF16 activations only", typ)
		}
		ops, _ := quant.For(weights)
		for _, im := range op.impls[1:] {
			testActQuantizer(t, rng, typ, ops.ActType, im.name, ops.QuantizeAct, im.f)
		}
	}
}

func testActQuantizer(t *testing.T, rng *rand.Rand, typ, act tensor.DType, name string, ref, q func(y []byte, x []float32)) {
	{
		ns := []int{32, 64, 4096}
		switch typ {
		case tensor.Q8_0:
		case tensor.Q8_K:
			ns = []int{256, 512, 4096} // rows of whole blocks, as K-quant rows are
		default:
			ns = append(ns, 4096+32+5) // a tail past the SIMD code's multiple of 16
		}
		for _, n := range ns {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(20)-10)))
			}
			for i := 32; i < 64 && i < n; i++ {
				x[i] = 0 // an all-zero block
			}
			x[n-1] = 127.5 / 127 * 3 // ties at the rounding boundary
			if typ == tensor.Q8_K && n >= 1024 {
				// Block 3 (past the special values below): the largest
				// magnitude twice, negative first (the first one sets the
				// scale's sign), and NaNs, which amax skips: in the first
				// vector, and in lane 7 of the last, the lane a
				// NaN-keeping maximum would carry through the reduction.
				b := 768
				x[b+3], x[b+7], x[b+200], x[b+247] = float32(math.NaN()), -1e3, 1e3, float32(math.NaN())
			}
			if typ != tensor.Q8_0 { // NaNs, infinities, subnormals, ties
				for i, v := range []uint32{0x7fc00001, 0xff800001, 0x7f800000, 1, 0x80007fff, 0x3f808000, 0x3f818000, 0x3f801000, 0x477ff000, 0x7f7fffff} {
					x[(i*37)%n] = math.Float32frombits(v)
				}
			}
			rb, _ := tensor.RowBytes(act, uint64(n))
			want := make([]byte, rb)
			got := make([]byte, len(want))
			ref(want, x)
			q(got, x)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%v/%s n=%d: byte %d = %#x, quant %#x", typ, name, n, i, got[i], want[i])
				}
			}
		}
	}
}

// TestScaleMaxRoundF16 runs every registered ScaleMax and ScaleRoundF16
// against the portable references: lengths 0..300 (every tail), masked
// (−∞) entries, values across F16's range: the same float32 bits and the
// same max.
func TestScaleMaxRoundF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	for n := range 301 {
		src := make([]float32, n)
		for i := range src {
			src[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(50)-30)))
			if rng.IntN(8) == 0 {
				src[i] = float32(math.Inf(-1))
			}
		}
		s := float32(0.125 + rng.Float64())
		for _, im := range scaleMax.impls {
			buf := append(append([]float32(nil), src...), 7e30) // a sentinel past the slice: not read into the max, not written
			got, want := buf[:n], append([]float32(nil), src...)
			gm, wm := im.f(got, s), scaleMaxGeneric(want, s)
			if buf[n] != 7e30 {
				t.Fatalf("ScaleMax %s n=%d: wrote past the slice", im.name, n)
			}
			if !same(gm, wm) && !(gm == 0 && wm == 0) {
				t.Fatalf("ScaleMax %s n=%d: max %g, reference %g", im.name, n, gm, wm)
			}
			for i := range got {
				if !same(got[i], want[i]) {
					t.Fatalf("ScaleMax %s n=%d [%d]: %g, reference %g", im.name, n, i, got[i], want[i])
				}
			}
		}
		for _, im := range scaleRF16.impls {
			// got is followed by a sentinel that no kernel may write.
			buf := append(append([]float32(nil), src...), 7)
			got, want := buf[:n], append([]float32(nil), src...)
			im.f(got, s)
			if buf[n] != 7 {
				t.Fatalf("ScaleRoundF16 %s n=%d: wrote past the slice", im.name, n)
			}
			scaleRoundF16Generic(want, s)
			for i := range got {
				if !same(got[i], want[i]) {
					t.Fatalf("ScaleRoundF16 %s n=%d [%d] of %g: %g, reference %g", im.name, n, i, src[i], got[i], want[i])
				}
			}
		}
	}
	if len(scaleMax.impls) < 2 {
		t.Logf("only the reference on this CPU")
	}
}

// TestDequantQ8_0 runs every registered Q8_0 row dequantizer against the
// reference on random blocks (every scale sign, subnormal and large F16
// scales, the whole int8 range): the same bits.
func TestDequantQ8_0(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, nb := range []int{1, 2, 3, 7, 64} {
		x := make([]byte, nb*34)
		for i := range x {
			x[i] = byte(rng.IntN(256))
		}
		for b := range nb { // finite scales (NaN/∞ F16 patterns are not stored by the quantizer)
			h := uint16(rng.IntN(0x7c00))
			if rng.IntN(2) == 0 {
				h |= 0x8000
			}
			x[34*b], x[34*b+1] = byte(h), byte(h>>8)
		}
		want := make([]float32, nb*32)
		dequantQ8_0Op.impls[0].f(want, x)
		for _, im := range dequantQ8_0Op.impls[1:] {
			got := make([]float32, nb*32)
			im.f(got, x)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s nb=%d [%d]: %g, reference %g", im.name, nb, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkActQuant: every Q8_0 and Q8_K activation quantizer on a
// 5632-wide row (an FFN down projection's input), bytes of float32 read.
func BenchmarkActQuant(b *testing.B) {
	const n = 5632
	rng := rand.New(rand.NewPCG(9, 10))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for _, typ := range []tensor.DType{tensor.Q8_0, tensor.Q8_K} {
		op := actQuant[typ]
		rb, _ := tensor.RowBytes(typ, n)
		y := make([]byte, rb)
		for _, im := range op.impls {
			b.Run(typ.String()+"/"+im.name, func(b *testing.B) {
				b.SetBytes(4 * n)
				for b.Loop() {
					im.f(y, x)
				}
			})
		}
	}
}
