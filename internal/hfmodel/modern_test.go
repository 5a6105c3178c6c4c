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
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
	"github.com/loom-inference/loom/safetensors"
)

// The config.json keys of Gemma 3, SmolLM3, Granite and gpt-oss: every bad
// value is refused with an error naming its key (and what llama.cpp would
// run instead, where it fixes the value), before anything is sized by it;
// the variants the converter accepts load.

var jsonNull = json.RawMessage("null")

// tinyModern writes a small folder of one of the new families (hidden 8,
// 2 heads over 1 KV head, FFN 16, 16 tokens, F32; gpt-oss: hidden 32,
// FFN 32, 2 experts in MXFP4 blocks), config.json overridden by over (a
// nil value deletes the key) and its tensors changed by edit.
func tinyModern(t *testing.T, arch string, over map[string]any, edit func([]safetensors.Tensor) []safetensors.Tensor) string {
	t.Helper()
	cfg := map[string]any{"architectures": []string{arch}, "num_attention_heads": 2, "num_key_value_heads": 1,
		"max_position_embeddings": 64, "vocab_size": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": true}
	hidden, ffn, layers, headDim := 8, 16, 4, 4
	fam := arch
	switch arch {
	case "Gemma3ForConditionalGeneration":
		fam = "Gemma3ForCausalLM"
	case "Mistral3ForConditionalGeneration":
		fam = "Ministral3ForCausalLM"
	case "Gemma4ForConditionalGeneration":
		fam = "Gemma4ForCausalLM"
	}
	switch fam {
	case "Gemma3ForCausalLM":
		layers = 2
		for k, v := range map[string]any{"head_dim": headDim, "rope_local_base_freq": 10000.0, "sliding_window": 4,
			"sliding_window_pattern": 6, "query_pre_attn_scalar": headDim, "final_logit_softcapping": jsonNull} {
			cfg[k] = v
		}
	case "Ministral3ForCausalLM":
		layers = 2
		cfg["model_type"], cfg["head_dim"] = "ministral3", headDim
		delete(cfg, "rope_theta")
		cfg["rope_parameters"] = map[string]any{"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16, "beta_fast": 32.0,
			"beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1, "rope_theta": 1e6}
	case "Gemma4ForCausalLM":
		layers = 2
		for k, v := range map[string]any{"head_dim": headDim, "global_head_dim": headDim, "sliding_window": 4, "num_kv_shared_layers": 0,
			"layer_types": []string{"sliding_attention", "full_attention"}, "final_logit_softcapping": 30.0,
			"rope_parameters": map[string]any{"full_attention": map[string]any{"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 1e6},
				"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 1e4}}} {
			cfg[k] = v
		}
		delete(cfg, "rope_theta")
	case "SmolLM3ForCausalLM":
		cfg["no_rope_layers"], cfg["no_rope_layer_interval"], cfg["use_sliding_window"], cfg["sliding_window"] = []int{1, 1, 1, 0}, 4, false, jsonNull
	case "GraniteForCausalLM":
		layers = 2
		for k, v := range map[string]any{"attention_multiplier": 0.25, "embedding_multiplier": 12.0, "residual_multiplier": 0.22, "logits_scaling": 8.0} {
			cfg[k] = v
		}
	case "GptOssForCausalLM":
		hidden, ffn, layers, headDim = 32, 32, 2, 16
		for k, v := range map[string]any{"head_dim": headDim, "num_local_experts": 2, "num_experts_per_tok": 1, "sliding_window": 4,
			"swiglu_limit": 7.0, "layer_types": []string{"sliding_attention", "full_attention"}, "tie_word_embeddings": false,
			"rope_scaling": map[string]any{"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 16, "beta_fast": 32.0, "beta_slow": 1.0}} {
			cfg[k] = v
		}
	}
	cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"] = hidden, ffn, layers
	for k, v := range over {
		if v == nil {
			delete(cfg, k)
		} else {
			cfg[k] = v
		}
	}
	seed := 0
	var ts []safetensors.Tensor
	add := func(dtype, name string, shape ...int64) {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		var b []byte
		if dtype == "U8" {
			b = make([]byte, n)
			for i := range b {
				seed++
				b[i] = byte(seed*37) & 0x77 // small codes, scales near 2^-8
				if shape[len(shape)-1] != 16 {
					b[i] = byte(120 + seed%8)
				}
			}
		} else {
			b = make([]byte, 4*n)
			for i := range n {
				seed++
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(math.Sin(float64(seed)))*0.5))
			}
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: dtype, Shape: shape, Data: b})
	}
	h, q, kv := int64(hidden), int64(2*headDim), int64(headDim)
	add("F32", "model.embed_tokens.weight", 16, h)
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		add("F32", p+"input_layernorm.weight", h)
		add("F32", p+"self_attn.q_proj.weight", q, h)
		add("F32", p+"self_attn.k_proj.weight", kv, h)
		add("F32", p+"self_attn.v_proj.weight", kv, h)
		add("F32", p+"self_attn.o_proj.weight", h, q)
		add("F32", p+"post_attention_layernorm.weight", h)
		switch fam {
		case "Gemma3ForCausalLM", "Gemma4ForCausalLM":
			add("F32", p+"self_attn.q_norm.weight", kv)
			add("F32", p+"self_attn.k_norm.weight", kv)
			add("F32", p+"pre_feedforward_layernorm.weight", h)
			add("F32", p+"post_feedforward_layernorm.weight", h)
		case "GptOssForCausalLM":
			for _, b := range []struct {
				n string
				w int64
			}{{"q", q}, {"k", kv}, {"v", kv}, {"o", h}} {
				add("F32", p+"self_attn."+b.n+"_proj.bias", b.w)
			}
			add("F32", p+"self_attn.sinks", 2)
			add("F32", p+"mlp.router.weight", 2, h)
			add("F32", p+"mlp.router.bias", 2)
			f := int64(ffn)
			add("U8", p+"mlp.experts.gate_up_proj_blocks", 2, 2*f, h/32, 16)
			add("U8", p+"mlp.experts.gate_up_proj_scales", 2, 2*f, h/32)
			add("F32", p+"mlp.experts.gate_up_proj_bias", 2, 2*f)
			add("U8", p+"mlp.experts.down_proj_blocks", 2, h, f/32, 16)
			add("U8", p+"mlp.experts.down_proj_scales", 2, h, f/32)
			add("F32", p+"mlp.experts.down_proj_bias", 2, h)
			continue
		}
		add("F32", p+"mlp.gate_proj.weight", int64(ffn), h)
		add("F32", p+"mlp.up_proj.weight", int64(ffn), h)
		add("F32", p+"mlp.down_proj.weight", h, int64(ffn))
	}
	add("F32", "model.norm.weight", h)
	if arch == "GptOssForCausalLM" {
		add("F32", "lm_head.weight", 16, h)
	}
	if edit != nil {
		ts = edit(ts)
	}
	return writeTiny(t, cfg, ts)
}

// writeTiny writes config.json, the tensors and a 16-token byte-level
// tokenizer.json to a new directory.
func writeTiny(t *testing.T, cfg map[string]any, ts []safetensors.Tensor) string {
	vocab := map[string]int{}
	for i := range 16 {
		vocab[string(rune('a'+i))] = i
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

// openModern opens dir and, if Loom runs its architecture, loads the model.
func openModern(dir string) error {
	fo, err := Open(dir)
	if err != nil {
		return err
	}
	arch := fo.Arch
	fo.Close()
	if _, err := model.Lookup(arch); err != nil {
		return nil
	}
	return openAndLoad(dir)
}

// editTensor changes (or with nil, drops) the tensors whose names end in suffix.
func editTensor(suffix string, f func(*safetensors.Tensor)) func([]safetensors.Tensor) []safetensors.Tensor {
	return func(ts []safetensors.Tensor) []safetensors.Tensor {
		var out []safetensors.Tensor
		for _, t := range ts {
			if strings.HasSuffix(t.Name, suffix) {
				if f == nil {
					continue
				}
				f(&t)
			}
			out = append(out, t)
		}
		return out
	}
}

func TestModernConfig(t *testing.T) {
	const g3, sm3, gr, oss = "Gemma3ForCausalLM", "SmolLM3ForCausalLM", "GraniteForCausalLM", "GptOssForCausalLM"
	const m3, g4 = "Ministral3ForCausalLM", "Gemma4ForCausalLM"
	m3rope := func(extra map[string]any) map[string]any {
		rp := map[string]any{"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16, "beta_fast": 32.0,
			"beta_slow": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1, "rope_theta": 1e6}
		for k, v := range extra {
			if v == nil {
				delete(rp, k)
			} else {
				rp[k] = v
			}
		}
		return rp
	}
	g4rope := func(full map[string]any) map[string]any {
		f := map[string]any{"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 1e6}
		for k, v := range full {
			if v == nil {
				delete(f, k)
			} else {
				f[k] = v
			}
		}
		return map[string]any{"full_attention": f, "sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 1e4}}
	}
	yarn := func(extra map[string]any) map[string]any {
		rs := map[string]any{"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 16, "beta_fast": 32.0, "beta_slow": 1.0}
		for k, v := range extra {
			if v == nil {
				delete(rs, k)
			} else {
				rs[k] = v
			}
		}
		return rs
	}
	cases := []struct {
		name, arch string
		over       map[string]any
		edit       func([]safetensors.Tensor) []safetensors.Tensor
		want       string
	}{
		// Gemma 3
		{"Gemma 3 sliding pattern 4", g3, map[string]any{"sliding_window_pattern": 4}, nil, "config.json: sliding_window_pattern = 4, but llama.cpp's Gemma 3 has 6"},
		{"Gemma 3 fractional pattern", g3, map[string]any{"sliding_window_pattern": 6.5}, nil, "sliding_window_pattern = 6.5"},
		{"Gemma 3 layer types not 5:1", g3, map[string]any{"layer_types": []string{"full_attention", "full_attention"}}, nil,
			"config.json: layer_types[0] = full_attention, but llama.cpp's Gemma 3 (5 sliding layers, then 1 global) makes layer 0 sliding_attention"},
		{"Gemma 3 layer types short", g3, map[string]any{"layer_types": []string{"sliding_attention"}}, nil, "layer_types has 1 entries for 2 layers"},
		{"Gemma 3 layer types not a list", g3, map[string]any{"layer_types": "sliding"}, nil, "layer_types is not a list"},
		{"Gemma 3 unknown layer type", g3, map[string]any{"layer_types": []string{"sliding_attention", "chunked_attention"}}, nil, "layer_types[1] = chunked_attention (want full_attention or sliding_attention)"},
		{"Gemma 3 query scale", g3, map[string]any{"query_pre_attn_scalar": 100}, nil, "query_pre_attn_scalar = 100, but llama.cpp scales Gemma 3 queries by 1/√4 (head_dim)"},
		{"Gemma 3 attention soft-cap", g3, map[string]any{"attn_logit_softcapping": 50.0}, nil, "attn_logit_softcapping = 50 (Gemma 3 has none"},
		{"Gemma 3 negative final soft-cap", g3, map[string]any{"final_logit_softcapping": -30.0}, nil, "final_logit_softcapping = -30 (must be positive)"},
		{"Gemma 3 zero local base", g3, map[string]any{"rope_local_base_freq": 0}, nil, "rope_local_base_freq = 0 (must be positive)"},
		{"Gemma 3 local base as a string", g3, map[string]any{"rope_local_base_freq": "1e4"}, nil, "rope_local_base_freq = 1e4 is not a number"},
		{"Gemma 3 base beyond float32", g3, map[string]any{"rope_theta": 1e39}, nil, "rope_theta = 1000000000000000000000000000000000000000 is beyond float32"},
		{"Gemma 3 negative linear factor", g3, map[string]any{"rope_scaling": map[string]any{"rope_type": "linear", "factor": -8.0}}, nil, "rope_scaling factor = -8 (must be positive)"},
		{"Gemma 3 rope_scaling a string", g3, map[string]any{"rope_scaling": "linear"}, nil, "config.json: rope_scaling is not an object"},
		{"Gemma 3 unknown rope type", g3, map[string]any{"rope_scaling": map[string]any{"rope_type": "ntk-by-parts", "factor": 4.0}}, nil, `rope_scaling type "ntk-by-parts" is not supported`},
		{"Gemma 3 rope type a number", g3, map[string]any{"rope_scaling": map[string]any{"rope_type": 1, "factor": 4.0}}, nil, "rope_scaling rope_type = 1 is not a string"},
		{"Gemma 3 split rope, global not an object", g3, map[string]any{"rope_parameters": map[string]any{"full_attention": 3}}, nil, "rope_parameters full_attention is not an object"},
		{"Gemma 3 split rope, negative local base", g3, map[string]any{"rope_parameters": map[string]any{"full_attention": map[string]any{"rope_theta": 1e6},
			"sliding_attention": map[string]any{"rope_theta": -1.0}}}, nil, "rope_parameters sliding_attention rope_theta = -1 (must be positive)"},
		{"Gemma 3 negative window", g3, map[string]any{"sliding_window": -4}, nil, "sliding_window = -4 is not a count"},
		{"Gemma 3 null window", g3, map[string]any{"sliding_window": jsonNull}, nil, "config.json: sliding_window is missing or null"},
		{"Gemma 3 zero head width", g3, map[string]any{"head_dim": 0}, nil, "head_dim = 0 (must be positive)"},
		{"Gemma 3 text_config a number", g3, map[string]any{"text_config": 5}, nil, "config.json: text_config is not an object"},
		{"Gemma 3 a billion layers in text_config", g3, map[string]any{"num_hidden_layers": nil, "text_config": map[string]any{"num_hidden_layers": 1e9}}, nil,
			"config.json: num_hidden_layers = 1000000000 but the weights have tensors for 2 layers (0 … 1)"},
		// SmolLM3
		{"SmolLM3 NoPE on the wrong layer", sm3, map[string]any{"no_rope_layers": []int{1, 1, 0, 1}}, nil,
			"config.json: no_rope_layers[2] = 0, but llama.cpp's SmolLM3 skips RoPE on every 4th layer (3, 7, 11, …) only"},
		{"SmolLM3 NoPE list short", sm3, map[string]any{"no_rope_layers": []int{1, 1}}, nil, "no_rope_layers has 2 entries for 4 layers"},
		{"SmolLM3 NoPE flag 2", sm3, map[string]any{"no_rope_layers": []int{1, 1, 1, 2}}, nil, "no_rope_layers[3] = 2 (want 1 for RoPE, 0 for none)"},
		{"SmolLM3 NoPE not a list", sm3, map[string]any{"no_rope_layers": "every 4th"}, nil, "no_rope_layers is not a list"},
		{"SmolLM3 NoPE interval 3", sm3, map[string]any{"no_rope_layers": nil, "no_rope_layer_interval": 3}, nil, "no_rope_layer_interval = 3, but llama.cpp's SmolLM3 skips RoPE on every 4th layer"},
		{"SmolLM3 sliding window", sm3, map[string]any{"use_sliding_window": true, "sliding_window": 8}, nil, "use_sliding_window is true, but llama.cpp's SmolLM3 has no sliding window"},
		{"SmolLM3 sliding layer", sm3, map[string]any{"layer_types": []string{"full_attention", "full_attention", "full_attention", "sliding_attention"}}, nil, "layer_types[3] = sliding_attention"},
		{"SmolLM3 no vocab_size", sm3, map[string]any{"vocab_size": nil}, nil, "config.json: missing vocab_size"},
		{"SmolLM3 yarn without its context", sm3, map[string]any{"rope_scaling": yarn(map[string]any{"original_max_position_embeddings": nil})}, nil, "rope_scaling of type yarn has no original_max_position_embeddings"},
		// Granite
		{"Granite zero logit scale", gr, map[string]any{"logits_scaling": 0}, nil, "config.json: logits_scaling = 0 (must be positive)"},
		{"Granite negative embedding multiplier", gr, map[string]any{"embedding_multiplier": -12.0}, nil, "embedding_multiplier = -12 (must be positive)"},
		{"Granite attention multiplier beyond float32", gr, map[string]any{"attention_multiplier": 1e40}, nil, "attention_multiplier = 10000000000000000000000000000000000000000 is beyond float32"},
		{"Granite residual multiplier as a string", gr, map[string]any{"residual_multiplier": "0.22"}, nil, "residual_multiplier = 0.22 is not a number"},
		{"Granite negative epsilon", gr, map[string]any{"rms_norm_eps": -1e-5}, nil, "rms_norm_eps = -0.00001"},
		// Ministral 3
		{"Ministral 3 without rope parameters", m3, map[string]any{"rope_parameters": nil, "rope_theta": 1e6}, nil, "rope_scaling rope_type = <nil>, but a ministral3 model's must be yarn"},
		{"Ministral 3 linear rope", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"rope_type": "linear"})}, nil, "rope_type = linear, but a ministral3 model's must be yarn"},
		{"Ministral 3 no temperature beta", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"llama_4_scaling_beta": nil})}, nil, "rope_parameters has no llama_4_scaling_beta"},
		{"Ministral 3 no log multiplier", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"mscale_all_dim": nil})}, nil, "rope_parameters has no mscale_all_dim"},
		{"Ministral 3 negative log multiplier", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"mscale_all_dim": -1.0})}, nil, "mscale_all_dim = -1 (must not be negative)"},
		{"Ministral 3 temperature as a string", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"llama_4_scaling_beta": "0.1"})}, nil, "llama_4_scaling_beta = 0.1 is not a number"},
		{"Ministral 3 temperature beyond float32", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"llama_4_scaling_beta": 1e39})}, nil, "is beyond float32"},
		{"Ministral 3 yarn without its context", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"original_max_position_embeddings": nil})}, nil, "of type yarn has no original_max_position_embeddings"},
		{"Ministral 3 zero factor", m3, map[string]any{"rope_parameters": m3rope(map[string]any{"factor": 0.0})}, nil, "rope_parameters factor = 0 (must be positive)"},
		{"Mistral 4", m3, map[string]any{"model_type": "mistral4"}, nil, "model_type mistral4 is llama.cpp's mistral4 architecture (not supported)"},
		{"Ministral 3 heads not dividing Q", m3, map[string]any{"num_attention_heads": 3, "num_key_value_heads": 3}, nil, "do not split into 3 heads of pairs"},
		// Gemma 4
		{"Gemma 4 default global rope", g4, map[string]any{"rope_parameters": g4rope(map[string]any{"rope_type": "default"})}, nil, "full_attention rope_type = default, but the converter's Gemma 4 asserts proportional"},
		{"Gemma 4 no rope parameters", g4, map[string]any{"rope_parameters": nil, "rope_theta": 1e6}, nil, "Gemma 4 needs rope_parameters"},
		{"Gemma 4 global rope not an object", g4, map[string]any{"rope_parameters": map[string]any{"full_attention": "proportional"}}, nil, "full_attention is missing or not an object"},
		{"Gemma 4 partial rotation 2", g4, map[string]any{"rope_parameters": g4rope(map[string]any{"partial_rotary_factor": 2.0})}, nil, "partial_rotary_factor = 2 (want a fraction in (0, 1])"},
		{"Gemma 4 no partial rotation", g4, map[string]any{"rope_parameters": g4rope(map[string]any{"partial_rotary_factor": nil})}, nil, "partial_rotary_factor = <nil>"},
		{"Gemma 4 sliding rotation as a string", g4, map[string]any{"rope_parameters": func() map[string]any {
			r := g4rope(nil)
			r["partial_rotary_factor"] = "1"
			return r
		}()}, nil, "rope_parameters partial_rotary_factor = 1 (want a fraction"},
		{"Gemma 4 no layer types", g4, map[string]any{"layer_types": nil}, nil, "layer_types is missing or not a list"},
		{"Gemma 4 layer types short", g4, map[string]any{"layer_types": []string{"sliding_attention"}}, nil, "layer_types has 1 entries for 2 layers"},
		{"Gemma 4 unknown layer type", g4, map[string]any{"layer_types": []string{"sliding_attention", "chunked_attention"}}, nil, "layer_types[1] = chunked_attention"},
		{"Gemma 4 no KV sharing key", g4, map[string]any{"num_kv_shared_layers": nil}, nil, "config.json: missing num_kv_shared_layers"},
		{"Gemma 4 every layer shared", g4, map[string]any{"num_kv_shared_layers": 2}, nil, "num_kv_shared_layers = 2 leaves none of the 2 layers with its own KV"},
		{"Gemma 4 negative KV sharing", g4, map[string]any{"num_kv_shared_layers": -1}, nil, "num_kv_shared_layers = -1 is not a count"},
		{"Gemma 4 no global head width", g4, map[string]any{"global_head_dim": nil}, nil, "missing global_head_dim (the global layers' head width"},
		{"Gemma 4 a huge global head", g4, map[string]any{"global_head_dim": 1e9}, nil, "global_head_dim = 1000000000 is over the limit"},
		{"Gemma 4 attention soft-cap", g4, map[string]any{"attn_logit_softcapping": 50.0}, nil, "attn_logit_softcapping = 50 (Gemma 4 has none"},
		{"Gemma 4 null window", g4, map[string]any{"sliding_window": jsonNull}, nil, "config.json: sliding_window is missing or null"},
		{"Gemma 4 zero global KV heads", g4, map[string]any{"num_global_key_value_heads": 0}, nil, "num_global_key_value_heads = 0 (must be positive)"},
		{"Gemma 4 a million experts used", g4, map[string]any{"top_k_experts": 1e6}, nil, "top_k_experts = 1000000 is over the limit of 1024"},
		{"Gemma 4 per-layer width as a string", g4, map[string]any{"hidden_size_per_layer_input": "256"}, nil, "hidden_size_per_layer_input = 256 is not a number"},
		{"Gemma 4 double-wide without a width", g4, map[string]any{"use_double_wide_mlp": true, "intermediate_size": nil}, nil, "missing intermediate_size"},
		// gpt-oss
		{"gpt-oss no window", oss, map[string]any{"sliding_window": nil}, nil, "config.json: sliding_window is missing or null"},
		{"gpt-oss fractional window", oss, map[string]any{"sliding_window": 2.5}, nil, "sliding_window = 2.5 is not a count"},
		{"gpt-oss SwiGLU limit", oss, map[string]any{"swiglu_limit": 10.0}, nil, "config.json: swiglu_limit = 10, but llama.cpp's gpt-oss fixes it at 7"},
		{"gpt-oss SwiGLU alpha", oss, map[string]any{"swiglu_alpha": 1.0}, nil, "swiglu_alpha = 1, but llama.cpp's gpt-oss fixes it at 1.702"},
		{"gpt-oss window on odd layers", oss, map[string]any{"layer_types": []string{"full_attention", "sliding_attention"}}, nil, "layer_types[0] = full_attention, but llama.cpp's gpt-oss"},
		{"gpt-oss zero expert width", oss, map[string]any{"intermediate_size": 0}, nil, "intermediate_size = 0 (must be positive)"},
		{"gpt-oss a million experts", oss, map[string]any{"num_local_experts": 1e6}, nil, "num_local_experts = 1000000 is over the limit of 1024"},
		{"gpt-oss negative beta", oss, map[string]any{"rope_scaling": yarn(map[string]any{"beta_fast": -32.0})}, nil, "rope_scaling beta_fast = -32 (must be positive)"},
		{"gpt-oss fractional original context", oss, map[string]any{"rope_scaling": yarn(map[string]any{"original_max_position_embeddings": 1.5})}, nil,
			"rope_scaling original_max_position_embeddings = 1.5 is not a positive count"},
		{"gpt-oss zero yarn factor", oss, map[string]any{"rope_scaling": yarn(map[string]any{"factor": 0.0})}, nil, "rope_scaling factor = 0 (must be positive)"},
		{"gpt-oss blocks without scales", oss, nil, editTensor("layers.1.mlp.experts.down_proj_scales", nil), `"model.layers.1.mlp.experts.down_proj_blocks": MXFP4 blocks without their _scales tensor`},
		{"gpt-oss scales without blocks", oss, nil, editTensor("layers.0.mlp.experts.gate_up_proj_blocks", nil), "gate_up_proj_scales\": MXFP4 scales without their _blocks tensor"},
		{"gpt-oss scales of another shape", oss, nil, editTensor("layers.0.mlp.experts.down_proj_scales", func(t *safetensors.Tensor) {
			t.Shape, t.Data = []int64{2, 16, 2}, t.Data[:64]
		}), "MXFP4 scales of shape [2 16 2] for blocks [2 32 1 16] (want [2 32 1])"},
		{"gpt-oss blocks in F16", oss, nil, editTensor("layers.0.mlp.experts.down_proj_blocks", func(t *safetensors.Tensor) { t.DType, t.Shape = "F16", []int64{2, 32, 1, 8} }),
			"MXFP4 blocks F16 and scales U8 (U8 expected)"},
		{"gpt-oss odd fused bias", oss, nil, editTensor("layers.0.mlp.experts.gate_up_proj_bias", func(t *safetensors.Tensor) { t.Shape, t.Data = []int64{2, 63}, t.Data[:2*63*4] }),
			"63 fused gate/up biases per expert (not even)"},
		{"gpt-oss odd fused rows", oss, nil, func(ts []safetensors.Tensor) []safetensors.Tensor {
			ts = editTensor("layers.0.mlp.experts.gate_up_proj_blocks", func(t *safetensors.Tensor) { t.Shape, t.Data = []int64{2, 63, 1, 16}, t.Data[:2*63*16] })(ts)
			return editTensor("layers.0.mlp.experts.gate_up_proj_scales", func(t *safetensors.Tensor) { t.Shape, t.Data = []int64{2, 63, 1}, t.Data[:2*63] })(ts)
		}, "63 fused gate/up rows in 2 experts (want an even, positive count)"},
		{"gpt-oss bias of U8", oss, nil, editTensor("layers.0.mlp.experts.down_proj_bias", func(t *safetensors.Tensor) { t.DType, t.Shape = "U8", []int64{2, 128} }),
			"dtype U8 (F32, F16 or BF16 expected)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tinyModern(t, c.arch, c.over, c.edit)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			err := openModern(dir)
			runtime.ReadMemStats(&m1)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
			if n := m1.TotalAlloc - m0.TotalAlloc; n > maxLoadAlloc {
				t.Errorf("the refused load allocated %d MiB", n>>20)
			}
		})
	}
}

