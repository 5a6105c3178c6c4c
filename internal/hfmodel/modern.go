package hfmodel

import (
	"fmt"
	"maps"
	"math"
)

// The 2025-26 families (Gemma 3, SmolLM3, Granite 3, gpt-oss) as the 2026
// converter writes them (convert_hf_to_gguf.py and its conversion/*.py):
// TextModel.set_gguf_parameters' keys, each where it writes them, then the
// family's own. Where llama.cpp fixes what config.json states — Gemma 3's
// five sliding layers to one global, SmolLM3's NoPE on every fourth layer,
// gpt-oss's window on every other layer and its SwiGLU constants — a
// config.json that says otherwise is refused, naming its key, rather than
// run as another model.

// textConfig is config.json as the converter's TextModel sees it: a
// multimodal checkpoint's text_config over the top level, and the config
// class's defaults (which AutoConfig supplies) for the keys config.json
// omits — transformers writes a nested text_config with only the values
// that differ from them.
func (h hparams) textConfig(defaults hparams) (hparams, error) {
	out := hparams{}
	maps.Copy(out, h)
	switch tc := h["text_config"].(type) {
	case nil:
	case map[string]any:
		maps.Copy(out, tc)
	default:
		return nil, fmt.Errorf("config.json: text_config is not an object")
	}
	for k, v := range defaults {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out, nil
}

// gemma3Defaults are transformers' Gemma3TextConfig defaults.
var gemma3Defaults = hparams{
	"vocab_size": 262208.0, "hidden_size": 2304.0, "intermediate_size": 9216.0, "num_hidden_layers": 26.0,
	"num_attention_heads": 8.0, "num_key_value_heads": 4.0, "head_dim": 256.0, "max_position_embeddings": 131072.0,
	"rms_norm_eps": 1e-6, "rope_theta": 1e6, "rope_local_base_freq": 1e4, "query_pre_attn_scalar": 256.0,
	"sliding_window": 4096.0, "sliding_window_pattern": 6.0, "tie_word_embeddings": true,
}

// posF32 is a config.json number that must be positive and fit float32.
func posF32(name string, v any) (float32, error) {
	x, ok := v.(float64)
	switch {
	case !ok:
		return 0, fmt.Errorf("config.json: %s = %v is not a number", name, v)
	case !(x > 0):
		return 0, fmt.Errorf("config.json: %s = %s (must be positive)", name, numStr(x))
	case float32(x) > math.MaxFloat32:
		return 0, fmt.Errorf("config.json: %s = %s is beyond float32", name, numStr(x))
	}
	return float32(x), nil
}

// optCounts sets each key from the first of its fields config.json has
// (a positive count).
func optCounts(h hparams, kv *kvs, fields []countField) error {
	for _, f := range fields {
		if _, ok := h.num(f.from...); !ok {
			continue
		}
		v, err := h.positive(f.from...)
		if err != nil {
			return err
		}
		kv.setArch(f.key, v)
	}
	return nil
}

type countField struct {
	key  string
	from []string
}

// textParams is TextModel.set_gguf_parameters (llama.cpp, 2026): block
// count, context, widths and heads, RoPE scaling, the RoPE bases of the
// global and the sliding layers, norm epsilons, experts and head width.
func textParams(h hparams, kv *kvs) error {
	n, err := h.positive("num_hidden_layers", "n_layer", "num_layers")
	if err != nil {
		return err
	}
	kv.setArch("block_count", n)
	if err := optCounts(h, kv, []countField{
		{"context_length", []string{"max_position_embeddings", "n_ctx", "n_positions"}},
		{"embedding_length", []string{"hidden_size", "n_embd"}},
		{"feed_forward_length", []string{"intermediate_size", "n_inner"}},
		{"attention.head_count", []string{"num_attention_heads", "n_head"}},
		{"attention.head_count_kv", []string{"num_key_value_heads"}},
	}); err != nil {
		return err
	}
	r, err := ropeOf(h)
	if err != nil {
		return err
	}
	if err := r.scaling(kv); err != nil {
		return err
	}
	if v, ok := r.full["rope_theta"]; ok && v != nil {
		theta, err := posF32("rope_theta", v)
		if err != nil {
			return err
		}
		kv.setArch("rope.freq_base", theta)
	}
	if r.swaTheta != nil {
		theta, err := posF32(r.swaKey, r.swaTheta)
		if err != nil {
			return err
		}
		kv.setArch("rope.freq_base_swa", theta)
	}
	for _, e := range []struct{ from, key string }{
		{"rms_norm_eps", "attention.layer_norm_rms_epsilon"}, {"layer_norm_eps", "attention.layer_norm_epsilon"},
	} {
		if v, ok := h.num(e.from); ok {
			if !(v >= 0) || float32(v) > math.MaxFloat32 {
				return fmt.Errorf("config.json: %s = %s (must be a small non-negative number)", e.from, numStr(v))
			}
			kv.setArch(e.key, float32(v))
		}
	}
	if err := optCounts(h, kv, []countField{
		{"expert_count", []string{"num_local_experts", "num_experts", "n_routed_experts"}},
		{"expert_used_count", []string{"num_experts_per_tok", "num_experts_per_token", "top_k_experts"}},
		{"attention.key_length", []string{"head_dim"}},
		{"attention.value_length", []string{"head_dim"}},
	}); err != nil {
		return err
	}
	return nil
}

// rope is what TextModel.__init__ makes of RoPE: rope_parameters
// (transformers 5) or rope_scaling, the top-level rope_theta, local base,
// type and original context mirrored into it unless it is split per
// attention type; full is the part for the global layers.
type rope struct {
	full     map[string]any
	where    string // full's name in errors
	swaKey   string // the sliding layers' base: its key and value (nil: none)
	swaTheta any
}

func ropeOf(h hparams) (rope, error) {
	r := rope{where: "rope_scaling"}
	raw := h["rope_scaling"]
	if v, ok := h["rope_parameters"]; ok {
		raw, r.where = v, "rope_parameters"
	}
	rp := map[string]any{}
	switch m := raw.(type) {
	case nil:
	case map[string]any:
		maps.Copy(rp, m)
	default:
		return r, fmt.Errorf("config.json: %s is not an object", r.where)
	}
	full, hasFull := rp["full_attention"]
	swa, hasSWA := rp["sliding_attention"]
	if !hasFull && !hasSWA {
		if k, v := h.first("local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta", "rope_local_base_freq"); k != "" {
			r.swaKey, r.swaTheta = k, v
		}
		if _, ok := rp["rope_theta"]; !ok {
			if k, v := h.first("global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta", "rotary_emb_base"); k != "" {
				rp["rope_theta"] = v
			}
		}
		if _, ok := rp["rope_type"]; !ok && rp["type"] != nil {
			rp["rope_type"] = rp["type"]
		}
		if _, ok := rp["original_max_position_embeddings"]; !ok && h["original_max_position_embeddings"] != nil {
			rp["original_max_position_embeddings"] = h["original_max_position_embeddings"]
		}
		r.full = rp
		return r, nil
	}
	r.full = rp
	if hasFull {
		m, ok := full.(map[string]any)
		if !ok {
			return r, fmt.Errorf("config.json: %s full_attention is not an object", r.where)
		}
		r.full, r.where = m, r.where+" full_attention"
	}
	if hasSWA {
		m, ok := swa.(map[string]any)
		if !ok {
			return r, fmt.Errorf("config.json: %s sliding_attention is not an object", r.where)
		}
		if v := m["rope_theta"]; v != nil {
			r.swaKey, r.swaTheta = "rope_parameters sliding_attention rope_theta", v
		}
	}
	return r, nil
}

// ropeDict is config.json's RoPE object — rope_parameters (transformers 5)
// or rope_scaling — or its full_attention part if split per attention
// type (nil: none).
func ropeDict(h hparams) map[string]any {
	rs, ok := h["rope_parameters"].(map[string]any)
	if !ok {
		rs, ok = h["rope_scaling"].(map[string]any)
	}
	if !ok {
		return nil
	}
	if full, ok := rs["full_attention"].(map[string]any); ok {
		return full
	}
	return rs
}

// first is the first of keys config.json gives a non-null value.
func (h hparams) first(keys ...string) (string, any) {
	for _, k := range keys {
		if v := h[k]; v != nil {
			return k, v
		}
	}
	return "", nil
}

// scaling writes the RoPE scaling keys: linear (type and factor), YaRN
// (also the original context and the factors config.json gives) and
// LongRoPE (su or longrope: the type only); default,
// dynamic (handled by no llama.cpp family here) and llama3 (rope_freqs,
// for Llama-derived families) write none.
func (r rope) scaling(kv *kvs) error {
	v := r.full["rope_type"]
	if v == nil {
		return nil
	}
	typ, ok := v.(string)
	if !ok {
		return fmt.Errorf("config.json: %s rope_type = %v is not a string", r.where, v)
	}
	factor := r.full["factor"]
	switch typ {
	case "linear", "yarn":
		if factor == nil { // the converter writes no scaling without a factor
			return nil
		}
		f, err := posF32(r.where+" factor", factor)
		if err != nil {
			return err
		}
		kv.setArch("rope.scaling.type", typ)
		kv.setArch("rope.scaling.factor", f)
		if typ == "linear" {
			return nil
		}
		orig, ok := r.full["original_max_position_embeddings"].(float64)
		if !ok {
			return fmt.Errorf("config.json: %s of type yarn has no original_max_position_embeddings", r.where)
		}
		if orig < 1 || orig != math.Trunc(orig) || orig > math.MaxInt32 {
			return fmt.Errorf("config.json: %s original_max_position_embeddings = %s is not a positive count", r.where, numStr(orig))
		}
		kv.setArch("rope.scaling.original_context_length", uint32(orig))
		for _, y := range []struct {
			from []string
			key  string
		}{
			{[]string{"extrapolation_factor"}, "rope.scaling.yarn_ext_factor"},
			{[]string{"attention_factor", "attn_factor"}, "rope.scaling.yarn_attn_factor"},
			{[]string{"beta_fast"}, "rope.scaling.yarn_beta_fast"},
			{[]string{"beta_slow"}, "rope.scaling.yarn_beta_slow"},
		} {
			k, v := hparams(r.full).first(y.from...)
			if k == "" {
				continue
			}
			x, err := posF32(r.where+" "+k, v)
			if err != nil {
				return err
			}
			kv.setArch(y.key, x)
		}
	case "su", "longrope": // the type alone: Phi3MiniModel writes the factors, and no type
		kv.setArch("rope.scaling.type", "longrope")
	case "default", "dynamic", "llama3":
	default:
		return fmt.Errorf("config.json: %s type %q is not supported", r.where, typ)
	}
	return nil
}

// llamaModelParams is LlamaModel.set_gguf_parameters: TextModel's keys,
// vocab_size and rope.dimension_count.
func llamaModelParams(h hparams, kv *kvs) error {
	if err := textParams(h, kv); err != nil {
		return err
	}
	v, err := h.count(-1, "vocab_size")
	if err != nil {
		return err
	}
	kv.setArch("vocab_size", v)
	rd, err := ropeDims(h)
	if err != nil {
		return err
	}
	kv.setArch("rope.dimension_count", rd)
	return nil
}

// gemma3Params is Gemma3Model.set_gguf_parameters: TextModel's keys, then
// context, heads, epsilon, head width and global RoPE base again with
// Gemma 3's defaults (in their places), the final soft-cap when set, and
// the sliding window unless sliding_window_pattern is 1 (every layer
// global). llama.cpp fixes the rest: of every 6 layers the first 5 slide,
// and queries scale by 1/√head_dim (by 1/√(hidden/heads) for the 62-layer
// 27B); a config.json saying otherwise is refused.
func gemma3Params(h hparams, kv *kvs) error {
	if err := textParams(h, kv); err != nil {
		return err
	}
	n, _ := h.positive("num_hidden_layers", "n_layer", "num_layers")
	if err := gemmaCounts(h, kv, gemmaCount{"attention.key_length", "head_dim", 256}, gemmaCount{"attention.value_length", "head_dim", 256}); err != nil {
		return err
	}
	r, _ := ropeOf(h)
	theta := float32(1e6)
	if v, ok := r.full["rope_theta"]; ok && v != nil {
		theta, _ = posF32("rope_theta", v) // checked by textParams
	}
	kv.putArch("rope.freq_base", theta)
	if v := h["attn_logit_softcapping"]; v != nil {
		return fmt.Errorf("config.json: attn_logit_softcapping = %v (Gemma 3 has none; the converter refuses it)", v)
	}
	if v, ok := h.num("final_logit_softcapping"); ok && v != 0 {
		c, err := posF32("final_logit_softcapping", v)
		if err != nil {
			return err
		}
		kv.setArch("final_logit_softcapping", c)
	}
	pattern, ok := h.num("sliding_window_pattern")
	switch {
	case !ok || pattern == 6:
		pattern = 6
	case pattern == 1: // no sliding window: every layer global
	default:
		return fmt.Errorf("config.json: sliding_window_pattern = %s, but llama.cpp's Gemma 3 has 6 (5 sliding layers, then 1 global) or 1 (no window)", numStr(pattern))
	}
	if pattern != 1 {
		if h["sliding_window"] == nil {
			return fmt.Errorf("config.json: sliding_window is missing or null")
		}
		w, err := h.count(-1, "sliding_window")
		if err != nil {
			return err
		}
		kv.setArch("attention.sliding_window", w)
	}
	kvHeads, err := h.count(4, "num_key_value_heads")
	if err == nil && kvHeads == 0 {
		err = fmt.Errorf("config.json: num_key_value_heads = 0 (must be positive)")
	}
	if err != nil {
		return err
	}
	kv.putArch("attention.head_count_kv", kvHeads)
	if err := h.checkLayerTypes(int(n), "llama.cpp's Gemma 3 (5 sliding layers, then 1 global)", func(i int) bool {
		return pattern != 1 && (i+1)%6 != 0
	}); err != nil {
		return err
	}
	if q, ok := h.num("query_pre_attn_scalar"); ok {
		heads, _ := h.count(8, "num_attention_heads")
		hd, _ := h.count(256, "head_dim")
		dim, _ := h.count(0, "hidden_size")
		want, what := float64(hd), "head_dim"
		if n == 62 && heads > 0 { // llama.cpp's 27B rule
			want, what = float64(dim/heads), "hidden_size / num_attention_heads for the 62-layer model"
		}
		if q != want {
			return fmt.Errorf("config.json: query_pre_attn_scalar = %s, but llama.cpp scales Gemma 3 queries by 1/√%s (%s)", numStr(q), numStr(want), what)
		}
	}
	return nil
}

// checkLayerTypes refuses a layer_types list that differs from the layers
// llama.cpp makes slide (sliding(i)), naming the first that differs.
func (h hparams) checkLayerTypes(n int, rule string, sliding func(i int) bool) error {
	raw, ok := h["layer_types"]
	if !ok || raw == nil {
		return nil
	}
	list, ok := raw.([]any)
	if !ok {
		return fmt.Errorf("config.json: layer_types is not a list")
	}
	if len(list) != n {
		return fmt.Errorf("config.json: layer_types has %d entries for %d layers", len(list), n)
	}
	for i, v := range list {
		want := "full_attention"
		if sliding(i) {
			want = "sliding_attention"
		}
		s, _ := v.(string)
		if s != "full_attention" && s != "sliding_attention" {
			return fmt.Errorf("config.json: layer_types[%d] = %v (want full_attention or sliding_attention)", i, v)
		}
		if s != want {
			return fmt.Errorf("config.json: layer_types[%d] = %s, but %s makes layer %d %s", i, s, rule, i, want)
		}
	}
	return nil
}

// smollm3Params: SmolLM3Model is LlamaModel with architecture smollm3;
// llama.cpp skips RoPE on every fourth layer (n_no_rope_layer_step = 4)
// whatever no_rope_layers says, and has no sliding window for it.
func smollm3Params(h hparams, kv *kvs) error {
	if err := llamaModelParams(h, kv); err != nil {
		return err
	}
	n, _ := h.positive("num_hidden_layers", "n_layer", "num_layers")
	const step = 4
	switch raw := h["no_rope_layers"].(type) {
	case nil:
		if v, ok := h.num("no_rope_layer_interval"); ok && v != step {
			return fmt.Errorf("config.json: no_rope_layer_interval = %s, but llama.cpp's SmolLM3 skips RoPE on every %dth layer", numStr(v), step)
		}
	case []any:
		if len(raw) < int(n) {
			return fmt.Errorf("config.json: no_rope_layers has %d entries for %d layers", len(raw), n)
		}
		for i := range int(n) {
			v, ok := raw[i].(float64)
			if !ok || (v != 0 && v != 1) {
				return fmt.Errorf("config.json: no_rope_layers[%d] = %v (want 1 for RoPE, 0 for none)", i, raw[i])
			}
			if want := (i+1)%step != 0; (v == 1) != want {
				return fmt.Errorf("config.json: no_rope_layers[%d] = %s, but llama.cpp's SmolLM3 skips RoPE on every %dth layer (3, 7, 11, …) only", i, numStr(v), step)
			}
		}
	default:
		return fmt.Errorf("config.json: no_rope_layers is not a list")
	}
	if use, _ := h["use_sliding_window"].(bool); use && h["sliding_window"] != nil && h["layer_types"] == nil {
		return fmt.Errorf("config.json: use_sliding_window is true, but llama.cpp's SmolLM3 has no sliding window")
	}
	return h.checkLayerTypes(int(n), "llama.cpp's SmolLM3 (no sliding window)", func(int) bool { return false })
}

// graniteParams is GraniteModel.set_gguf_parameters: LlamaModel's keys
// with head_dim ignored (the head is hidden_size / heads), then the four
// multipliers, 1 where config.json omits them (GraniteConfig's defaults).
// The converter drops a multiplier of 0; Loom refuses it, and any value
// that is not positive.
func graniteParams(h hparams, kv *kvs) error {
	h = maps.Clone(h)
	delete(h, "head_dim")
	if err := llamaModelParams(h, kv); err != nil {
		return err
	}
	for _, m := range []struct{ from, key string }{
		{"attention_multiplier", "attention.scale"}, {"embedding_multiplier", "embedding_scale"},
		{"residual_multiplier", "residual_scale"}, {"logits_scaling", "logit_scale"},
	} {
		v := h[m.from]
		if v == nil {
			v = 1.0
		}
		x, err := posF32(m.from, v)
		if err != nil {
			return err
		}
		kv.setArch(m.key, x)
	}
	return nil
}

// gptossParams is GptOssModel.set_gguf_parameters: TextModel's keys, the
// sliding window and the experts' width (intermediate_size). llama.cpp
// slides every other layer from the first and fixes the clamped SwiGLU
// (alpha 1.702, limit 7).
func gptossParams(h hparams, kv *kvs) error {
	if err := textParams(h, kv); err != nil {
		return err
	}
	if h["sliding_window"] == nil {
		return fmt.Errorf("config.json: sliding_window is missing or null")
	}
	w, err := h.count(-1, "sliding_window")
	if err != nil {
		return err
	}
	kv.setArch("attention.sliding_window", w)
	ff, err := h.positive("intermediate_size")
	if err != nil {
		return err
	}
	kv.setArch("expert_feed_forward_length", ff)
	for _, c := range []struct {
		key  string
		want float64
	}{{"swiglu_alpha", 1.702}, {"swiglu_limit", 7}} {
		if v, ok := h.num(c.key); ok && v != c.want {
			return fmt.Errorf("config.json: %s = %s, but llama.cpp's gpt-oss fixes it at %s", c.key, numStr(v), numStr(c.want))
		}
	}
	n, _ := h.positive("num_hidden_layers", "n_layer", "num_layers")
	return h.checkLayerTypes(int(n), "llama.cpp's gpt-oss (a window on every other layer from the first)", func(i int) bool { return i%2 == 0 })
}

// gemmaCount is a count Gemma's converters write again with their config
// class's default: GGUF key, config.json field, default.
type gemmaCount struct {
	key, from string
	def       int
}

// gemmaCounts writes the context and head counts (then more) with Gemma's
// defaults, each positive, and the RMS epsilon (1e-6 unless config.json
// says), as Gemma3Model.set_gguf_parameters and Gemma 4's after it do.
func gemmaCounts(h hparams, kv *kvs, more ...gemmaCount) error {
	for _, c := range append([]gemmaCount{{"context_length", "max_position_embeddings", 131072}, {"attention.head_count", "num_attention_heads", 8}}, more...) {
		v, err := h.count(c.def, c.from)
		if err == nil && v == 0 {
			err = fmt.Errorf("config.json: %s = 0 (must be positive)", c.from)
		}
		if err != nil {
			return err
		}
		kv.putArch(c.key, v)
	}
	eps := 1e-6
	if v, ok := h.num("rms_norm_eps"); ok {
		eps = v
	}
	kv.putArch("attention.layer_norm_rms_epsilon", float32(eps))
	return nil
}
