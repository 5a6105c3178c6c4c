package hfmodel

import (
	"fmt"
	"maps"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
)

// Gemma 4 as the 2026 converter writes it (conversion/gemma.py,
// Gemma4Model, a Gemma3Model): TextModel's keys, Gemma 3's again with its
// defaults, then Gemma 4's — the KV-shared layers, the per-layer embedding
// width, the sliding pattern as a per-layer list (layer_types), the global
// head width (global_head_dim) beside the sliding one (head_dim), the
// experts' width, a per-layer FFN list when use_double_wide_mlp doubles the
// KV-shared layers' MLP, a per-layer KV head list when the global layers
// have their own (num_global_key_value_heads), and the RoPE widths of both
// kinds of layer. Unlike Gemma 3, the norms are stored as they are (its
// norm_shift is 0). The global layers' "proportional" RoPE becomes
// rope_freqs.weight: factor 1 on the first partial_rotary_factor of the
// pairs, 1e30 (no rotation) on the rest. A multimodal checkpoint's vision
// and audio towers and their embedders are dropped.
//
// The converter reads the config through AutoConfig, so the keys
// config.json omits take Gemma4TextConfig's defaults; Loom has no copy of
// them and takes the converter's own fallbacks (Gemma 3's for the shared
// keys, 0 for the per-layer embedding width), refusing a config.json that
// lacks a key the converter indexes (layer_types, num_kv_shared_layers,
// global_head_dim, head_dim, rope_parameters' full_attention).

var gemma4Family = &family{arch: "gemma4", params: gemma4Params, tensor: textNames(gemma4Table), extra: gemma4RopeFreqs,
	noSpacePrefix: true, noLlama3Freqs: true, tokModel: "gemma4"}

// gemma4Table: Gemma 3's names (norms included: Gemma 4 uses the same HF
// names), the MoE block beside the MLP (router, fused experts with their
// per-expert scale, the second pre- and the two extra post-FFN norms), the
// layer scalar and the per-layer embeddings (Gemma 3n's names).
var gemma4Table = merge(gemma3Table, map[string]string{
	"pre_feedforward_layernorm_2.weight":      "pre_ffw_norm_2.weight",
	"post_feedforward_layernorm_1.weight":     "post_ffw_norm_1.weight",
	"post_feedforward_layernorm_2.weight":     "post_ffw_norm_2.weight",
	"router.proj.weight":                      "ffn_gate_inp.weight",
	"router.scale":                            "ffn_gate_inp.scale",
	"router.per_expert_scale":                 "ffn_down_exps.scale",
	"experts.gate_up_proj":                    "ffn_gate_up_exps.weight", // [experts, 2·ffn, hidden]: gate rows, then up rows
	"experts.gate_up_proj.weight":             "ffn_gate_up_exps.weight",
	"experts.down_proj":                       "ffn_down_exps.weight",
	"experts.down_proj.weight":                "ffn_down_exps.weight",
	"layer_scalar":                            "layer_output_scale.weight",
	"layer_scalar.weight":                     "layer_output_scale.weight",
	"per_layer_input_gate.weight":             "inp_gate.weight",
	"per_layer_projection.weight":             "proj.weight",
	"post_per_layer_input_norm.weight":        "post_norm.weight",
	"model.embed_tokens_per_layer.weight":     "per_layer_token_embd.weight",
	"model.per_layer_model_projection.weight": "per_layer_model_proj.weight",
	"model.per_layer_projection_norm.weight":  "per_layer_proj_norm.weight",
})

// gemma4Rope is rope_parameters' full_attention part, which the converter
// indexes: rope_type "proportional" with its partial_rotary_factor.
func gemma4Rope(h hparams) (map[string]any, float64, error) {
	rp, ok := h["rope_parameters"].(map[string]any)
	if !ok {
		return nil, 0, fmt.Errorf("config.json: Gemma 4 needs rope_parameters with full_attention and sliding_attention")
	}
	full, ok := rp["full_attention"].(map[string]any)
	if !ok {
		return nil, 0, fmt.Errorf("config.json: rope_parameters full_attention is missing or not an object")
	}
	if t := full["rope_type"]; t != "proportional" {
		return nil, 0, fmt.Errorf("config.json: rope_parameters full_attention rope_type = %v, but the converter's Gemma 4 asserts proportional", t)
	}
	f, ok := full["partial_rotary_factor"].(float64)
	if !ok || !(f > 0 && f <= 1) {
		return nil, 0, fmt.Errorf("config.json: rope_parameters full_attention partial_rotary_factor = %v (want a fraction in (0, 1])", full["partial_rotary_factor"])
	}
	return full, f, nil
}