// TestModernVariants: what the converter accepts loads, with the metadata
// it writes: Gemma 3 with no window (pattern 1), with transformers 5's
// split rope_parameters, and as a multimodal checkpoint's text model;
// Granite without its multipliers (1) and with a head_dim it ignores;
// gpt-oss with dequantized experts.
func TestModernVariants(t *testing.T) {
	const g3, gr, oss = "Gemma3ForCausalLM", "GraniteForCausalLM", "GptOssForCausalLM"
	type kv struct {
		key  string
		want any // nil: absent
	}
	multimodal := func(ts []safetensors.Tensor) []safetensors.Tensor {
		for i := range ts {
			ts[i].Name = strings.Replace(ts[i].Name, "model.", "model.language_model.", 1)
		}
		return append(ts, safetensors.Tensor{Name: "model.vision_tower.vision_model.post_layernorm.weight", DType: "F32", Shape: []int64{2}, Data: make([]byte, 8)},
			safetensors.Tensor{Name: "model.multi_modal_projector.mm_input_projection_weight", DType: "F32", Shape: []int64{2, 8}, Data: make([]byte, 64)})
	}
	cases := []struct {
		name, arch string
		over       map[string]any
		edit       func([]safetensors.Tensor) []safetensors.Tensor
		want       []kv
	}{
		{"Gemma 3 without a window", g3, map[string]any{"sliding_window_pattern": 1, "layer_types": []string{"full_attention", "full_attention"}}, nil,
			[]kv{{"gemma3.attention.sliding_window", nil}, {"gemma3.rope.freq_base_swa", float32(10000)}}},
		{"Gemma 3 with split rope parameters", g3, map[string]any{"rope_theta": nil, "rope_local_base_freq": nil, "rope_parameters": map[string]any{
			"full_attention":    map[string]any{"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
			"sliding_attention": map[string]any{"rope_type": "default", "rope_theta": 5e4}}}, nil,
			[]kv{{"gemma3.rope.freq_base", float32(1e6)}, {"gemma3.rope.freq_base_swa", float32(5e4)}, {"gemma3.rope.scaling.type", "linear"}, {"gemma3.rope.scaling.factor", float32(8)},
				{"gemma3.attention.sliding_window", uint32(4)}}},
		{"Gemma 3 multimodal", "Gemma3ForConditionalGeneration", map[string]any{"text_config": map[string]any{"hidden_size": 8, "intermediate_size": 16,
			"num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "query_pre_attn_scalar": 4, "sliding_window": 4, "vocab_size": 16,
			"rope_scaling": map[string]any{"rope_type": "linear", "factor": 8.0}},
			"hidden_size": nil, "intermediate_size": nil, "num_hidden_layers": nil, "num_attention_heads": nil, "num_key_value_heads": nil, "head_dim": nil,
			"query_pre_attn_scalar": nil, "sliding_window": nil, "vocab_size": nil, "rope_theta": nil, "rope_local_base_freq": nil, "sliding_window_pattern": nil,
			"rms_norm_eps": nil, "max_position_embeddings": nil, "tie_word_embeddings": nil, "vision_config": map[string]any{"hidden_size": 2}},
			multimodal, []kv{{"gemma3.block_count", uint32(2)}, {"gemma3.context_length", uint32(131072)}, {"gemma3.rope.freq_base", float32(1e6)},
				{"gemma3.rope.freq_base_swa", float32(1e4)}, {"gemma3.attention.layer_norm_rms_epsilon", float32(1e-6)}, {"gemma3.rope.scaling.factor", float32(8)}}},
		{"Mistral 3 multimodal", "Mistral3ForConditionalGeneration", map[string]any{"text_config": map[string]any{"model_type": "ministral3", "hidden_size": 8,
			"intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 16,
			"rope_parameters": map[string]any{"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 16, "mscale_all_dim": 0.0,
				"llama_4_scaling_beta": 0.1, "rope_theta": 1e6}},
			"model_type": "mistral3", "hidden_size": nil, "intermediate_size": nil, "num_hidden_layers": nil, "num_attention_heads": nil,
			"num_key_value_heads": nil, "head_dim": nil, "vocab_size": nil, "rope_parameters": nil, "vision_config": map[string]any{"hidden_size": 2}},
			multimodal, []kv{{"mistral3.block_count", uint32(2)}, {"mistral3.rope.scaling.type", "yarn"}, {"mistral3.rope.scaling.original_context_length", uint32(16)},
				{"mistral3.rope.scaling.yarn_log_multiplier", float32(0)}, {"mistral3.attention.temperature_scale", float32(0.1)}, {"mistral3.rope.freq_base", float32(1e6)},
				{"mistral3.rope.scaling.yarn_beta_fast", nil}}},
		{"Mistral Small 3.1 text (model_type mistral)", "Ministral3ForCausalLM", map[string]any{"model_type": "mistral", "rope_parameters": nil, "rope_theta": 1e6}, nil,
			[]kv{{"mistral3.rope.freq_base", float32(1e6)}, {"mistral3.rope.scaling.type", nil}, {"mistral3.attention.temperature_scale", nil}, {"mistral3.rope.dimension_count", uint32(4)}}},
		{"Gemma 4 double-wide MLP, global KV heads, experts' keys", "Gemma4ForCausalLM", map[string]any{"use_double_wide_mlp": true, "num_kv_shared_layers": 1,
			"num_global_key_value_heads": 2, "moe_intermediate_size": 8}, func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i, t := range ts { // layer 1 (global, shared): 2 KV heads, a double-wide MLP
				shape := map[string][]int64{"k_proj": {8, 8}, "v_proj": {8, 8}, "gate_proj": {32, 8}, "up_proj": {32, 8}, "down_proj": {8, 32}}
				for k, sh := range shape {
					if strings.Contains(t.Name, "layers.1.") && strings.Contains(t.Name, k) {
						ts[i].Shape, ts[i].Data = sh, make([]byte, 4*sh[0]*sh[1])
					}
				}
			}
			return ts
		},
			[]kv{{"gemma4.attention.shared_kv_layers", uint32(1)}, {"gemma4.expert_feed_forward_length", uint32(8)}, {"gemma4.embedding_length_per_layer_input", uint32(0)},
				{"gemma4.rope.dimension_count", uint32(4)}, {"gemma4.rope.dimension_count_swa", uint32(4)}, {"gemma4.final_logit_softcapping", float32(30)},
				{"gemma4.rope.freq_base_swa", float32(1e4)}, {"gemma4.rope.scaling.type", nil}}},
		{"Gemma 4 multimodal", "Gemma4ForConditionalGeneration", map[string]any{"final_logit_softcapping": nil}, func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i := range ts {
				ts[i].Name = strings.Replace(ts[i].Name, "model.", "model.language_model.", 1)
			}
			return append(ts, safetensors.Tensor{Name: "model.vision_tower.encoder.layers.0.mlp.up_proj.linear.weight", DType: "F32", Shape: []int64{2}, Data: make([]byte, 8)},
				safetensors.Tensor{Name: "model.embed_vision.embedding_projection.weight", DType: "F32", Shape: []int64{2}, Data: make([]byte, 8)},
				safetensors.Tensor{Name: "model.audio_tower.layers.0.norm.weight", DType: "F32", Shape: []int64{2}, Data: make([]byte, 8)},
				safetensors.Tensor{Name: "model.embed_audio.embedding_projection.weight", DType: "F32", Shape: []int64{2}, Data: make([]byte, 8)})
		}, []kv{{"gemma4.block_count", uint32(2)}, {"gemma4.final_logit_softcapping", nil}}},
		{"Granite defaults", gr, map[string]any{"attention_multiplier": nil, "embedding_multiplier": nil, "residual_multiplier": nil, "logits_scaling": nil, "head_dim": 64}, nil,
			[]kv{{"granite.attention.scale", float32(1)}, {"granite.logit_scale", float32(1)}, {"granite.attention.key_length", nil}, {"granite.rope.dimension_count", uint32(4)}}},
		{"gpt-oss dequantized experts", oss, nil, func(ts []safetensors.Tensor) []safetensors.Tensor {
			var out []safetensors.Tensor
			for _, t := range ts {
				switch {
				case strings.HasSuffix(t.Name, "_scales"):
					continue
				case strings.HasSuffix(t.Name, "gate_up_proj_blocks"):
					t.Name, t.DType, t.Shape, t.Data = strings.TrimSuffix(t.Name, "_blocks"), "F32", []int64{2, 32, 64}, make([]byte, 2*32*64*4)
				case strings.HasSuffix(t.Name, "down_proj_blocks"):
					t.Name, t.DType, t.Shape, t.Data = strings.TrimSuffix(t.Name, "_blocks"), "F32", []int64{2, 32, 32}, make([]byte, 2*32*32*4)
				}
				out = append(out, t)
			}
			return out
		}, []kv{{"gpt-oss.expert_feed_forward_length", uint32(32)}, {"gpt-oss.rope.scaling.original_context_length", uint32(16)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := tinyModern(t, c.arch, c.over, c.edit)
			if err := openModern(dir); err != nil {
				t.Fatal(err)
			}
			fo, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer fo.Close()
			meta, err := fo.MetaFile()
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				v, ok := meta.Get(w.key)
				switch {
				case w.want == nil && ok:
					t.Errorf("%s = %v, want none", w.key, v)
				case w.want != nil && (!ok || v.V != w.want):
					t.Errorf("%s = %v, want %v", w.key, v.V, w.want)
				}
			}
			if c.arch == "Gemma4ForCausalLM" {
				for _, a := range []struct {
					key  string
					want []uint32
				}{{"gemma4.feed_forward_length", []uint32{16, 32}}, {"gemma4.attention.head_count_kv", []uint32{1, 2}}} {
					v, ok, err := meta.ArrayOf(a.key, gguf.Uint32)
					if !ok || err != nil || !slices.Equal(v.Values.([]uint32), a.want) {
						t.Errorf("%s = %v (%v), want %v", a.key, v.Values, err, a.want)
					}
				}
				if g, ok := fo.Tensor("rope_freqs.weight"); !ok || !slices.Equal(g.Dims, []uint64{2}) {
					t.Errorf("rope_freqs.weight: %v", g.Dims)
				}
			}
			if c.arch == oss {
				g, ok := fo.Tensor("blk.1.ffn_up_exps.weight")
				if !ok || !slices.Equal(g.Dims, []uint64{32, 32, 2}) {
					t.Errorf("blk.1.ffn_up_exps.weight: %v", g.Dims)
				}
			}
		})
	}
	for _, arch := range []string{g3, "SmolLM3ForCausalLM", gr, oss, "Ministral3ForCausalLM", "Gemma4ForCausalLM"} {
		if err := openModern(tinyModern(t, arch, nil, nil)); err != nil {
			t.Errorf("the %s folder the cases are made from: %v", arch, err)
		}
	}
}

