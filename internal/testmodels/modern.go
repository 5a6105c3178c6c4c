package testmodels

// Loom's own writer of reduced-size, random-weight GGUF files for the
// architectures that ../shared/tools/synthgguf has no preset for (issue 30:
// llama.cpp's mistral3 and gemma4). Each preset keeps every feature llama.cpp
// implements for its architecture at a width and depth small enough for
// tests; its metadata is what convert_hf_to_gguf.py (llama.cpp, 2026) writes
// for the real model, with a few values reduced so that the feature acts
// within a 30-token test (they are listed in testdata/reference-modern/README.md).
//
// Deterministic: the same preset, type and seed give the same bytes on every
// machine and Go release (only PCG's Uint64, integer arithmetic and single
// IEEE operations make the values, as in synthgguf). F32, F16 and Q8_0 files
// of one seed hold the same values (rounded, or quantized as llama.cpp's
// quantize_row_q8_0_ref does).

import (
	"crypto/sha256"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// ModernPresets lists the presets WriteModern knows, with what each exercises.
var ModernPresets = []struct{ Name, Arch, Desc string }{
	{"mistral3-mini", "mistral3", "Ministral 3 (3B/8B/14B) features: YaRN x16 with yarn_log_multiplier 1 (mscale 1/1), YaRN ramp on rotary pairs 2-11 (original context 2, betas 0.13/0.004), llama-4 attention temperature (beta 0.1, floor length 2 = original context), GQA 3:1, query width 384 > hidden 256, untied head; tekken-style byte-level BPE vocabulary (pre tekken, 1000 control tokens first)"},
	{"gemma4-mini", "gemma4", "Gemma 4 E2B/E4B features: sliding-window pattern array (4 local : 1 global, window 8), head_dim 64 local / 128 global, proportional RoPE on global layers (rope_freqs: 16 of 64 pairs rotate), local base 1e4, global 1e6, Q/K norms, V RMS norm, attention scale 1, post-norms, GeGLU, per-layer embeddings (32 per layer), last 5 of 10 layers share the KV of layers 3 (local) and 4 (global), double-wide MLP on shared layers, layer output scales, final soft-capping 30, tied head; Gemma-4-style SentencePiece BPE vocabulary (tokenizer model gemma4)"},
	{"gemma4moe-mini", "gemma4", "Gemma 4 26B-A4B / 31B features: 4 experts top-2 beside a shared GeGLU MLP (router on the unit-RMS input times ffn_gate_inp.scale / sqrt(d), softmax, renormalized top-k, fused gate_up experts, per-expert output scale), pre_ffw_norm_2, post_ffw_norm_1/2, K = V on global layers (no attn_v), per-layer KV head counts (2 local, 1 global), sliding-window pattern array (window 8), head_dim 64 / 128, proportional RoPE, layer output scales, soft-capping 30, tied head; gemma4 vocabulary"},
	{"phi3-longrope-mini", "phi3", "Phi-3/3.5-mini-128k features: LongRoPE (rope_factors_long/short.weight, 16 pairs; long rising to 40, short to 1.5) picked by the context (long above the original 256, n_ctx padded to 256), rope.scaling.attn_factor sqrt(1 + ln 4 / ln 256), no scaling type, context 1024, fused attn_qkv and gate+up ffn_up, NeoX RoPE, the sliding window 2047 llama.cpp ignores; d 128, 4 layers, 4 heads of 32; stand-in vocabulary: lfm2-mini's (Llama 3 BPE ranks)"},
}

// ModernOptions selects what WriteModern writes.
type ModernOptions struct {
	Model  string // a ModernPresets name
	Type   string // F32, F16 or Q8_0 (the type of the 2-D and 3-D weights)
	Seed   uint64
	Assets string // shared/models (tokenizers); "" = ../shared/models
	// Set overrides metadata after the preset is built, for experiments
	// ("key=value", the value parsed as the key's existing type; a key not
	// in the file needs a type prefix: "u32:", "f32:", "bool:", "str:").
	// "key=" with no value deletes the key.
	Set []string
	// Fill overwrites every tensor whose name matches a path.Match-style
	// pattern with a constant ("blk.*.layer_output_scale.weight=1").
	Fill []string
}

// mtensor is one tensor of a preset before it is typed.
type mtensor struct {
	name  string
	dims  []uint64
	gen   func(r *rand.Rand, n int) []float32
	float bool // kept F32 in every file type (norms, 1-D tensors, router, scales)
	vals  []float32
}

// mmodel is a preset being built: metadata in file order, then tensors.
type mmodel struct {
	kvs     []gguf.KV
	tensors []*mtensor
}

func (m *mmodel) set(key string, v any) {
	w := gguf.Writer{}
	w.Set(key, v)
	m.kvs = append(m.kvs, w.KVs[0])
}

func (m *mmodel) add(name string, gen func(r *rand.Rand, n int) []float32, float bool, dims ...int) {
	d := make([]uint64, len(dims))
	for i, x := range dims {
		d[i] = uint64(x)
	}
	m.tensors = append(m.tensors, &mtensor{name: name, dims: d, gen: gen, float: float})
}

// value generators
func normal(sigma float64) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(sigma * gauss(r))
		}
		return v
	}
}

