package quant_test

import (
	"math"
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
