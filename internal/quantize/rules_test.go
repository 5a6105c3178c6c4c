package quantize

import (
	"testing"

	"github.com/loom-inference/loom/internal/tensor"
)

// TestFTypeNames: general.file_type values name as llama.cpp names them,
// parse back to themselves, and Q2_K_S (which pull lists and inspect
// shows, though Loom cannot write it) has its name.
func TestFTypeNames(t *testing.T) {
	for _, c := range []struct {
		ft   FType
		name string
	}{{AllF32, "F32"}, {F16, "F16"}, {BF16, "BF16"}, {Q8_0, "Q8_0"}, {Q4_K_M, "Q4_K_M"}, {IQ4_NL, "IQ4_NL"}, {Q2_K_S, "Q2_K_S"}, {FType(99), "ftype(99)"}} {
		if got := c.ft.String(); got != c.name {
			t.Errorf("FType(%d) = %q, want %q", int(c.ft), got, c.name)
		}
	}
	for _, f := range ftypes {
		if got, err := ParseFType(f.ft.String()); err != nil || got != f.ft {
			t.Errorf("ParseFType(%q) = %v, %v", f.ft, got, err)
		}
	}
}

// TestMXFP4MoEPlan: MXFP4_MOE (llama.cpp 2026) gives tensors of several
// matrices MXFP4 and every other quantized tensor Q8_0, the output and
// token embeddings included, whatever the mixes' usual rules say (attn_v
// of an 8-expert model, ffn_down); rows that are not whole 32-element
// blocks fall back to F16.
func TestMXFP4MoEPlan(t *testing.T) {
	if ft, err := ParseFType("mxfp4_moe"); err != nil || ft != MXFP4_MOE || ft.String() != "MXFP4_MOE" || ft.Base() != tensor.MXFP4 {
		t.Fatalf("ParseFType(mxfp4_moe) = %v, %v", ft, err)
	}
	if ft, err := ParseFType("38"); err != nil || ft != MXFP4_MOE {
		t.Fatalf("ParseFType(38) = %v, %v", ft, err)
	}
	m := Model{Arch: "gpt-oss", NLayer: 2, NHead: 8, NHeadKV: 2, NExpert: 8, HasOutput: true}
	ts := []Tensor{
		{"token_embd.weight", tensor.F16, []uint64{256, 1000}},
		{"output.weight", tensor.F16, []uint64{256, 1000}},
		{"output_norm.weight", tensor.F32, []uint64{256}},
		{"blk.0.attn_v.weight", tensor.F16, []uint64{256, 128}},
		{"blk.0.attn_output.weight", tensor.BF16, []uint64{512, 256}},
		{"blk.0.ffn_gate_inp.weight", tensor.F32, []uint64{256, 8}},
		{"blk.0.ffn_down_exps.weight", tensor.F32, []uint64{256, 256, 8}},
		{"blk.0.ffn_up_exps.weight", tensor.MXFP4, []uint64{256, 256, 8}},
		{"blk.0.ffn_gate_exps.bias", tensor.F32, []uint64{256, 8}},
		{"blk.1.ffn_down_exps.weight", tensor.F16, []uint64{100, 256, 8}},
		{"blk.1.ffn_down.weight", tensor.F16, []uint64{100, 256}},
		{"blk.1.ffn_up.weight", tensor.F16, []uint64{256, 256, 1}}, // a trailing 1: one matrix
	}
	want := []struct {
		to       tensor.DType
		fallback bool
	}{
		{tensor.Q8_0, false}, {tensor.Q8_0, false}, {tensor.F32, false}, {tensor.Q8_0, false}, {tensor.Q8_0, false},
		{tensor.F32, false}, {tensor.MXFP4, false}, {tensor.MXFP4, false}, {tensor.F32, false},
		{tensor.F16, true}, {tensor.F16, true}, {tensor.Q8_0, false},
	}
	plan, err := Plan(m, ts, MXFP4_MOE)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range plan {
		if c.To != want[i].to || c.Fallback != want[i].fallback {
			t.Errorf("%s: %s (fallback %v), want %s (%v)", c.Name, c.To, c.Fallback, want[i].to, want[i].fallback)
		}
	}
}
