package hfmodel

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
	"github.com/loom-inference/loom/safetensors"
)

// Hostile config.json values (a billion layers with weights for two,
// widths past any model, zero heads, fractions where counts belong, a
// vocab_size of millions over a 16-row embedding) are refused with an
// error naming config.json's key, before anything sized by them is
// allocated: Open, then loading the model as the engine does.

const maxLoadAlloc = 64 << 20

// tinyFolder writes a 2-layer Llama folder (hidden 8, 2 heads over 1 KV
// head, FFN 16, 16 tokens, F32) with config overridden by over (a nil
// value deletes the key) and extra tokenizer.json vocabulary.
func tinyFolder(t *testing.T, over map[string]any, extraTokens map[string]int) string {
	t.Helper()
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "hidden_size": 8, "num_hidden_layers": 2, "intermediate_size": 16,
		"num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 64, "vocab_size": 16,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0,
	}
	for k, v := range over {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	seed := 0
	var ts []safetensors.Tensor
	add := func(name string, shape ...int64) {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		b := make([]byte, 4*n)
		for i := range n {
			seed++
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(math.Sin(float64(seed)))*0.5))
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: "F32", Shape: shape, Data: b})
	}
	add("model.embed_tokens.weight", 16, 8)
	for l := range 2 {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(p+"input_layernorm.weight", 8)
		add(p+"self_attn.q_proj.weight", 8, 8)
		add(p+"self_attn.k_proj.weight", 4, 8)
		add(p+"self_attn.v_proj.weight", 4, 8)
		add(p+"self_attn.o_proj.weight", 8, 8)
		add(p+"post_attention_layernorm.weight", 8)
		add(p+"mlp.gate_proj.weight", 16, 8)
		add(p+"mlp.up_proj.weight", 16, 8)
		add(p+"mlp.down_proj.weight", 8, 16)
	}
	add("model.norm.weight", 8)
	add("lm_head.weight", 16, 8)
	vocab := map[string]int{}
	for i := range 16 {
		vocab[string(rune('a'+i))] = i
	}
	for s, id := range extraTokens {
		vocab[s] = id
	}
	tok := map[string]any{"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel"}}
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"config.json": cfg, "tokenizer.json": tok} {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), j, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openAndLoad opens dir and loads its model as the engine does.
func openAndLoad(dir string) error {
	fo, err := Open(dir)
	if err != nil {
		return err
	}
	defer fo.Close()
	meta, err := fo.MetaFile()
	if err != nil {
		return err
	}
	_, err = model.LoadGGUFFrom(meta, fo)
	return err
}

