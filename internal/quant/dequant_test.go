package quant_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestDequantBitExact checks every supported type against the F32 file that
// synthgguf writes with ggml's exact dequantized values of the same seed.
func TestDequantBitExact(t *testing.T) {
	types := []string{"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL",
		"Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}
	for _, typ := range types {
		t.Run(typ, func(t *testing.T) {
			qf, err := gguf.Open(testmodels.Synth(t, "-model", "tiny-test", "-type", typ, "-seed", "1"))
			if err != nil {
				t.Fatal(err)
			}
			defer qf.Close()
			ff, err := gguf.Open(testmodels.Synth(t, "-model", "tiny-test", "-type", "F32", "-dequant-of", typ, "-seed", "1"))
			if err != nil {
				t.Fatal(err)
			}
			defer ff.Close()
			want, _ := tensor.ParseDType(typ)
			seen := false
			for i := range qf.Tensors {
				qt := &qf.Tensors[i]
				ft, ok := ff.Tensor(qt.Name)
				if !ok {
					t.Fatalf("%s missing from the F32 file", qt.Name)
				}
				if qt.Type == want {
					seen = true
				}
				n := int(qt.Elements())
				got := make([]float32, n)
				ref := make([]float32, n)
				if err := quant.Dequantize(qt.Type, got, qf.TensorData(qt)); err != nil {
					t.Fatal(err)
				}
				if err := quant.Dequantize(tensor.F32, ref, ff.TensorData(ft)); err != nil {
					t.Fatal(err)
				}
				for j := range got {
					if math.Float32bits(got[j]) != math.Float32bits(ref[j]) {
						t.Fatalf("%s (%s) element %d: got %g, ggml %g", qt.Name, qt.Type, j, got[j], ref[j])
					}
				}
			}
			if !seen {
				t.Fatalf("no tensor of type %s in the file", typ)
			}
		})
	}
}

// TestDequantMXFP4Experts: gptoss-mini's expert tensors (MXFP4 in every
// file type, packed as ggml's quantize_row_mxfp4_ref does) dequantize to
// the values synthgguf's F32 file stores for them, and to an independent
// decode: code (E2M1 ×2, by its bits) · 2^(e−128) through math.Ldexp.
func TestDequantMXFP4Experts(t *testing.T) {
	qf, err := gguf.Open(testmodels.Synth(t, "-model", "gptoss-mini", "-type", "F16", "-seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer qf.Close()
	ff, err := gguf.Open(testmodels.Synth(t, "-model", "gptoss-mini", "-type", "F32", "-dequant-of", "F16", "-seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer ff.Close()
	// e2m1 is an E2M1 code's value ×2 from its bits: sign, 2-bit exponent,
	// 1-bit mantissa (exponent 0: subnormal 0 or 0.5).
	e2m1 := func(c byte) float64 {
		e, m := int(c>>1&3), float64(c&1)
		v := m / 2
		if e > 0 {
			v = math.Ldexp(1+m/2, e-1)
		}
		if c&8 != 0 {
			v = -v
		}
		return 2 * v
	}
	n := 0
	for i := range qf.Tensors {
		qt := &qf.Tensors[i]
		if qt.Type != tensor.MXFP4 {
			continue
		}
		n++
		ft, ok := ff.Tensor(qt.Name)
		if !ok || ft.Type != tensor.F32 {
			t.Fatalf("%s: missing from the F32 file", qt.Name)
		}
		data := qf.TensorData(qt)
		got := make([]float32, qt.Elements())
		ref := make([]float32, len(got))
		if err := quant.Dequantize(qt.Type, got, data); err != nil {
			t.Fatal(err)
		}
		if err := quant.Dequantize(tensor.F32, ref, ff.TensorData(ft)); err != nil {
			t.Fatal(err)
		}
		for j := range got {
			b := data[17*(j/32):]
			c := b[1+j%32%16] >> (4 * (j % 32 / 16)) & 0xf
			want := float32(e2m1(c) * math.Ldexp(1, int(b[0])-128))
			if math.Float32bits(got[j]) != math.Float32bits(want) || math.Float32bits(got[j]) != math.Float32bits(ref[j]) {
				t.Fatalf("%s element %d: %g, decoded %g, synthgguf %g", qt.Name, j, got[j], want, ref[j])
			}
		}
	}
	if n != 12 {
		t.Fatalf("%d MXFP4 tensors, want 12 (3 per layer)", n)
	}
	// The reference dot product against Q8_0 activations is the float dot
	// of the dequantized rows (exact integer sums: only rounding differs).
	ti, _ := qf.Tensor("blk.1.ffn_down_exps.weight")
	ops, _ := quant.For(tensor.MXFP4)
	cols := int(ti.Dims[0])
	rb, _ := tensor.RowBytes(tensor.MXFP4, uint64(cols))
	ab, _ := tensor.RowBytes(ops.ActType, uint64(cols))
	rng := rand.New(rand.NewPCG(3, 9))
	x, w, act := make([]float32, cols), make([]float32, cols), make([]byte, ab)
	for row := range 64 {
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		ops.QuantizeAct(act, x)
		wb := qf.TensorData(ti)[row*int(rb) : (row+1)*int(rb)]
		ops.Dequant(w, wb)
		xa := dequantAct(ops.ActType, act, cols)
		var want, scale float64
		for i := range w {
			want += float64(w[i]) * float64(xa[i])
			scale += math.Abs(float64(w[i]) * float64(xa[i]))
		}
		if got := float64(ops.Dot(cols, wb, act)); math.Abs(got-want) > 1e-5*scale+1e-6 {
			t.Fatalf("row %d: dot %v, dequantized %v", row, got, want)
		}
	}
}
