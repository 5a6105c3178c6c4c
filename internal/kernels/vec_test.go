package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestVecHelpers runs the installed DotsF16T, AxpyF16 and F32ToF16s against
// their portable references for lengths with and without tails.
func TestVecHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 7, 8, 31, 32, 33, 64, 100, 128, 257} {
		q := make([]float32, n)
		k := make([]uint16, n)
		for i := range q {
			q[i] = quant.RoundF16(float32(rng.NormFloat64()))
			k[i] = quant.F32ToF16(float32(rng.NormFloat64()))
		}
		// DotsF16T: n positions of a transposed K with 3 extra columns.
		for _, hd := range []int{1, 8, 64} {
			stride := n + 3
			kT := make([]uint16, hd*stride)
			for i := range kT {
				kT[i] = quant.F32ToF16(float32(rng.NormFloat64()))
			}
			qq := q
			if len(qq) < hd {
				qq = make([]float32, hd)
				for i := range qq {
					qq[i] = quant.RoundF16(float32(rng.NormFloat64()))
				}
			}
			qq = qq[:hd]
			a, b := make([]float32, n), make([]float32, n)
			DotsF16T(a, qq, kT, stride)
			dotsF16TGeneric(b, qq, kT, stride)
			for j := range a {
				if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
					t.Fatalf("DotsF16T n=%d hd=%d [%d]: %g, reference %g", n, hd, j, a[j], b[j])
				}
			}
		}
		o1 := make([]float32, n)
		for i := range o1 {
			o1[i] = float32(rng.NormFloat64())
		}
		o2 := append([]float32(nil), o1...)
		AxpyF16(o1, 0.37, k)
		axpyF16Generic(o2, 0.37, k)
		for i := range o1 {
			if math.Float32bits(o1[i]) != math.Float32bits(o2[i]) {
				t.Fatalf("AxpyF16 n=%d [%d]: %g, reference %g", n, i, o1[i], o2[i])
			}
		}
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

// TestActQuantizers: the SIMD activation quantizers equal quant's.
func TestActQuantizers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for typ, q := range actQuantizers {
		ops, _ := quant.For(tensor.Q4_0)
		if ops.ActType != typ {
			t.Fatalf("test assumes Q8_0 activations")
		}
		for _, n := range []int{32, 64, 4096} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(20)-10)))
			}
			for i := 32; i < 64 && i < n; i++ {
				x[i] = 0 // an all-zero block
			}
			x[n-1] = 127.5 / 127 * 3 // ties at the rounding boundary
			want := make([]byte, n/32*34)
			got := make([]byte, len(want))
			ops.QuantizeAct(want, x)
			q(got, x)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%v n=%d: byte %d = %#x, quant %#x", typ, n, i, got[i], want[i])
				}
			}
		}
	}
}