func TestHostileConfig(t *testing.T) {
	llama3 := func(extra map[string]any) map[string]any {
		rs := map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
		for k, v := range extra {
			rs[k] = v
		}
		return rs
	}
	cases := []struct {
		name   string
		over   map[string]any
		tokens map[string]int
		want   string
	}{
		{"a billion layers", map[string]any{"num_hidden_layers": 1e9}, nil,
			"config.json: num_hidden_layers = 1000000000 but the weights have tensors for 2 layers (0 … 1)"},
		{"one layer too many", map[string]any{"num_hidden_layers": 3}, nil, "num_hidden_layers = 3 but the weights have tensors for 2 layers"},
		{"GPT-2's n_layer", map[string]any{"architectures": []string{"GPT2LMHeadModel"}, "num_hidden_layers": nil, "n_layer": 1 << 20}, nil,
			"config.json: n_layer = 1048576 but the weights have tensors for 2 layers (0 … 1)"},
		{"fractional layers", map[string]any{"num_hidden_layers": 1.5}, nil, "num_hidden_layers = 1.5 is not a count"},
		{"negative layers", map[string]any{"num_hidden_layers": -2}, nil, "num_hidden_layers = -2 is not a count"},
		{"zero layers", map[string]any{"num_hidden_layers": 0}, nil, "num_hidden_layers = 0 (must be positive)"},
		{"layers as a string", map[string]any{"num_hidden_layers": "2"}, nil, "num_hidden_layers = 2 is not a number"},
		{"huge hidden size", map[string]any{"hidden_size": 1e12}, nil, "hidden_size = 1000000000000 is over the limit of 1048576"},
		{"hidden size not dividing", map[string]any{"hidden_size": 9}, nil, "hidden_size = 9 is not divisible by num_attention_heads = 2"},
		{"zero heads", map[string]any{"num_attention_heads": 0}, nil, "num_attention_heads = 0 (must be positive)"},
		{"a million heads", map[string]any{"num_attention_heads": 1 << 20}, nil, "num_attention_heads = 1048576 is over the limit of 4096"},
		{"zero KV heads", map[string]any{"num_key_value_heads": 0}, nil, "num_key_value_heads = 0 (must be positive)"},
		{"KV heads not grouping", map[string]any{"num_key_value_heads": 3}, nil, "3 heads"},
		{"huge FFN", map[string]any{"intermediate_size": 1e10}, nil, "intermediate_size = 10000000000 is over the limit"},
		{"huge context", map[string]any{"max_position_embeddings": 1e12}, nil, "max_position_embeddings = 1000000000000 is over the limit of 2147483647"},
		{"huge head width with llama3 rope", map[string]any{"head_dim": 1e9, "rope_scaling": llama3(nil)}, nil, "head_dim = 1000000000 is over the limit"},
		{"zero head width", map[string]any{"head_dim": 0}, nil, "head_dim = 0 (must be positive)"},
		{"llama3 rope with equal factors", map[string]any{"rope_scaling": llama3(map[string]any{"high_freq_factor": 1.0})}, nil, "high_freq_factor above low_freq_factor"},
		{"negative linear rope factor", map[string]any{"rope_scaling": map[string]any{"type": "linear", "factor": -2.0}}, nil, "rope_scaling factor = -2"},
		{"negative rope theta", map[string]any{"rope_theta": -1}, nil, "rope_theta = -1 (must be positive)"},
		{"a million experts", map[string]any{"num_local_experts": 1e6, "num_experts_per_tok": 2}, nil, "num_local_experts = 1000000 is over the limit of 1024"},
		{"vocab_size of millions", map[string]any{"vocab_size": 16_000_000}, nil, "config.json: vocab_size = 16000000 but the embeddings have 16 rows"},
		{"vocab_size past the embeddings", map[string]any{"vocab_size": 20}, nil, "vocab_size = 20 but the embeddings have 16 rows"},
		{"fractional vocab_size", map[string]any{"vocab_size": 16.5}, nil, "vocab_size = 16.5 is not a count"},
		{"token id in the millions", nil, map[string]int{"zz": 1<<24 - 1}, `token "zz" has id 16777215, but the embeddings have 16 rows`},
		{"token id past the embeddings", nil, map[string]int{"zz": 16}, `token "zz" has id 16, but the embeddings have 16 rows`},
		{"Phi-3 negative rotary fraction", map[string]any{"architectures": []string{"Phi3ForCausalLM"}, "partial_rotary_factor": -0.5}, nil, "partial_rotary_factor = -0.5"},
		{"Phi-3 fractional window", map[string]any{"architectures": []string{"Phi3ForCausalLM"}, "sliding_window": 2.5}, nil, "sliding_window = 2.5 is not a count"},
		{"Gemma 2 negative window", map[string]any{"architectures": []string{"Gemma2ForCausalLM"}, "sliding_window": -4}, nil, "sliding_window = -4 is not a count"},
		{"Gemma 2 window beyond int32", map[string]any{"architectures": []string{"Gemma2ForCausalLM"}, "sliding_window": 1e15}, nil, "sliding_window = 1000000000000000 is over the limit"},
		{"GPT-2 huge width", map[string]any{"architectures": []string{"GPT2LMHeadModel"}, "hidden_size": nil, "n_embd": 1 << 31}, nil, "n_embd = 2147483648 is over the limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tinyFolder(t, c.over, c.tokens)
			var err error
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			err = openAndLoad(dir)
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
			if n := m1.TotalAlloc - m0.TotalAlloc; n > maxLoadAlloc {
				t.Errorf("the refused load allocated %d MiB", n>>20)
			}
		})
	}
	if err := openAndLoad(tinyFolder(t, nil, nil)); err != nil {
		t.Fatalf("the folder they are made from: %v", err)
	}
}