// normw is a norm weight: scale * (1 + N(0, jitter)).
func normw(scale, jitter float64) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(scale * (1 + jitter*gauss(r)))
		}
		return v
	}
}

func uniformIn(lo, hi float64) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(lo + (hi-lo)*uniform(r))
		}
		return v
	}
}

// uniform returns a float64 in [0, 1) with 53 random bits.
func uniform(r *rand.Rand) float64 { return float64(r.Uint64()>>11) * 0x1p-53 }

var gaussScale = 1 / math.Sqrt(65536*65536-1)

// gauss is an approximately standard normal value: the Irwin-Hall sum of
// twelve 16-bit uniforms, centred and scaled (synthgguf's generator).
func gauss(r *rand.Rand) float64 {
	var s uint64
	for k := 0; k < 3; k++ {
		u := r.Uint64()
		s += u&0xffff + u>>16&0xffff + u>>32&0xffff + u>>48
	}
	return (float64(s) - 6*65535) * gaussScale
}

// ---------------------------------------------------------------------------
// presets

func buildModern(name, assets string) (*mmodel, error) {
	if isHybridPreset(name) { // hybrid.go
		return buildHybrid(name, assets)
	}
	switch name {
	case "mistral3-mini":
		return mistral3Mini(assets)
	case "gemma4-mini":
		return gemma4Mini(assets, false)
	case "gemma4moe-mini":
		return gemma4Mini(assets, true)
	case "phi3-longrope-mini":
		return phi3LongRopeMini(assets) // phi3.go
	}
	return nil, fmt.Errorf("unknown model %q (have mistral3-mini, gemma4-mini, gemma4moe-mini, phi3-longrope-mini)", name)
}

func general(m *mmodel, arch, title string) {
	m.set("general.architecture", arch)
	m.set("general.type", "model")
	m.set("general.name", title+" (synthetic random weights)")
	// general.file_type and general.quantization_version are set by WriteModern
}

