package hfmodel

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestPermuteRows: one head of 4 rows: rotate-half pairs (0,2), (1,3)
// become interleaved pairs (0,1), (2,3).
func TestPermuteRows(t *testing.T) {
	tt := model.Tensor{Name: "q", Dims: []uint64{1, 8}, Data: []byte{0, 1, 2, 3, 4, 5, 6, 7}}
	if err := permuteRows(&tt, 2, 1); err != nil {
		t.Fatal(err)
	}
	if got := string(tt.Data); got != string([]byte{0, 2, 1, 3, 4, 6, 5, 7}) {
		t.Fatalf("%v", tt.Data)
	}
	if err := permuteRows(&model.Tensor{Name: "k", Dims: []uint64{1, 6}, Data: make([]byte, 6)}, 2, 1); err == nil {
		t.Fatal("6 rows in 2 heads of pairs accepted")
	}
}

func TestMapNames(t *testing.T) {
	cases := []struct {
		table    map[string]string
		hf, want string
		expert   int
	}{
		{llamaTable, "model.layers.3.self_attn.q_proj.weight", "blk.3.attn_q.weight", -1},
		{llamaTable, "model.embed_tokens.weight", "token_embd.weight", -1},
		{llamaTable, "model.layers.0.block_sparse_moe.experts.7.w2.weight", "blk.0.ffn_down_exps.weight", 7},
		{llamaTable, "model.layers.1.mlp.experts.12.up_proj.weight", "blk.1.ffn_up_exps.weight", 12},
		{llamaTable, "model.layers.0.self_attn.rotary_emb.inv_freq", "", -1},
		{gemma2Table, "model.layers.2.pre_feedforward_layernorm.weight", "blk.2.ffn_norm.weight", -1},
		{gemma2Table, "model.layers.2.post_attention_layernorm.weight", "blk.2.post_attention_norm.weight", -1},
		{gpt2Table, "transformer.h.11.attn.c_attn.bias", "blk.11.attn_qkv.bias", -1},
		{gpt2Table, "h.0.mlp.c_proj.weight", "blk.0.ffn_down.weight", -1},
		{gpt2Table, "wpe.weight", "position_embd.weight", -1},
	}
	for _, c := range cases {
		m, err := mapName(c.table, c.hf)
		if err != nil || m.name != c.want || m.expert != c.expert {
			t.Errorf("%s: %+v %v, want %s (expert %d)", c.hf, m, err, c.want, c.expert)
		}
	}
	if _, err := mapName(llamaTable, "model.layers.0.mystery.weight"); err == nil || !strings.Contains(err.Error(), "mystery") {
		t.Errorf("unknown tensor: %v", err)
	}
}

// TestOpenErrors: a folder Loom cannot run is a clear error naming what is
// wrong, never a panic.
func TestOpenErrors(t *testing.T) {
	cases := []struct {
		config string
		want   string
	}{
		{`{`, "config.json"},
		{`{"architectures": []}`, "names no architectures"},
		{`{"architectures": ["T5ForConditionalGeneration"]}`, `"T5ForConditionalGeneration" is not supported`},
		{`{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}`, "model.safetensors"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "config.json"), []byte(c.config), 0o644)
		if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %s: error %v, want %q", c.config, err, c.want)
		}
	}
	if IsFolder(t.TempDir()) {
		t.Error("a folder without config.json is a model folder")
	}
}

// TestLlama3RopeFactors: rope_scaling of type llama3 gives the
// rope_freqs.weight of a Llama 3.2 1B GGUF (synthgguf computes it as
// llama.cpp's converter does), to the bit.
func TestLlama3RopeFactors(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the 1B-class synthetic model: run without -short")
	}
	f, err := gguf.Open(testmodels.Synth(t, "-model", "llama-3.2-1b", "-type", "F16", "-seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, ok := f.Tensor("rope_freqs.weight")
	if !ok {
		t.Fatal("no rope_freqs.weight")
	}
	want := make([]float32, ti.Dims[0])
	if err := quant.Dequantize(ti.Type, want, f.TensorData(ti)); err != nil {
		t.Fatal(err)
	}
	h := hparams{"hidden_size": 2048.0, "num_attention_heads": 32.0, "head_dim": 64.0, "rope_theta": 500000.0,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192.0}}
	got, err := llama3RopeFactors(h)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("factors\n %v\nwant\n %v", got, want)
	}
}
