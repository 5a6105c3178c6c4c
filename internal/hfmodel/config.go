package hfmodel

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/safetensors"
)

// hparams is a config.json.
type hparams map[string]any

func readJSON(path string, limit int64, v any) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st.Size() > limit {
		return fmt.Errorf("%s: %d bytes is over the limit of %d", path, st.Size(), limit)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// num finds the first of keys that is a number.
func (h hparams) num(keys ...string) (float64, bool) {
	for _, k := range keys {
		if v, ok := h[k].(float64); ok {
			return v, true
		}
	}
	return 0, false
}

// numeric are the hyperparameters config.json states as numbers; checkTypes
// refuses any of them given as something else (a string, a list) rather
// than let num pass over it as absent.
var numeric = []string{
	"max_position_embeddings", "n_ctx", "n_positions", "hidden_size", "n_embd", "num_hidden_layers", "n_layer", "num_layers",
	"intermediate_size", "n_inner", "num_attention_heads", "n_head", "num_key_value_heads", "head_dim", "vocab_size",
	"rope_theta", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon",
	"num_local_experts", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
	"partial_rotary_factor", "sliding_window", "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
	"rope_local_base_freq", "sliding_window_pattern", "no_rope_layer_interval", "embedding_multiplier", "residual_multiplier",
	"attention_multiplier", "logits_scaling", "swiglu_alpha", "swiglu_limit",
	"n_routed_experts", "num_experts_per_token", "top_k_experts", "num_kv_shared_layers", "hidden_size_per_layer_input",
	"global_head_dim", "num_global_key_value_heads", "expert_intermediate_size",
	"type_vocab_size", "max_trained_positions",
}

func (h hparams) checkTypes() error {
	for _, k := range numeric {
		switch v := h[k].(type) {
		case nil, float64:
		default:
			return fmt.Errorf("config.json: %s = %v is not a number", k, v)
		}
	}
	return nil
}

// countLimits bound config.json's counts by what they become (the model
// package's limits): a folder claiming more is refused before anything is
// sized by the claim.
var countLimits = map[string]int{
	"num_hidden_layers": model.MaxLayers, "n_layer": model.MaxLayers, "num_layers": model.MaxLayers,
	"hidden_size": model.MaxWidth, "n_embd": model.MaxWidth, "intermediate_size": model.MaxWidth, "n_inner": model.MaxWidth,
	"head_dim": model.MaxWidth, "moe_intermediate_size": model.MaxWidth,
	"num_attention_heads": model.MaxHeads, "n_head": model.MaxHeads, "num_key_value_heads": model.MaxHeads,
	"num_local_experts": model.MaxExperts, "num_experts": model.MaxExperts, "num_experts_per_tok": model.MaxExperts,
	"vocab_size": model.MaxVocab, "sliding_window_pattern": model.MaxLayers, "no_rope_layer_interval": model.MaxLayers,
	"n_routed_experts": model.MaxExperts, "num_experts_per_token": model.MaxExperts, "top_k_experts": model.MaxExperts,
	"num_kv_shared_layers": model.MaxLayers, "hidden_size_per_layer_input": model.MaxWidth, "global_head_dim": model.MaxWidth,
	"num_global_key_value_heads": model.MaxHeads, "expert_intermediate_size": model.MaxWidth,
}

// count is num for a non-negative integer field, at most its limit in
// countLimits (else int32's); missing gives def (< 0: an error naming the
// first key).
func (h hparams) count(def int, keys ...string) (uint32, error) {
	for _, k := range keys {
		v, ok := h[k].(float64)
		if !ok {
			continue
		}
		limit, ok := countLimits[k]
		if !ok {
			limit = model.MaxCtx
		}
		switch {
		case v < 0 || v != math.Trunc(v):
			return 0, fmt.Errorf("config.json: %s = %s is not a count", k, numStr(v))
		case v > float64(limit):
			return 0, fmt.Errorf("config.json: %s = %s is over the limit of %d", k, numStr(v), limit)
		}
		return uint32(v), nil
	}
	if def < 0 {
		return 0, fmt.Errorf("config.json: missing %s", strings.Join(keys, " or "))
	}
	return uint32(def), nil
}

// numStr formats a JSON number as written (1000000000, not 1e+09).
func numStr(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// positive is count for a field that must be at least 1 when present.
func (h hparams) positive(keys ...string) (uint32, error) {
	v, err := h.count(-1, keys...)
	if err == nil && v == 0 {
		for _, k := range keys {
			if _, ok := h[k].(float64); ok {
				return 0, fmt.Errorf("config.json: %s = 0 (must be positive)", k)
			}
		}
	}
	return v, err
}

// family is how llama.cpp's converter treats one Hugging Face
// architecture: the GGUF architecture, the hyperparameters it writes, and
// how tensor names and values change.
type family struct {
	arch string
	// params adds the architecture's own metadata keys.
	params func(h hparams, kv *kvs) error
	// tensor maps a Hugging Face tensor name (layer prefix already
	// replaced by "blk.N.") to its GGUF name; "" drops it.
	tensor func(name string) (mapped, error)
	// permuteQK: Q and K rows reordered from rotate-half to interleaved
	// RoPE pairs (Llama's converter).
	permuteQK bool
	// normPlusOne: Gemma stores RMSNorm scales as w with the norm using
	// 1 + w; the converter stores 1 + w.
	normPlusOne bool
	// conv1D: GPT-2's Conv1D weights are stored [in, out] and transposed.
	conv1D bool
	// outputCopy: the head is tied and the converter writes output.weight
	// as a copy of the embeddings (GPT-2).
	outputCopy bool
	// defaults are the transformers config class's defaults, which the
	// converter sees through AutoConfig where config.json omits a key
	// (Gemma 3's sparse text_config).
	defaults hparams
	// custom converts the tensors a name table cannot (gpt-oss's fused
	// experts): handled reports whether name was one of them.
	custom func(f *Folder, name string, st *safetensors.Tensor) (ts []model.Tensor, handled bool, err error)
	// noSpacePrefix: a SentencePiece vocabulary is written with
	// add_space_prefix false (Gemma).
	noSpacePrefix bool
	// noLlama3Freqs: rope_scaling of type llama3 writes no
	// rope_freqs.weight (LlamaModel's generate_extra_tensors makes it; the
	// converter's TextModel-only classes ignore the type).
	noLlama3Freqs bool
	// extra makes the tensors the converter generates from config.json
	// (generate_extra_tensors; Gemma 4's rope_freqs.weight).
	extra func(h hparams) ([]model.Tensor, error)
	// modules makes the tensors of a folder's sentence-transformers
	// modules (EmbeddingGemma's 2_Dense and 3_Dense).
	modules func(f *Folder) ([]model.Tensor, error)
	// tokModel: the tokenizer model the converter's set_vocab names in
	// place of llama or gpt2 (Gemma 4's "gemma4": a BPE over raw UTF-8
	// with its merges and scores).
	tokModel string
}

var families = map[string]*family{
	"LlamaForCausalLM":    llamaFamily,
	"MistralForCausalLM":  llamaFamily,
	"MixtralForCausalLM":  llamaFamily,
	"Qwen2ForCausalLM":    {arch: "qwen2", params: scaled(baseParams), tensor: llamaNames},
	"Qwen3ForCausalLM":    qwen3Family, // with Qwen3-Embedding's pooling and Qwen3-Reranker's head (embed.go)
	"Qwen3Model":          qwen3Family,
	"Qwen3MoeForCausalLM": {arch: "qwen3moe", params: scaled(qwen3moeParams), tensor: llamaNames},
	"Phi3ForCausalLM":     {arch: "phi3", params: phi3Params, tensor: llamaNames, extra: phi3RopeFactors},
	"Gemma2ForCausalLM":   {arch: "gemma2", params: gemma2Params, tensor: gemma2Names, normPlusOne: true, noSpacePrefix: true},
	"GPT2LMHeadModel":     {arch: "gpt2", params: gpt2Params, tensor: gpt2Names, conv1D: true, outputCopy: true},
	// The 2025-26 families, as the 2026 converter writes them (modern.go).
	"Gemma3ForCausalLM":              gemma3Family,
	"Gemma3ForConditionalGeneration": gemma3Family, // its text model: Gemma3Model takes text_config, drops the vision tower
	"SmolLM3ForCausalLM":             {arch: "smollm3", params: smollm3Params, tensor: textNames(llamaTable), permuteQK: true},
	"GraniteForCausalLM":             {arch: "granite", params: graniteParams, tensor: graniteNames, permuteQK: true},
	"GptOssForCausalLM":              {arch: "gpt-oss", params: gptossParams, tensor: textNames(gptossTable), custom: gptossExperts, noLlama3Freqs: true},
	// Ministral 3 / Mistral 3 (mistral3.go) and Gemma 4 (gemma4.go).
	"Mistral3ForConditionalGeneration": mistral3Family, // its text model: text_config, vision tower and projector dropped
	"Ministral3ForCausalLM":            mistral3Family,
	"Gemma4ForCausalLM":                gemma4Family,
	"Gemma4ForConditionalGeneration":   gemma4Family, // its text model: text_config, the vision and audio towers dropped
	// Embedding and reranking models (embed.go).
	"BertModel":                     bertFamily,
	"BertForMaskedLM":               bertFamily,
	"BertForSequenceClassification": bertFamily,
	"NomicBertModel":                nomicBertFamily,
	"Gemma3TextModel":               gemmaEmbeddingFamily,
}

var gemma3Family = &family{arch: "gemma3", params: gemma3Params, tensor: textNames(gemma3Table), normPlusOne: true,
	defaults: gemma3Defaults, noSpacePrefix: true, noLlama3Freqs: true}

var llamaFamily = &family{arch: "llama", params: llamaParams, tensor: llamaNames, permuteQK: true}

// Architectures lists the Hugging Face architectures a folder may name.
func Architectures() []string { return slices.Sorted(maps.Keys(families)) }

// kvs collects metadata in the order the converter writes it.
type kvs struct {
	arch string
	w    *gguf.Writer
	f    *Folder // the folder (its directory and state), for the families that read more than config.json
}

func (k *kvs) set(key string, v any)     { k.w.Set(key, v) }
func (k *kvs) setArch(key string, v any) { k.w.Set(k.arch+"."+key, v) }

// putArch sets a key again where the converter writes it twice (Gemma 3
// after TextModel): the value changes, the key keeps its place, as
// gguf-py's writer overwrites it.
func (k *kvs) putArch(key string, v any) {
	key = k.arch + "." + key
	for i := range k.w.KVs {
		if k.w.KVs[i].Key == key {
			w := gguf.Writer{}
			w.Set(key, v)
			k.w.KVs[i] = w.KVs[0]
			return
		}
	}
	k.w.Set(key, v)
}

// baseParams is the converter's Model.set_gguf_parameters: the keys every
// architecture shares, each only when config.json has it.
func baseParams(h hparams, kv *kvs) error {
	for _, f := range []struct {
		key  string
		from []string
	}{
		{"context_length", []string{"max_position_embeddings", "n_ctx", "n_positions"}},
		{"embedding_length", []string{"hidden_size", "n_embd"}},
		{"block_count", []string{"num_hidden_layers", "n_layer", "num_layers"}},
		{"feed_forward_length", []string{"intermediate_size", "n_inner"}},
		{"attention.head_count", []string{"num_attention_heads", "n_head"}},
		{"attention.head_count_kv", []string{"num_key_value_heads"}},
	} {
		if _, ok := h.num(f.from...); !ok {
			continue
		}
		v, err := h.positive(f.from...)
		if err != nil {
			return err
		}
		kv.setArch(f.key, v)
	}
	v, ok := h.num("rope_theta")
	if !ok { // transformers 5 states it in rope_parameters
		v, ok = ropeDict(h)["rope_theta"].(float64)
	}
	if ok {
		if !(v > 0) || float32(v) > math.MaxFloat32 {
			return fmt.Errorf("config.json: rope_theta = %s (must be positive)", numStr(v))
		}
		kv.setArch("rope.freq_base", float32(v))
	}
	if v, ok := h.num("rms_norm_eps"); ok {
		kv.setArch("attention.layer_norm_rms_epsilon", float32(v))
	}
	if v, ok := h.num("layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"); ok {
		kv.setArch("attention.layer_norm_epsilon", float32(v))
	}
	if _, ok := h.num("num_local_experts", "num_experts"); ok {
		n, err := h.positive("num_local_experts", "num_experts")
		if err != nil {
			return err
		}
		kv.setArch("expert_count", n)
	}
	if _, ok := h.num("num_experts_per_tok"); ok {
		n, err := h.positive("num_experts_per_tok")
		if err != nil {
			return err
		}
		kv.setArch("expert_used_count", n)
	}
	return nil
}

// scaled is params followed by TextModel's RoPE scaling keys (ropeScaling):
// the families whose converter class calls TextModel.set_gguf_parameters
// (Qwen2, Qwen3, Qwen3-MoE; Llama's llamaParams writes them itself).
func scaled(params func(h hparams, kv *kvs) error) func(h hparams, kv *kvs) error {
	return func(h hparams, kv *kvs) error {
		if err := params(h, kv); err != nil {
			return err
		}
		return ropeScaling(h, kv)
	}
}

// ropeScaling writes the RoPE scaling keys TextModel.set_gguf_parameters
// writes from rope_scaling or rope_parameters (rope.scaling).
func ropeScaling(h hparams, kv *kvs) error {
	r, err := ropeOf(h)
	if err != nil {
		return err
	}
	return r.scaling(kv)
}

// withHeadDim adds key_length and value_length from head_dim (Qwen3,
// Gemma 2: a head wider than hidden_size / heads).
func withHeadDim(h hparams, kv *kvs) error {
	if err := baseParams(h, kv); err != nil {
		return err
	}
	if _, ok := h.num("head_dim"); ok {
		d, err := h.positive("head_dim")
		if err != nil {
			return err
		}
		kv.setArch("attention.key_length", d)
		kv.setArch("attention.value_length", d)
	}
	return nil
}

// llamaParams: vocab size, RoPE dimensions (head_dim, or hidden/heads),
// linear RoPE scaling; llama3-type scaling becomes rope_freqs.weight.
func llamaParams(h hparams, kv *kvs) error {
	if err := baseParams(h, kv); err != nil {
		return err
	}
	if v, err := h.count(-1, "vocab_size"); err == nil {
		kv.setArch("vocab_size", v)
	} else {
		return err
	}
	rd, err := ropeDims(h)
	if err != nil {
		return err
	}
	kv.setArch("rope.dimension_count", rd)
	if err := ropeScaling(h, kv); err != nil {
		return err
	}
	if _, ok := h.num("head_dim"); ok {
		d, err := h.positive("head_dim")
		if err != nil {
			return err
		}
		kv.setArch("attention.key_length", d)
		kv.setArch("attention.value_length", d)
	}
	return nil
}

// ropeDims is the head width: head_dim, or hidden_size / num_attention_heads.
func ropeDims(h hparams) (uint32, error) {
	if _, ok := h.num("head_dim"); ok {
		return h.positive("head_dim")
	}
	d, err := h.positive("hidden_size")
	if err != nil {
		return 0, err
	}
	n, err := h.positive("num_attention_heads")
	if err != nil {
		return 0, err
	}
	if d%n != 0 {
		return 0, fmt.Errorf("config.json: hidden_size = %d is not divisible by num_attention_heads = %d (and there is no head_dim)", d, n)
	}
	return d / n, nil
}

func qwen3moeParams(h hparams, kv *kvs) error {
	if err := withHeadDim(h, kv); err != nil {
		return err
	}
	if _, ok := h.num("moe_intermediate_size"); ok {
		v, err := h.positive("moe_intermediate_size")
		if err != nil {
			return err
		}
		kv.setArch("expert_feed_forward_length", v)
	}
	return nil
}

func phi3Params(h hparams, kv *kvs) error {
	if err := baseParams(h, kv); err != nil {
		return err
	}
	rd, err := phi3RopeDims(h)
	if err != nil {
		return err
	}
	kv.setArch("rope.dimension_count", rd)
	if w, ok := h.num("sliding_window"); ok && w > 0 {
		n, err := h.count(-1, "sliding_window")
		if err != nil {
			return err
		}
		kv.setArch("attention.sliding_window", n)
	}
	// Phi3MiniModel.set_gguf_parameters: the original context (from
	// rope_scaling or the top level; the converter requires it, Loom takes
	// context_length's default without it); LongRoPE's magnitude scale as
	// generate_extra_tensors writes it with the factors (phi3RopeFactors).
	r, err := ropeOf(h)
	if err != nil {
		return err
	}
	if v := r.full["original_max_position_embeddings"]; v != nil {
		orig, err := posCount(r.where+" original_max_position_embeddings", v)
		if err != nil {
			return err
		}
		kv.setArch("rope.scaling.original_context_length", orig)
	}
	lr, err := phi3LongRope(h, rd)
	if err != nil || lr == nil {
		return err
	}
	kv.setArch("rope.scaling.attn_factor", lr.attnFactor)
	return nil
}

// phi3RopeDims is Phi-3's rotated dimensions: int(partial_rotary_factor ·
// hidden_size) // num_attention_heads, as Phi3MiniModel computes them (the
// head width without the fraction).
func phi3RopeDims(h hparams) (uint32, error) {
	rd, err := ropeDims(h)
	if err != nil {
		return 0, err
	}
	f, ok := h.num("partial_rotary_factor")
	if !ok {
		return rd, nil
	}
	if !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("config.json: partial_rotary_factor = %s (want a fraction in (0, 1])", numStr(f))
	}
	d, err := h.positive("hidden_size")
	if err != nil {
		return 0, err
	}
	n, err := h.positive("num_attention_heads")
	if err != nil {
		return 0, err
	}
	return uint32(int64(f*float64(d)) / int64(n)), nil
}

// longRope is a Phi-3 128k config's LongRoPE: its per-pair factors and
// the magnitude scale of cos and sin.
type longRope struct {
	long, short []float32
	attnFactor  float32
}

// phi3LongRope reads LongRoPE from config.json as Phi3MiniModel's
// generate_extra_tensors does (nil without long_factor): scale =
// max_position_embeddings / original_max_position_embeddings, and the
// magnitude √(1 + ln scale / ln original) for type su or longrope, 0.1·ln
// scale + 1 for yarn (1 when scale ≤ 1), in float64 then stored as
// float32; both factor lists rotary dims/2 long.
func phi3LongRope(h hparams, ropeDims uint32) (*longRope, error) {
	r, err := ropeOf(h)
	if err != nil {
		return nil, err
	}
	lf, _ := r.full["long_factor"].([]any)
	if r.full["long_factor"] == nil || len(lf) == 0 {
		return nil, nil
	}
	maxPos, ok := h.num("n_positions", "max_position_embeddings")
	if !ok || !(maxPos > 0) {
		return nil, fmt.Errorf("config.json: LongRoPE needs max_position_embeddings")
	}
	o, ok := r.full["original_max_position_embeddings"].(float64)
	if !ok || !(o >= 1) || o != math.Trunc(o) {
		return nil, fmt.Errorf("config.json: LongRoPE needs a positive original_max_position_embeddings (%s has %v)", r.where, r.full["original_max_position_embeddings"])
	}
	scale := maxPos / o
	typ, _ := r.full["rope_type"].(string)
	lr := &longRope{attnFactor: 1}
	switch strings.ToLower(typ) {
	case "":
		return nil, fmt.Errorf("config.json: %s has long_factor but no type (the converter requires rope_scaling.type)", r.where)
	case "su", "longrope":
		if scale > 1 {
			lr.attnFactor = float32(math.Sqrt(1 + math.Log(scale)/math.Log(o)))
		}
	case "yarn":
		if scale > 1 {
			lr.attnFactor = float32(0.1*math.Log(scale) + 1)
		}
	default:
		return nil, fmt.Errorf("config.json: Phi-3 %s type %q is not supported (su, longrope or yarn)", r.where, typ)
	}
	list := func(k string) ([]float32, error) {
		l, ok := r.full[k].([]any)
		if !ok {
			return nil, fmt.Errorf("config.json: %s has no %s list (LongRoPE needs long_factor and short_factor)", r.where, k)
		}
		if len(l) != int(ropeDims/2) {
			return nil, fmt.Errorf("config.json: %s %s has %d entries, want rotary dims/2 = %d", r.where, k, len(l), ropeDims/2)
		}
		out := make([]float32, len(l))
		for i, v := range l {
			x, err := posF32(fmt.Sprintf("%s %s[%d]", r.where, k, i), v)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	if lr.long, err = list("long_factor"); err != nil {
		return nil, err
	}
	if lr.short, err = list("short_factor"); err != nil {
		return nil, err
	}
	return lr, nil
}

// phi3RopeFactors are LongRoPE's rope_factors_long.weight and
// rope_factors_short.weight (F32), as generate_extra_tensors writes them.
func phi3RopeFactors(h hparams) ([]model.Tensor, error) {
	rd, err := phi3RopeDims(h)
	if err != nil {
		return nil, err
	}
	lr, err := phi3LongRope(h, rd)
	if err != nil || lr == nil {
		return nil, err
	}
	return []model.Tensor{rf32("rope_factors_long.weight", lr.long), rf32("rope_factors_short.weight", lr.short)}, nil
}

// posCount is a config.json count: a positive integer within int32.
func posCount(name string, v any) (uint32, error) {
	x, ok := v.(float64)
	if !ok || x < 1 || x != math.Trunc(x) || x > math.MaxInt32 {
		return 0, fmt.Errorf("config.json: %s = %v is not a positive count", name, v)
	}
	return uint32(x), nil
}

func gemma2Params(h hparams, kv *kvs) error {
	if err := withHeadDim(h, kv); err != nil {
		return err
	}
	for _, k := range []struct{ from, to string }{
		{"attn_logit_softcapping", "attn_logit_softcapping"},
		{"final_logit_softcapping", "final_logit_softcapping"},
	} {
		if v, ok := h.num(k.from); ok {
			kv.setArch(k.to, float32(v))
		}
	}
	if _, ok := h.num("sliding_window"); ok {
		n, err := h.count(-1, "sliding_window")
		if err != nil {
			return err
		}
		kv.setArch("attention.sliding_window", n)
	}
	if q, ok := h.num("query_pre_attn_scalar"); ok {
		if d, ok := h.num("head_dim"); ok && q != d {
			return fmt.Errorf("config.json: query_pre_attn_scalar %v differs from head_dim %v (unsupported)", q, d)
		}
	}
	return nil
}

func gpt2Params(h hparams, kv *kvs) error {
	if err := baseParams(h, kv); err != nil {
		return err
	}
	if _, ok := h.num("n_inner", "intermediate_size"); !ok { // GPT-2's MLP is 4·n_embd unless n_inner says
		d, err := h.positive("n_embd", "hidden_size")
		if err != nil {
			return err
		}
		kv.setArch("feed_forward_length", 4*d) // d ≤ model.MaxWidth: no overflow
	}
	return nil
}

// configPath is the folder's config.json.
func configPath(dir string) string { return filepath.Join(dir, "config.json") }