// mistral3Mini: Ministral3ForCausalLM as Mistral3Model.Ministral3Model
// (LlamaModel + yarn_log_multiplier + attention.temperature_scale) writes it.
func mistral3Mini(assets string) (*mmodel, error) {
	const (
		d, layers, heads, kvHeads, hd, ff = 256, 4, 6, 2, 64, 768
	)
	tok, err := tekkenVocab(assets)
	if err != nil {
		return nil, err
	}
	nv := len(tok.tokens)
	m := &mmodel{}
	a := "mistral3."
	general(m, "mistral3", "Ministral-3-mini")
	m.set(a+"block_count", uint32(layers))
	m.set(a+"context_length", uint32(262144))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"attention.head_count", uint32(heads))
	m.set(a+"attention.head_count_kv", uint32(kvHeads))
	m.set(a+"rope.scaling.type", "yarn")
	m.set(a+"rope.scaling.factor", float32(16))
	// Ministral 3: original context 16384, betas 32 / 1 (YaRN ramp on
	// rotary pairs 20-37 of 64). Reduced to 2 so that the llama-4 attention
	// temperature, which steps at multiples of it, acts within a 30-token
	// test, with betas 0.13 / 0.004 that put the ramp on pairs 2-11 of 32,
	// where interpolation changes rotations within 30 positions.
	m.set(a+"rope.scaling.original_context_length", uint32(2))
	m.set(a+"rope.scaling.yarn_beta_fast", float32(0.13))
	m.set(a+"rope.scaling.yarn_beta_slow", float32(0.004))
	m.set(a+"rope.freq_base", float32(1e6))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-5))
	m.set(a+"attention.key_length", uint32(hd))
	m.set(a+"attention.value_length", uint32(hd))
	m.set(a+"vocab_size", uint32(nv))
	m.set(a+"rope.dimension_count", uint32(hd))
	m.set(a+"rope.scaling.yarn_log_multiplier", float32(1))
	m.set(a+"attention.temperature_scale", float32(0.1))
	tok.kvs(m)

	// Q/K of std 0.05 (instead of 0.02) give attention scores a std of
	// about 0.6 instead of 0.1, so that positions (RoPE, YaRN) and the
	// temperature matter
	m.add("token_embd.weight", normal(0.02), false, d, nv)
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"attn_q.weight", normal(0.05), false, d, heads*hd)
		m.add(b+"attn_k.weight", normal(0.05), false, d, kvHeads*hd)
		m.add(b+"attn_v.weight", normal(0.02), false, d, kvHeads*hd)
		m.add(b+"attn_output.weight", normal(0.02), false, heads*hd, d)
		m.add(b+"ffn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_gate.weight", normal(0.02), false, d, ff)
		m.add(b+"ffn_up.weight", normal(0.02), false, d, ff)
		m.add(b+"ffn_down.weight", normal(0.02), false, ff, d)
	}
	m.add("output_norm.weight", normw(10, 0.05), true, d)
	m.add("output.weight", normal(0.02), false, d, nv)
	return m, nil
}

