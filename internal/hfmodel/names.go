package hfmodel

import (
	"fmt"
	"regexp"
	"strings"
)

// Hugging Face tensor names → GGUF names, as llama.cpp's converter maps
// them (its tensor_mapping.py), for the families here.

// A base model saved by sentence-transformers has no "model." (Qwen3-Embedding,
// EmbeddingGemma: "layers.N."); BERT's blocks are "[bert.]encoder.layer.N."
// and nomic-bert's "encoder.layers.N.".
var layerPrefix = regexp.MustCompile(`^(?:model\.layers|transformer\.h|h|layers|(?:bert\.)?encoder\.layers?)\.(\d+)\.`)

// blockName replaces a layer prefix ("model.layers.3.", "transformer.h.3.")
// with GGUF's "blk.3.".
func blockName(name string) string {
	return layerPrefix.ReplaceAllString(name, "blk.$1.")
}

// textName is a tensor name as the converter's ModelBase.filter_tensors
// leaves it: a multimodal checkpoint's "language_model." dropped
// ("model.language_model.layers.0." and "language_model.model.layers.0."
// both become "model.layers.0.").
func textName(name string) string { return strings.ReplaceAll(name, "language_model.", "") }

// Suffix tables: the part of a name after "blk.N." (or the whole name for
// tensors outside the blocks).
var llamaTable = map[string]string{
	"model.embed_tokens.weight":            "token_embd.weight",
	"model.norm.weight":                    "output_norm.weight",
	"lm_head.weight":                       "output.weight",
	"input_layernorm.weight":               "attn_norm.weight",
	"self_attn.q_proj.weight":              "attn_q.weight",
	"self_attn.q_proj.bias":                "attn_q.bias",
	"self_attn.k_proj.weight":              "attn_k.weight",
	"self_attn.k_proj.bias":                "attn_k.bias",
	"self_attn.v_proj.weight":              "attn_v.weight",
	"self_attn.v_proj.bias":                "attn_v.bias",
	"self_attn.o_proj.weight":              "attn_output.weight",
	"self_attn.o_proj.bias":                "attn_output.bias",
	"self_attn.qkv_proj.weight":            "attn_qkv.weight",
	"self_attn.q_norm.weight":              "attn_q_norm.weight",
	"self_attn.k_norm.weight":              "attn_k_norm.weight",
	"post_attention_layernorm.weight":      "ffn_norm.weight",
	"mlp.gate_proj.weight":                 "ffn_gate.weight",
	"mlp.up_proj.weight":                   "ffn_up.weight",
	"mlp.down_proj.weight":                 "ffn_down.weight",
	"mlp.gate_up_proj.weight":              "ffn_up.weight",
	"block_sparse_moe.gate.weight":         "ffn_gate_inp.weight",
	"mlp.gate.weight":                      "ffn_gate_inp.weight",
	"self_attn.rotary_emb.inv_freq":        "",
	"block_sparse_moe.experts.*.w1.weight": "ffn_gate_exps.weight",
	"block_sparse_moe.experts.*.w3.weight": "ffn_up_exps.weight",
	"block_sparse_moe.experts.*.w2.weight": "ffn_down_exps.weight",
	"mlp.experts.*.gate_proj.weight":       "ffn_gate_exps.weight",
	"mlp.experts.*.up_proj.weight":         "ffn_up_exps.weight",
	"mlp.experts.*.down_proj.weight":       "ffn_down_exps.weight",
}

var gemma2Table = merge(llamaTable, map[string]string{
	"post_attention_layernorm.weight":   "post_attention_norm.weight",
	"pre_feedforward_layernorm.weight":  "ffn_norm.weight",
	"post_feedforward_layernorm.weight": "post_ffw_norm.weight",
	"lm_head.weight":                    "", // tied
})

var gpt2Table = map[string]string{
	"wte.weight":         "token_embd.weight",
	"wpe.weight":         "position_embd.weight",
	"ln_f.weight":        "output_norm.weight",
	"ln_f.bias":          "output_norm.bias",
	"lm_head.weight":     "", // tied: the converter writes a copy of wte
	"ln_1.weight":        "attn_norm.weight",
	"ln_1.bias":          "attn_norm.bias",
	"attn.c_attn.weight": "attn_qkv.weight",
	"attn.c_attn.bias":   "attn_qkv.bias",
	"attn.c_proj.weight": "attn_output.weight",
	"attn.c_proj.bias":   "attn_output.bias",
	"ln_2.weight":        "ffn_norm.weight",
	"ln_2.bias":          "ffn_norm.bias",
	"mlp.c_fc.weight":    "ffn_up.weight",
	"mlp.c_fc.bias":      "ffn_up.bias",
	"mlp.c_proj.weight":  "ffn_down.weight",
	"mlp.c_proj.bias":    "ffn_down.bias",
	"attn.bias":          "", // the causal mask buffer
	"attn.masked_bias":   "",
}