// TestModernNames: the new families' tensor names, multimodal checkpoints'
// prefixes and towers.
func TestModernNames(t *testing.T) {
	cases := []struct {
		names func(string) (mapped, error)
		hf    string
		want  string
	}{
		{textNames(gemma3Table), "model.layers.4.pre_feedforward_layernorm.weight", "blk.4.ffn_norm.weight"},
		{textNames(gemma3Table), "model.layers.4.post_feedforward_layernorm.weight", "blk.4.post_ffw_norm.weight"},
		{textNames(gemma3Table), "model.layers.4.self_attn.k_norm.weight", "blk.4.attn_k_norm.weight"},
		{textNames(gemma3Table), "lm_head.weight", "output.weight"},
		{textNames(gemma3Table), "language_model.model.layers.2.mlp.up_proj.weight", "blk.2.ffn_up.weight"},
		{textNames(gemma3Table), "model.language_model.embed_tokens.weight", "token_embd.weight"},
		{textNames(gemma3Table), "vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", ""},
		{textNames(gemma3Table), "model.multi_modal_projector.mm_soft_emb_norm.weight", ""},
		{textNames(gptossTable), "model.layers.7.self_attn.sinks", "blk.7.attn_sinks.weight"},
		{textNames(gptossTable), "model.layers.7.mlp.router.bias", "blk.7.ffn_gate_inp.bias"},
		{textNames(gptossTable), "model.layers.7.post_attention_layernorm.weight", "blk.7.post_attention_norm.weight"},
		{textNames(gptossTable), "model.layers.7.self_attn.o_proj.bias", "blk.7.attn_output.bias"},
		{graniteNames, "model.layers.1.post_attention_layernorm.weight", "blk.1.ffn_norm.weight"},
		{graniteNames, "encoder.layers.0.weight", ""},
		{graniteNames, "model.layerwise_projectors.0.weight", ""},
	}
	for _, c := range cases {
		m, err := c.names(c.hf)
		if err != nil || m.name != c.want {
			t.Errorf("%s: %+v %v, want %q", c.hf, m, err, c.want)
		}
	}
}

// TestRopeParameters: transformers 5 states RoPE in rope_parameters (with
// rope_theta inside); the families written for rope_scaling read it too.
func TestRopeParameters(t *testing.T) {
	dir := tinyFolder(t, map[string]any{"rope_theta": nil, "rope_parameters": map[string]any{"rope_type": "linear", "factor": 2.0, "rope_theta": 5e5}}, nil)
	fo, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	meta, err := fo.MetaFile()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"llama.rope.freq_base": float32(5e5), "llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": float32(2)} {
		if v, ok := meta.Get(k); !ok || v.V != want {
			t.Errorf("%s = %v, want %v", k, v.V, want)
		}
	}
}