// gemma4Mini: Gemma4ForCausalLM as Gemma4Model (Gemma3Model + the Gemma 4
// keys) writes it. moe=false: the E2B/E4B layout (per-layer embeddings, KV
// sharing, double-wide MLP); moe=true: the 26B-A4B layout (experts beside the
// MLP, attention_k_eq_v, global KV heads).
func gemma4Mini(assets string, moe bool) (*mmodel, error) {
	const (
		d, heads, hdSWA, hdFull, window = 128, 4, 64, 128, 8
		partialFull                     = 0.25 // rope_parameters.full_attention.partial_rotary_factor
	)
	var (
		layers, shared, nPL, ff, nExp, nExpUsed, ffExp int
		swa                                            []bool
		kvHeads                                        []uint32 // per layer
	)
	if moe {
		layers, shared, nPL, ff, nExp, nExpUsed, ffExp = 6, 0, 0, 192, 4, 2, 64
		swa = []bool{true, true, false, true, true, false}
		for _, s := range swa {
			kvHeads = append(kvHeads, map[bool]uint32{true: 2, false: 1}[s])
		}
	} else {
		layers, shared, nPL, ff = 10, 5, 32, 256
		for i := 0; i < layers; i++ {
			swa = append(swa, i%5 != 4)
			kvHeads = append(kvHeads, 1)
		}
	}
	tok, err := gemma4Vocab(assets)
	if err != nil {
		return nil, err
	}
	nv := len(tok.tokens)
	m := &mmodel{}
	a := "gemma4."
	title := "gemma-4-E2B-mini"
	if moe {
		title = "gemma-4-26B-A4B-mini"
	}
	general(m, "gemma4", title)
	m.set(a+"block_count", uint32(layers))
	m.set(a+"context_length", uint32(131072))
	m.set(a+"embedding_length", uint32(d))
	if moe {
		m.set(a+"feed_forward_length", uint32(ff))
	} else { // use_double_wide_mlp: the KV-shared layers have twice the width
		ffs := make([]uint32, layers)
		for i := range ffs {
			ffs[i] = uint32(ff)
			if i >= layers-shared {
				ffs[i] = uint32(2 * ff)
			}
		}
		m.set(a+"feed_forward_length", ffs)
	}
	m.set(a+"attention.head_count", uint32(heads))
	if moe {
		m.set(a+"attention.head_count_kv", kvHeads)
	} else {
		m.set(a+"attention.head_count_kv", kvHeads[0])
	}
	m.set(a+"rope.freq_base", float32(1e6))
	m.set(a+"rope.freq_base_swa", float32(1e4))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-6))
	if moe {
		m.set(a+"expert_count", uint32(nExp))
		m.set(a+"expert_used_count", uint32(nExpUsed))
	}
	m.set(a+"attention.key_length", uint32(hdFull))
	m.set(a+"attention.value_length", uint32(hdFull))
	m.set(a+"attention.sliding_window", uint32(window))
	m.set(a+"final_logit_softcapping", float32(30))
	m.set(a+"attention.shared_kv_layers", uint32(shared))
	m.set(a+"embedding_length_per_layer_input", uint32(nPL))
	m.set(a+"attention.sliding_window_pattern", gguf.Array{Elem: gguf.Bool, Values: swa})
	m.set(a+"attention.key_length_swa", uint32(hdSWA))
	m.set(a+"attention.value_length_swa", uint32(hdSWA))
	if moe {
		m.set(a+"expert_feed_forward_length", uint32(ffExp))
	}
	m.set(a+"rope.dimension_count", uint32(hdFull))
	m.set(a+"rope.dimension_count_swa", uint32(hdSWA))
	tok.kvs(m)

	m.add("token_embd.weight", normal(0.03), false, d, nv)
	if nPL > 0 {
		m.add("per_layer_token_embd.weight", normal(0.15), false, nPL*layers, nv)
		m.add("per_layer_model_proj.weight", normal(0.05), false, d, nPL*layers)
		m.add("per_layer_proj_norm.weight", normw(1, 0.05), true, nPL)
	}
	// proportional RoPE on the global layers: the first partial*hd/2 pairs
	// rotate, the others get frequency factor 1e30 (Gemma4Model.generate_extra_tensors)
	nRot := int(hdFull * partialFull / 2)
	m.add("rope_freqs.weight", func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
			if i >= nRot {
				v[i] = 1e30
			}
		}
		return v
	}, true, hdFull/2)
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		hd := hdFull
		if swa[i] {
			hd = hdSWA
		}
		kv := int(kvHeads[i])
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"attn_q.weight", normal(0.05), false, d, heads*hd)
		m.add(b+"attn_k.weight", normal(0.05), false, d, kv*hd)
		if !moe || swa[i] { // attention_k_eq_v: the global layers of 26B/31B have no v_proj
			m.add(b+"attn_v.weight", normal(0.05), false, d, kv*hd)
		}
		m.add(b+"attn_output.weight", normal(0.05), false, heads*hd, d)
		// Q/K norm weights of 0.3 give attention scores (scale 1) a std of
		// about 0.7 (head_dim 64) to 1 (128): sharper attention makes
		// llama.cpp's own variants (flash attention, KV type) disagree more,
		// and in the MoE preset flip near-tied routing decisions
		qk := 0.3
		if !swa[i] && !moe { // sharper global attention (score std about 4), so that proportional RoPE matters
			qk = 0.6
		}
		m.add(b+"attn_q_norm.weight", normw(qk, 0.1), true, hd)
		m.add(b+"attn_k_norm.weight", normw(qk, 0.1), true, hd)
		m.add(b+"post_attention_norm.weight", normw(1, 0.05), true, d)
		f := ff
		if !moe && i >= layers-shared {
			f = 2 * ff
		}
		m.add(b+"ffn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_gate.weight", normal(0.06), false, d, f)
		m.add(b+"ffn_up.weight", normal(0.06), false, d, f)
		m.add(b+"ffn_down.weight", normal(0.05), false, f, d)
		if moe {
			m.add(b+"post_ffw_norm_1.weight", normw(1, 0.05), true, d)
			m.add(b+"pre_ffw_norm_2.weight", normw(1, 0.05), true, d)
			m.add(b+"ffn_gate_inp.weight", normal(1.0), true, d, nExp)
			m.add(b+"ffn_gate_inp.scale", normw(1, 0.1), true, d)
			m.add(b+"ffn_gate_up_exps.weight", normal(0.06), false, d, 2*ffExp, nExp)
			m.add(b+"ffn_down_exps.weight", normal(0.05), false, ffExp, d, nExp)
			m.add(b+"ffn_down_exps.scale", uniformIn(0.5, 1.5), true, nExp)
			m.add(b+"post_ffw_norm_2.weight", normw(0.5, 0.05), true, d)
		}
		m.add(b+"post_ffw_norm.weight", normw(1, 0.05), true, d)
		if nPL > 0 {
			m.add(b+"inp_gate.weight", normal(0.05), false, d, nPL)
			m.add(b+"proj.weight", normal(0.05), false, nPL, d)
			m.add(b+"post_norm.weight", normw(1, 0.05), true, d)
		}
		m.add(b+"layer_output_scale.weight", uniformIn(0.8, 1), true, 1)
	}
	m.add("output_norm.weight", normw(12, 0.05), true, d)
	return m, nil
}