// gemma3Table: Gemma 2's names with Q/K norms (in llamaTable) and a head
// the converter keeps (Gemma3Model, unlike Gemma2Model, does not skip
// lm_head.weight; a tied head is dropped in build).
var gemma3Table = merge(gemma2Table, map[string]string{"lm_head.weight": "output.weight"})

// gptossTable: gpt-oss's attention (with biases and sinks) and router; its
// experts are converted by gptossExperts.
var gptossTable = merge(llamaTable, map[string]string{
	"post_attention_layernorm.weight": "post_attention_norm.weight",
	"self_attn.sinks":                 "attn_sinks.weight", // GptOssModel adds ".weight"
	"mlp.router.weight":               "ffn_gate_inp.weight",
	"mlp.router.bias":                 "ffn_gate_inp.bias",
})

func merge(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

var expertIndex = regexp.MustCompile(`\.experts\.(\d+)\.`)

// mapped is a Hugging Face tensor's place in the GGUF file.
type mapped struct {
	name   string // GGUF name ("" drops the tensor)
	expert int    // expert index of a 3-D expert tensor (-1: none)
}

// mapName maps one name with table; unknown names are an error naming them.
func mapName(table map[string]string, hf string) (mapped, error) {
	name := blockName(strings.TrimPrefix(textName(hf), "transformer."))
	prefix, rest := "", name
	if strings.HasPrefix(name, "blk.") {
		i := strings.Index(name[4:], ".")
		prefix, rest = name[:4+i+1], name[4+i+1:]
	}
	m := mapped{expert: -1}
	if e := expertIndex.FindStringSubmatchIndex(rest); e != nil {
		fmt.Sscan(rest[e[2]:e[3]], &m.expert)
		rest = rest[:e[0]] + ".experts.*." + rest[e[1]:]
	}
	to, ok := table[rest]
	if !ok {
		return m, fmt.Errorf("tensor %q has no GGUF name for this architecture", hf)
	}
	if to != "" {
		m.name = prefix + to
	}
	return m, nil
}

func llamaNames(n string) (mapped, error)  { return mapName(llamaTable, n) }
func gemma2Names(n string) (mapped, error) { return mapName(gemma2Table, n) }
func gpt2Names(n string) (mapped, error)   { return mapName(gpt2Table, n) }

// multimodal reports whether the converter's TextModel.filter_tensors
// drops name as part of a vision or audio tower (a Gemma 3 4B+ folder's
// vision_tower and multi_modal_projector).
func multimodal(name string) bool {
	for _, p := range []string{"mlp", "vit.", "vpm.", "siglip2.", "conformer.", "merger.", "resampler.", "sound_encoder.", "sound_projection.", "speech_embeddings."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	for _, s := range []string{"visual.", "vision.", "audio.", "talker.", "vision_", "audio_", "token2wav.", "code2wav.", "projector.",
		"pre_mm_projector_norm", "image_newline", "view_seperator", "patch_embed", "patch_merger.", "patch_merge_mlp.", "model.connector."} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// textNames maps with table after dropping multimodal tensors, as the
// converter's TextModel classes (Gemma 3, SmolLM3, gpt-oss) do.
func textNames(table map[string]string) func(string) (mapped, error) {
	return func(n string) (mapped, error) {
		if multimodal(n) {
			return mapped{expert: -1}, nil
		}
		return mapName(table, n)
	}
}

// graniteNames: GraniteModel.filter_tensors also drops Granite Vision's
// encoder and projectors.
func graniteNames(n string) (mapped, error) {
	if strings.HasPrefix(n, "encoder.") || strings.Contains(n, "image_") || strings.Contains(n, "layerwise_projectors") || strings.Contains(n, "spatial_projectors") {
		return mapped{expert: -1}, nil
	}
	return textNames(llamaTable)(n)
}
