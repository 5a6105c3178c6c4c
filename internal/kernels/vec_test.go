package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestVecHelpers runs the installed F32ToF16s against its portable
// reference for lengths with and without tails.
func TestVecHelpers(t *testing.T) {
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