// ---------------------------------------------------------------------------
// writing

// WriteModern writes the preset o.Model as a GGUF file to out.
func WriteModern(out io.Writer, o ModernOptions) error {
	assets := o.Assets
	if assets == "" {
		shared, err := SharedDir()
		if err != nil {
			return err
		}
		assets = filepath.Join(shared, "models")
	}
	m, err := buildModern(o.Model, assets)
	if err != nil {
		return err
	}
	var wt gguf.Type
	var ftype uint32
	switch o.Type {
	case "F32":
		wt, ftype = gguf.F32, 0
	case "F16":
		wt, ftype = gguf.F16, 1
	case "Q8_0":
		wt, ftype = gguf.Q8_0, 7
	default:
		return fmt.Errorf("type %q: want F32, F16 or Q8_0", o.Type)
	}
	// general.file_type and general.quantization_version after general.name
	head := append([]gguf.KV(nil), m.kvs[:3]...)
	w := gguf.Writer{}
	w.Set("general.file_type", ftype)
	w.Set("general.quantization_version", uint32(2))
	m.kvs = append(append(head, w.KVs...), m.kvs[3:]...)
	for _, s := range o.Set {
		if err := m.override(s); err != nil {
			return err
		}
	}
	for _, t := range m.tensors {
		r := rand.New(rand.NewPCG(o.Seed, nameHash(t.name)))
		n := 1
		for _, x := range t.dims {
			n *= int(x)
		}
		t.vals = t.gen(r, n)
	}
	for _, s := range o.Fill {
		pat, val, ok := strings.Cut(s, "=")
		c, err := strconv.ParseFloat(val, 32)
		if !ok || err != nil {
			return fmt.Errorf("fill %q: want PATTERN=VALUE", s)
		}
		hit := false
		for _, t := range m.tensors {
			if ok, _ := filepath.Match(pat, t.name); ok {
				hit = true
				for i := range t.vals {
					t.vals[i] = float32(c)
				}
			}
		}
		if !hit {
			return fmt.Errorf("fill %q: no tensor matches", s)
		}
	}
	gw := gguf.NewWriter()
	gw.KVs = m.kvs
	for _, t := range m.tensors {
		typ := wt
		if t.float || len(t.dims) == 1 {
			typ = gguf.F32
		}
		if err := gw.AddTensor(t.name, typ, t.dims, encode(typ, t.vals)); err != nil {
			return err
		}
	}
	_, err = gw.WriteTo(out)
	return err
}

