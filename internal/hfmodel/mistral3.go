package hfmodel

import (
	"fmt"
	"math"
)

// Ministral 3 and Mistral 3 text as the 2026 converter writes them
// (conversion/mistral3.py): Mistral3Model hands a Mistral3ForConditionalGeneration
// (its text_config over the top level, the vision tower and projector
// dropped) or a Ministral3ForCausalLM to Ministral3Model, which is
// LlamaModel with architecture mistral3 — Llama's keys, Q/K rows permuted
// for interleaved RoPE, rope_freqs.weight for llama3-type scaling — plus,
// when model_type is "ministral3", the YaRN log multiplier (rope
// parameters' mscale_all_dim) and the llama-4 attention temperature
// (llama_4_scaling_beta). A model_type of "mistral4" is another model
// (llama.cpp's mistral4, DeepSeek-V2-like) and is refused.

var mistral3Family = &family{arch: "mistral3", params: mistral3Params, tensor: textNames(llamaTable), permuteQK: true}

func mistral3Params(h hparams, kv *kvs) error {
	mt, _ := h["model_type"].(string)
	if mt == "mistral4" {
		return fmt.Errorf("config.json: model_type mistral4 is llama.cpp's mistral4 architecture (not supported)")
	}
	if err := llamaModelParams(h, kv); err != nil {
		return err
	}
	if mt != "ministral3" {
		return nil
	}
	r, _ := ropeOf(h) // checked by textParams
	if len(r.full) == 0 {
		return fmt.Errorf("config.json: a ministral3 model needs rope_parameters (the converter asserts it)")
	}
	if t, _ := r.full["rope_type"].(string); t != "yarn" {
		return fmt.Errorf("config.json: %s rope_type = %v, but a ministral3 model's must be yarn (the converter asserts it)", r.where, r.full["rope_type"])
	}
	for _, k := range []struct{ from, key string }{
		{"mscale_all_dim", "rope.scaling.yarn_log_multiplier"}, {"llama_4_scaling_beta", "attention.temperature_scale"},
	} {
		v, ok := r.full[k.from]
		if !ok || v == nil {
			return fmt.Errorf("config.json: %s has no %s (a ministral3 model needs it)", r.where, k.from)
		}
		x, err := nonNegF32(r.where+" "+k.from, v)
		if err != nil {
			return err
		}
		kv.setArch(k.key, x)
	}
	return nil
}

// nonNegF32 is a config.json number that must be at least 0 and fit
// float32 (0 turns the feature off).
func nonNegF32(name string, v any) (float32, error) {
	x, ok := v.(float64)
	switch {
	case !ok:
		return 0, fmt.Errorf("config.json: %s = %v is not a number", name, v)
	case !(x >= 0):
		return 0, fmt.Errorf("config.json: %s = %s (must not be negative)", name, numStr(x))
	case float32(x) > math.MaxFloat32:
		return 0, fmt.Errorf("config.json: %s = %s is beyond float32", name, numStr(x))
	}
	return float32(x), nil
}