func gemma4Params(h hparams, kv *kvs) error {
	if _, _, err := gemma4Rope(h); err != nil {
		return err
	}
	// "proportional" is not a type TextModel knows: it writes no scaling
	// keys for it (rope_freqs.weight carries it).
	ht := maps.Clone(h)
	rp := maps.Clone(h["rope_parameters"].(map[string]any))
	full := maps.Clone(rp["full_attention"].(map[string]any))
	delete(full, "rope_type")
	rp["full_attention"], ht["rope_parameters"] = full, rp
	if err := textParams(ht, kv); err != nil {
		return err
	}
	n, _ := h.positive("num_hidden_layers", "n_layer", "num_layers")
	// Gemma3Model.set_gguf_parameters' keys, with its defaults.
	if err := gemmaCounts(h, kv); err != nil {
		return err
	}
	hdSWA, err := h.positive("head_dim")
	if err != nil {
		return err
	}
	kv.putArch("attention.key_length", hdSWA)
	kv.putArch("attention.value_length", hdSWA)
	r, _ := ropeOf(ht)
	theta := float32(1e6)
	if v, ok := r.full["rope_theta"]; ok && v != nil {
		theta, _ = posF32("rope_theta", v) // checked by textParams
	}
	kv.putArch("rope.freq_base", theta)
	if v := h["attn_logit_softcapping"]; v != nil {
		return fmt.Errorf("config.json: attn_logit_softcapping = %v (Gemma 4 has none; the converter refuses it)", v)
	}
	if v, ok := h.num("final_logit_softcapping"); ok && v != 0 {
		c, err := posF32("final_logit_softcapping", v)
		if err != nil {
			return err
		}
		kv.setArch("final_logit_softcapping", c)
	}
	if p, ok := h.num("sliding_window_pattern"); !ok || p != 1 {
		if h["sliding_window"] == nil {
			return fmt.Errorf("config.json: sliding_window is missing or null")
		}
		w, err := h.count(-1, "sliding_window")
		if err != nil {
			return err
		}
		kv.setArch("attention.sliding_window", w)
	}
	kvSWA, err := h.count(4, "num_key_value_heads")
	if err == nil && kvSWA == 0 {
		err = fmt.Errorf("config.json: num_key_value_heads = 0 (must be positive)")
	}
	if err != nil {
		return err
	}
	kv.putArch("attention.head_count_kv", kvSWA)

	// Gemma4Model's own.
	if h["num_kv_shared_layers"] == nil {
		return fmt.Errorf("config.json: missing num_kv_shared_layers")
	}
	shared, err := h.count(-1, "num_kv_shared_layers")
	if err != nil {
		return err
	}
	if shared >= n {
		return fmt.Errorf("config.json: num_kv_shared_layers = %d leaves none of the %d layers with its own KV", shared, n)
	}
	kv.setArch("attention.shared_kv_layers", shared)
	pl, err := h.count(0, "hidden_size_per_layer_input")
	if err != nil {
		return err
	}
	kv.setArch("embedding_length_per_layer_input", pl)
	swa, err := h.gemma4Layers(int(n))
	if err != nil {
		return err
	}
	kv.setArch("attention.sliding_window_pattern", gguf.Array{Elem: gguf.Bool, Values: swa})
	hdFull, err := h.positive("global_head_dim")
	if err != nil {
		return fmt.Errorf("%w (the global layers' head width; Loom does not read per_layer_config)", err)
	}
	kv.putArch("attention.key_length", hdFull)
	kv.putArch("attention.value_length", hdFull)
	kv.setArch("attention.key_length_swa", hdSWA)
	kv.setArch("attention.value_length_swa", hdSWA)
	if k, _ := h.first("expert_intermediate_size", "moe_intermediate_size"); k != "" {
		ff, err := h.positive(k)
		if err != nil {
			return err
		}
		kv.setArch("expert_feed_forward_length", ff)
	}
	if double, _ := h["use_double_wide_mlp"].(bool); double {
		ff, err := h.positive("intermediate_size")
		if err != nil {
			return err
		}
		ffs := make([]uint32, n)
		for i := range ffs {
			ffs[i] = ff
			if uint32(i) >= n-shared {
				ffs[i] = 2 * ff // ff ≤ model.MaxWidth: no overflow
			}
		}
		kv.putArch("feed_forward_length", ffs)
	}
	if h["num_global_key_value_heads"] != nil {
		kvFull, err := h.positive("num_global_key_value_heads")
		if err != nil {
			return err
		}
		heads := make([]uint32, n)
		for i := range heads {
			heads[i] = kvFull
			if swa[i] {
				heads[i] = kvSWA
			}
		}
		kv.putArch("attention.head_count_kv", heads)
	}
	// The sliding layers' RoPE width reads a partial_rotary_factor at the
	// top of rope_parameters (not in sliding_attention): 1 in released
	// models.
	swaRot := float64(hdSWA)
	if f, ok := h["rope_parameters"].(map[string]any)["partial_rotary_factor"]; ok {
		x, ok := f.(float64)
		if !ok || !(x > 0 && x <= 1) {
			return fmt.Errorf("config.json: rope_parameters partial_rotary_factor = %v (want a fraction in (0, 1])", f)
		}
		swaRot *= x
	}
	kv.setArch("rope.dimension_count", hdFull)
	kv.setArch("rope.dimension_count_swa", uint32(swaRot))
	return nil
}

// gemma4Layers reads layer_types: which of the n layers slide.
func (h hparams) gemma4Layers(n int) ([]bool, error) {
	list, ok := h["layer_types"].([]any)
	if !ok {
		return nil, fmt.Errorf("config.json: layer_types is missing or not a list (Gemma 4 states each layer's attention)")
	}
	if len(list) != n {
		return nil, fmt.Errorf("config.json: layer_types has %d entries for %d layers", len(list), n)
	}
	swa := make([]bool, n)
	for i, v := range list {
		switch v {
		case "sliding_attention":
			swa[i] = true
		case "full_attention":
		default:
			return nil, fmt.Errorf("config.json: layer_types[%d] = %v (want full_attention or sliding_attention)", i, v)
		}
	}
	return swa, nil
}

// gemma4RopeFreqs is Gemma4Model.generate_extra_tensors: the global layers'
// frequency factors, 1 for the rotated pairs and 1e30 for the others.
func gemma4RopeFreqs(h hparams) ([]model.Tensor, error) {
	_, f, err := gemma4Rope(h)
	if err != nil {
		return nil, err
	}
	hd, err := h.positive("global_head_dim")
	if err != nil {
		return nil, err
	}
	rot := int(float64(hd) * f / 2)
	v := make([]float32, hd/2)
	for i := range v {
		v[i] = 1
		if i >= rot {
			v[i] = 1e30
		}
	}
	return []model.Tensor{rf32("rope_freqs.weight", v)}, nil
}