// override applies one "key=value" of ModernOptions.Set.
func (m *mmodel) override(s string) error {
	key, val, ok := strings.Cut(s, "=")
	if !ok {
		return fmt.Errorf("set %q: want KEY=VALUE", s)
	}
	at := -1
	for i, kv := range m.kvs {
		if kv.Key == key {
			at = i
		}
	}
	if val == "" {
		if at < 0 {
			return fmt.Errorf("set %q: no such key", s)
		}
		m.kvs = append(m.kvs[:at], m.kvs[at+1:]...)
		return nil
	}
	typ := gguf.ValueType(0)
	if at >= 0 {
		typ = m.kvs[at].Value.Type
		if typ == gguf.ArrayT {
			typ = 100 + m.kvs[at].Value.V.(gguf.Array).Elem
		}
	} else if p, rest, ok := strings.Cut(val, ":"); ok {
		val = rest
		switch p {
		case "u32":
			typ = gguf.Uint32
		case "f32":
			typ = gguf.Float32
		case "bool":
			typ = gguf.Bool
		case "str":
			typ = gguf.String
		default:
			return fmt.Errorf("set %q: unknown type prefix %q", s, p)
		}
	} else {
		return fmt.Errorf("set %q: new key needs a type prefix (u32:, f32:, bool:, str:)", s)
	}
	var v any
	var err error
	switch typ {
	case gguf.Uint32:
		var x uint64
		x, err = strconv.ParseUint(val, 10, 32)
		v = uint32(x)
	case gguf.Float32:
		var x float64
		x, err = strconv.ParseFloat(val, 32)
		v = float32(x)
	case gguf.Bool:
		v, err = strconv.ParseBool(val)
	case gguf.String:
		v = val
	case 100 + gguf.Bool:
		var bs []bool
		for _, f := range strings.Split(val, ",") {
			b, e := strconv.ParseBool(f)
			if e != nil {
				err = e
			}
			bs = append(bs, b)
		}
		v = gguf.Array{Elem: gguf.Bool, Values: bs}
	case 100 + gguf.Uint32:
		var us []uint32
		for _, f := range strings.Split(val, ",") {
			x, e := strconv.ParseUint(f, 10, 32)
			if e != nil {
				err = e
			}
			us = append(us, uint32(x))
		}
		v = us
	case 100 + gguf.Int32:
		var is []int32
		for _, f := range strings.Split(val, ",") {
			x, e := strconv.ParseInt(f, 10, 32)
			if e != nil {
				err = e
			}
			is = append(is, int32(x))
		}
		v = is
	default:
		return fmt.Errorf("set %q: cannot set a value of type %v", s, typ)
	}
	if err != nil {
		return fmt.Errorf("set %q: %w", s, err)
	}
	w := gguf.Writer{}
	w.Set(key, v)
	if at >= 0 {
		m.kvs[at] = w.KVs[0]
	} else {
		m.kvs = append(m.kvs, w.KVs[0])
	}
	return nil
}

