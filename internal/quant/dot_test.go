package quant_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/internal/testmodels"
)

// dequantAct expands quantized activations of a vec_dot type to floats.
func dequantAct(t tensor.DType, b []byte, n int) []float32 {
	y := make([]float32, n)
	switch t {
	case tensor.Q8_1:
		for i := 0; i < n/32; i++ {
			d := quant.F16ToF32(binary.LittleEndian.Uint16(b[36*i:]))
			for j := range 32 {
				y[32*i+j] = d * float32(int8(b[36*i+4+j]))
			}
		}
	case tensor.Q8_K:
		for i := 0; i < n/256; i++ {
			d := math.Float32frombits(binary.LittleEndian.Uint32(b[292*i:]))
			for j := range 256 {
				y[256*i+j] = d * float32(int8(b[292*i+4+j]))
			}
		}
	default:
		if err := quant.Dequantize(t, y, b); err != nil {
			panic(err)
		}
	}
	return y
}

// TestDotMatchesDequant: for every type, Dot(w, q(x)) equals the float dot
// of the dequantized weights and the dequantized activations (the integer
// sums are exact, so only float rounding separates them).
func TestDotMatchesDequant(t *testing.T) {
	for _, name := range []string{"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(testmodels.Synth(t, "-model", "tiny-test", "-type", name, "-seed", "1"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			typ, _ := tensor.ParseDType(name)
			ti, ok := f.Tensor("blk.0.ffn_down.weight") // rows of 512
			if !ok || ti.Type != typ {
				t.Fatalf("blk.0.ffn_down.weight is %v", ti.Type)
			}
			ops, _ := quant.For(typ)
			n := int(ti.Dims[0])
			rb, _ := tensor.RowBytes(typ, uint64(n))
			ab, _ := tensor.RowBytes(ops.ActType, uint64(n))
			data := f.TensorData(ti)
			rng := rand.New(rand.NewPCG(1, 2))
			x := make([]float32, n)
			act := make([]byte, ab)
			w := make([]float32, n)
			for row := range 8 {
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				ops.QuantizeAct(act, x)
				wb := data[row*int(rb) : (row+1)*int(rb)]
				ops.Dequant(w, wb)
				xa := dequantAct(ops.ActType, act, n)
				var want, scale float64
				for i := range w {
					want += float64(w[i]) * float64(xa[i])
					scale += math.Abs(float64(w[i]) * float64(xa[i]))
				}
				if ops.VecDot == tensor.Q8_1 {
					// ggml defines the min's term with s = f16(d·Σq) from the
					// activation block rather than Σ of the activations.
					for b := 0; b < n/32; b++ {
						var m float32
						if typ == tensor.Q4_1 {
							m = quant.F16ToF32(binary.LittleEndian.Uint16(wb[20*b+2:]))
						} else {
							m = quant.F16ToF32(binary.LittleEndian.Uint16(wb[24*b+2:]))
						}
						var sx float64
						for j := range 32 {
							sx += float64(xa[32*b+j])
						}
						sb := quant.F16ToF32(binary.LittleEndian.Uint16(act[36*b+2:]))
						want += float64(m) * (float64(sb) - sx)
					}
				}
				got := float64(ops.Dot(n, wb, act))
				if math.Abs(got-want) > 1e-5*scale+1e-6 {
					t.Fatalf("row %d: dot %v, dequantized %v", row, got, want)
				}
			}
		})
	}
}

func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := quant.F16ToF32(uint16(h))
		if f != f { // NaN
			continue
		}
		if back := quant.F32ToF16(f); back != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, back)
		}
	}
	// Ties round to even; overflow goes to inf; tiny values to zero.
	cases := []struct {
		f    float32
		want uint16
	}{{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {65520, 0x7c00}, {1e-9, 0}, {-2, 0xc000}}
	for _, c := range cases {
		if got := quant.F32ToF16(c.f); got != c.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
}