func nameHash(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// encode stores v as type t: F32 bits, F16 rounded to nearest even, or
// Q8_0 as ggml's quantize_row_q8_0_ref (Loom's quantizers, which match
// llama-quantize byte for byte).
func encode(t gguf.Type, v []float32) []byte {
	dt := tensor.DType(t)
	n, err := tensor.RowBytes(dt, uint64(len(v)))
	if err != nil {
		panic(err)
	}
	b := make([]byte, n)
	if err := quant.Quantize(dt, b, v); err != nil {
		panic(err)
	}
	return b
}

// ---------------------------------------------------------------------------
// test helpers

// ParseModernSource parses a "source" column of testdata/reference-modern/index.tsv
// ("modelgen -model M -type T -seed S").
func ParseModernSource(source string) (ModernOptions, error) {
	f := strings.Fields(source)
	if len(f) == 0 || f[0] != "modelgen" {
		return ModernOptions{}, fmt.Errorf("not a modelgen command: %q", source)
	}
	o := ModernOptions{}
	for i := 1; i+1 < len(f); i += 2 {
		switch f[i] {
		case "-model":
			o.Model = f[i+1]
		case "-type":
			o.Type = f[i+1]
		case "-seed":
			s, err := strconv.ParseUint(f[i+1], 10, 64)
			if err != nil {
				return o, fmt.Errorf("%q: %w", source, err)
			}
			o.Seed = s
		case "-set":
			o.Set = append(o.Set, f[i+1])
		case "-fill":
			o.Fill = append(o.Fill, f[i+1])
		default:
			return o, fmt.Errorf("%q: unknown flag %s", source, f[i])
		}
	}
	if len(f)%2 != 1 || o.Model == "" || o.Type == "" {
		return o, fmt.Errorf("%q: want modelgen -model M -type T -seed S [-set KEY=VALUE]... [-fill PATTERN=VALUE]...", source)
	}
	return o, nil
}

var cacheMu sync.Mutex

// Modern returns the path of the modelgen file described by source
// ("modelgen -model M -type T -seed S [-set K=V]...", any preset of
// ModernPresets or EmbedPresets), writing it into the cache on first use.
// The cached file is named by its sha256, computed by generating it (a
// fraction of a second), so a change to the writer can never leave a stale
// file in use.
func Modern(t testing.TB, source string) string {
	t.Helper()
	o, err := ParseModernSource(source)
	if err != nil {
		t.Fatal(err)
	}
	o.Assets = filepath.Join(Shared(t), "models")
	return cached(t, fmt.Sprintf("modelgen_%s_%s_s%d", o.Model, o.Type, o.Seed), func(w io.Writer) error { return WriteModelgen(w, o) })
}

// cached returns the path of the file write writes, in the test cache
// under prefix and the first 16 hex digits of its sha256, writing it on
// first use (to a temporary name, then renamed, so concurrent test binaries
// never see a partial file).
func cached(t testing.TB, prefix string, write func(io.Writer) error) string {
	t.Helper()
	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if err := write(h); err != nil {
		t.Fatalf("%s: %v", prefix, err)
	}
	path := filepath.Join(cache, fmt.Sprintf("%s_%.16x.gguf", prefix, h.Sum(nil)))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(tmp)
		t.Fatalf("%s: %v", prefix, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// ModernReferences reads testdata/reference-modern/index.tsv of this
// repository: llama.cpp's recordings of the modelgen presets. Each Ref has
// Path set to its jsonl file and Source to its modelgen command (Modern
// makes the model).
func ModernReferences(t testing.TB) []Ref {
	var refs []Ref
	for _, row := range modernIndex(t) {
		refs = append(refs, row.Ref)
	}
	return refs
}

type modernRow struct {
	Ref
	SHA256 string
}

func modernIndex(t testing.TB) []modernRow { return repoIndex(t, "reference-modern") }

// repoIndex reads index.tsv of testdata/folder in this repository (the
// columns of shared/reference-modern/index.tsv). A prompt written
// "FILE[:N tokens]" is the first N tokens of that file of the folder.
func repoIndex(t testing.TB, folder string) []modernRow {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", folder)
	b, err := os.ReadFile(filepath.Join(dir, "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []modernRow
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		c := strings.Split(line, "\t")
		if i == 0 || len(c) < 10 {
			continue
		}
		r := Ref{Dir: "testdata/" + folder, File: c[0], Model: c[1], Source: c[2], Prompt: c[4],
			Path: filepath.Join(dir, c[0])}
		if m := promptFile.FindStringSubmatch(c[4]); m != nil {
			text, err := os.ReadFile(filepath.Join(dir, m[1]))
			if err != nil {
				t.Fatal(err)
			}
			r.Prompt = string(text)
			r.PromptTokens, _ = strconv.Atoi(m[2])
		}
		r.NGen, _ = strconv.Atoi(c[5])
		r.LogitTol, _ = strconv.ParseFloat(c[7], 64)
		r.LseTol, _ = strconv.ParseFloat(c[8], 64)
		r.StableGen, _ = strconv.Atoi(c[9])
		rows = append(rows, modernRow{r, c[3]})
	}
	return rows
}

// promptFile is a prompt column naming a text's first tokens.
var promptFile = regexp.MustCompile(`^([\w.-]+\.txt)\[:(\d+) tokens\]$`)
