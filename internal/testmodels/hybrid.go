package testmodels

// Reduced-size, random-weight GGUF files for the hybrid recurrent families
// (issue 31): LFM2 (short convolutions between attention layers), Granite
// 4.0-H (Mamba-2 layers between NoPE attention layers, experts beside a
// shared expert), the Qwen3.5 mixture of experts and Qwen3-Next (gated delta
// nets between gated attention layers, routed experts beside a gated shared
// expert, an MTP block). Same machinery as modern.go (the same generators and
// per-tensor PCG streams, so a preset, type and seed give the same bytes on
// every machine); the metadata keys, their order, the tensor names and the
// tensors kept F32 are what convert_hf_to_gguf.py (llama.cpp, 2026) writes for
// the real models. llama.cpp's recordings are in testdata/reference-hybrid
// (README.md there lists the stand-ins and reduced values; SPEC.md describes
// what llama.cpp computes).

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
)

// HybridPresets lists the hybrid presets WriteModern knows, with what each exercises.
var HybridPresets = []struct{ Name, Arch, Desc string }{
	{"lfm2-mini", "lfm2", "LFM2 (350M-2.6B) features: short-convolution layers (in_proj to B, C, x; B*x through a causal depthwise conv of width 3 (shortconv.l_cache); C*conv; out_proj) between attention layers (pattern c c a c a c a c: head_count_kv 0 marks a conv layer), Q/K RMS norms, NeoX RoPE base 1e6, GQA 2:1, SwiGLU, final norm named token_embd_norm, tied head; d 256, 8 layers, 4 heads / 2 KV heads of 64, FFN 512; stand-in vocabulary: LFM2's first control tokens + the first 8192 ranks of Llama 3's byte-level BPE, pre lfm2 (BOS added)"},
	{"granitehybrid-mini", "granitehybrid", "Granite 4.0-H (Tiny/Small) features: Mamba-2 layers (ssm_in to z, xBC, dt; causal conv of width 4 with bias over x|B|C, SiLU; 4 heads of 64, 2 groups of B/C with state 64, per-head A, D, dt bias, softplus; gated (silu z) grouped RMS norm; ssm_out) between NoPE attention layers (2 of 8, rope.scaling.finetuned false), GQA 2:1, attention.scale 1/128, embedding x12, residual x0.22, logits /6, 4 experts top-2 (softmax, renormalized) beside an ungated shared expert, tied head; d 128; stand-in vocabulary: Granite 3's (refact BPE + 3 role tokens) padded to a multiple of 8 as Mamba2Model.set_vocab does"},
	{"qwen35moe-mini", "qwen35moe", "Qwen3.5 MoE (35B-A3B / 122B-A10B / 397B-A17B) features: qwen35-mini's gated delta net (conv 4, L2-normed q/k, 2 key heads tiled over 4 value heads of 64, decay and write strength, gated RMS norm) on 3 of 4 layers, gated full attention (query+gate interleaved per head, Q/K norms, 2 heads / 1 KV head of 256, interleaved multi-section RoPE on 64 dims, sections 11/11/10/0) on every 4th, 4 routed experts top-2 (softmax, renormalized) beside a shared expert with a sigmoid gate (ffn_gate_inp_shexp), an MTP block after the 8 trunk layers (nextn_predict_layers 1, not run), untied head; d 128; stand-in vocabulary: the first 16384 Qwen2 BPE ranks + Qwen3's added tokens, pre qwen35"},
	{"qwen3next-mini", "qwen3next", "Qwen3-Next (80B-A3B) features: gated delta net with grouped value heads (value head h reads key head h/2: 2 key heads, 4 value heads of 64), fused beta/alpha projection ssm_ba laid out per key head, conv 4, gated RMS norm; gated full attention (query+gate per head, Q/K norms, NeoX RoPE on 64 of 256 dims, 2 heads / 1 KV head) every 4th layer, 4 routed experts top-2 beside a gated shared expert, MTP block, untied head; d 128; stand-in vocabulary: the first 16384 Qwen2 BPE ranks + Qwen3's added tokens, pre qwen2"},
}

func isHybridPreset(name string) bool {
	for _, p := range HybridPresets {
		if p.Name == name {
			return true
		}
	}
	return false
}

func buildHybrid(name, assets string) (*mmodel, error) {
	switch name {
	case "lfm2-mini":
		return lfm2Mini(assets)
	case "granitehybrid-mini":
		return graniteHybridMini(assets)
	case "qwen35moe-mini":
		return qwenHybridMini(assets, false)
	case "qwen3next-mini":
		return qwenHybridMini(assets, true)
	}
	return nil, fmt.Errorf("unknown hybrid model %q", name)
}

// generators used by the hybrid presets

func constant(c float64) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(c)
		}
		return v
	}
}

// negUniform is -U(lo, hi): ssm_a as the converter stores it (-exp(A_log)).
func negUniform(lo, hi float64) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(-(lo + (hi-lo)*uniform(r)))
		}
		return v
	}
}

// dtBias is Mamba-2's dt_bias initialisation: softplus⁻¹(dt) with dt
// log-uniform in [lo, hi] (math.Log/Exp/Expm1 only decide these few values,
// which are stored as F32; they are reproducible on every Go platform).
func dtBias(lo, hi float64) func(r *rand.Rand, n int) []float32 {
	return func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			dt := math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))*uniform(r))
			v[i] = float32(math.Log(math.Expm1(dt)))
		}
		return v
	}
}

// ---------------------------------------------------------------------------
// LFM2

// lfm2Mini: Lfm2ForCausalLM as LFM2Model writes it (TextModel's keys with
// num_key_value_heads turned into a per-layer array, 0 on conv layers; then
// vocab_size, shortconv.l_cache, the rms epsilon again and the adjusted
// feed_forward_length, both overwriting earlier keys in place).
func lfm2Mini(assets string) (*mmodel, error) {
	const (
		d, heads, kvHeads, hd, ff, lcache = 256, 4, 2, 64, 512, 3
	)
	attn := []bool{false, false, true, false, true, false, true, false}
	layers := len(attn)
	tok, err := lfm2Vocab(assets)
	if err != nil {
		return nil, err
	}
	nv := len(tok.tokens)
	m := &mmodel{}
	a := "lfm2."
	general(m, "lfm2", "LFM2-mini")
	m.set(a+"block_count", uint32(layers))
	m.set(a+"context_length", uint32(128000))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"attention.head_count", uint32(heads))
	kv := make([]int32, layers)
	for i, at := range attn {
		if at {
			kv[i] = kvHeads
		}
	}
	m.set(a+"attention.head_count_kv", kv)
	m.set(a+"rope.freq_base", float32(1e6))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-5))
	m.set(a+"vocab_size", uint32(nv))
	m.set(a+"shortconv.l_cache", uint32(lcache))
	tok.kvs(m)

	m.add("token_embd.weight", normal(0.02), false, d, nv)
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		if attn[i] {
			m.add(b+"attn_q.weight", normal(0.05), false, d, heads*hd)
			m.add(b+"attn_k.weight", normal(0.05), false, d, kvHeads*hd)
			m.add(b+"attn_v.weight", normal(0.05), false, d, kvHeads*hd)
			m.add(b+"attn_output.weight", normal(0.05), false, heads*hd, d)
			// Q/K norm weights of 1.5: scores of std about 2, so that RoPE matters
			m.add(b+"attn_q_norm.weight", normw(1.5, 0.1), true, hd)
			m.add(b+"attn_k_norm.weight", normw(1.5, 0.1), true, hd)
		} else {
			// B, C and x of std about 1.3; a conv kernel of std 0.5, so
			// that the two previous tokens weigh as much as the current one
			m.add(b+"shortconv.in_proj.weight", normal(0.08), false, d, 3*d)
			m.add(b+"shortconv.conv.weight", normal(0.5), true, lcache, d)
			m.add(b+"shortconv.out_proj.weight", normal(0.05), false, d, d)
		}
		m.add(b+"ffn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_gate.weight", normal(0.05), false, d, ff)
		m.add(b+"ffn_up.weight", normal(0.05), false, d, ff)
		m.add(b+"ffn_down.weight", normal(0.05), false, ff, d)
	}
	m.add("token_embd_norm.weight", normw(8, 0.05), true, d)
	return m, nil
}

// lfm2Vocab stands in for LFM2's 65,536-token byte-level BPE (not in
// shared/models): control tokens named as in LFM2's chat format (pad 0,
// BOS <|startoftext|> 1, EOS <|im_end|> 7, as LFM2's config.json has them),
// then the first 8192 ranks of Llama 3's byte-level BPE (the same kind of
// vocabulary, with the same pre-tokenizer regex that pre "lfm2" selects)
// with the merges among them.
func lfm2Vocab(assets string) (*mvocab, error) {
	const nBPE = 8192
	specials := []string{"<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|fim_pre|>", "<|fim_mid|>", "<|fim_suf|>",
		"<|im_start|>", "<|im_end|>", "<|tool_list_start|>", "<|tool_list_end|>", "<|tool_call_start|>",
		"<|tool_call_end|>", "<|tool_response_start|>", "<|tool_response_end|>"}
	dir := filepath.Join(assets, "tokenizers", "llama3.2")
	var enc map[string]int
	b, err := os.ReadFile(filepath.Join(dir, "encoder.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &enc); err != nil {
		return nil, err
	}
	ns := len(specials)
	v := &mvocab{model: "gpt2", pre: "lfm2"}
	v.tokens = make([]string, ns+nBPE)
	v.types = make([]int32, ns+nBPE)
	for i, s := range specials {
		v.tokens[i], v.types[i] = s, tokControl
	}
	kept := map[string]bool{}
	for s, id := range enc {
		if id < nBPE {
			v.tokens[ns+id], v.types[ns+id] = s, tokNormal
			kept[s] = true
		}
	}
	for i, s := range v.tokens {
		if s == "" {
			return nil, fmt.Errorf("lfm2 stand-in vocabulary: rank %d missing from encoder.json", i-ns)
		}
	}
	merges, err := keptMerges(filepath.Join(dir, "vocab.bpe"), kept)
	if err != nil {
		return nil, err
	}
	v.merges = merges
	v.ids = [][2]any{{"bos_token_id", uint32(1)}, {"eos_token_id", uint32(7)}, {"padding_token_id", uint32(0)}}
	v.tail = [][2]any{{"add_bos_token", true}, {"add_eos_token", false}}
	return v, nil
}

// keptMerges reads a merges file (vocab.bpe / merges.txt) and keeps, in
// order, the merges whose two parts and result are all in kept.
func keptMerges(path string, kept map[string]bool) ([]string, error) {
	lines, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for i, line := range strings.Split(string(lines), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || (i == 0 && strings.HasPrefix(line, "#")) {
			continue
		}
		if kept[f[0]] && kept[f[1]] && kept[f[0]+f[1]] {
			out = append(out, f[0]+" "+f[1])
		}
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// Granite 4.0-H

// graniteHybridMini: GraniteMoeHybridForCausalLM as GraniteHybridModel writes
// it: GraniteMoeModel's keys (TextModel, then LlamaModel's vocab_size and
// rope.dimension_count, the Granite multipliers, the shared expert width),
// then the Mamba-2 sizes; head_count_kv (a per-layer array, 0 on Mamba
// layers) and context_length (2^20) overwrite the earlier keys in place, and
// rope.scaling.finetuned false switches RoPE off (NoPE attention).
func graniteHybridMini(assets string) (*mmodel, error) {
	const (
		d, heads, kvHeads, hd                 = 128, 2, 1, 64
		nExp, nExpUsed, ffExp, ffShared       = 4, 2, 128, 256
		dConv, dState, nGroup, ssmHeadDim     = 4, 64, 2, 64
		dInner                                = 2 * d
		nSSMHead                              = dInner / ssmHeadDim
		dInProj                               = 2*dInner + 2*nGroup*dState + nSSMHead
		convCh                                = dInner + 2*nGroup*dState
		attScale, embScale, resScale, logitSc = 0.0078125, 12, 0.22, 6
	)
	attn := []bool{false, false, true, false, false, true, false, false}
	layers := len(attn)
	tok, err := graniteHybridVocab(assets)
	if err != nil {
		return nil, err
	}
	nv := len(tok.tokens)
	m := &mmodel{}
	a := "granitehybrid."
	general(m, "granitehybrid", "granite-4.0-h-mini")
	m.set(a+"block_count", uint32(layers))
	m.set(a+"context_length", uint32(1<<20)) // max_position_embeddings, overwritten with 2^20
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ffExp)) // intermediate_size: the expert width
	m.set(a+"attention.head_count", uint32(heads))
	kv := make([]int32, layers)
	for i, at := range attn {
		if at {
			kv[i] = kvHeads
		}
	}
	m.set(a+"attention.head_count_kv", kv)
	m.set(a+"rope.freq_base", float32(10000))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-5))
	m.set(a+"expert_count", uint32(nExp))
	m.set(a+"expert_used_count", uint32(nExpUsed))
	m.set(a+"vocab_size", uint32(nv))
	m.set(a+"rope.dimension_count", uint32(hd))
	m.set(a+"attention.scale", float32(attScale))
	m.set(a+"embedding_scale", float32(embScale))
	m.set(a+"residual_scale", float32(resScale))
	m.set(a+"logit_scale", float32(logitSc))
	m.set(a+"expert_shared_feed_forward_length", uint32(ffShared))
	m.set(a+"ssm.conv_kernel", uint32(dConv))
	m.set(a+"ssm.state_size", uint32(dState))
	m.set(a+"ssm.group_count", uint32(nGroup))
	m.set(a+"ssm.inner_size", uint32(dInner))
	m.set(a+"ssm.time_step_rank", uint32(nSSMHead))
	m.set(a+"rope.scaling.finetuned", false)
	tok.kvs(m)

	m.add("token_embd.weight", normal(0.02), false, d, nv)
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		if attn[i] {
			// scores of std about 2 at scale 1/128 (no Q/K norms)
			m.add(b+"attn_q.weight", normal(0.5), false, d, heads*hd)
			m.add(b+"attn_k.weight", normal(0.5), false, d, kvHeads*hd)
			m.add(b+"attn_v.weight", normal(0.1), false, d, kvHeads*hd)
			m.add(b+"attn_output.weight", normal(0.1), false, heads*hd, d)
		} else {
			m.add(b+"ssm_in.weight", normal(0.1), false, d, dInProj)
			m.add(b+"ssm_conv1d.weight", normal(0.5), true, dConv, convCh)
			m.add(b+"ssm_conv1d.bias", normal(0.2), true, convCh)
			// dt in [0.05, 0.5], A in [-4, -0.5]: per-token decays exp(dt·A)
			// from 0.13 to 0.98, so the state keeps earlier tokens
			m.add(b+"ssm_dt.bias", dtBias(0.05, 0.5), true, nSSMHead)
			m.add(b+"ssm_a", negUniform(0.5, 4), true, 1, nSSMHead)
			m.add(b+"ssm_d", uniformIn(0.5, 1.5), true, 1, nSSMHead)
			m.add(b+"ssm_norm.weight", normw(1, 0.1), true, dInner/nGroup, nGroup)
			m.add(b+"ssm_out.weight", normal(0.1), false, dInner, d)
		}
		m.add(b+"ffn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_gate_inp.weight", normal(0.6), true, d, nExp)
		m.add(b+"ffn_gate_exps.weight", normal(0.1), false, d, ffExp, nExp)
		m.add(b+"ffn_up_exps.weight", normal(0.1), false, d, ffExp, nExp)
		m.add(b+"ffn_down_exps.weight", normal(0.1), false, ffExp, d, nExp)
		m.add(b+"ffn_gate_shexp.weight", normal(0.1), false, d, ffShared)
		m.add(b+"ffn_up_shexp.weight", normal(0.1), false, d, ffShared)
		m.add(b+"ffn_down_shexp.weight", normal(0.1), false, ffShared, d)
	}
	// the logits are divided by logit_scale (6): a final norm of 40 keeps
	// their spread like the other presets'
	m.add("output_norm.weight", normw(40, 0.05), true, d)
	return m, nil
}

// graniteHybridVocab stands in for Granite 4.0's vocabulary (not in
// shared/models) with Granite 3's as its GGUFs carry it (synthgguf's
// granite-mini: llama.cpp's refact BPE with token 0 named <|end_of_text|>
// and the three role tokens appended, 49155 rows), padded with [PAD<id>]
// tokens (type unused) to a multiple of 8 as Mamba2Model.set_vocab pads a
// hybrid Granite vocabulary (49160 rows).
func graniteHybridVocab(assets string) (*mvocab, error) {
	f, err := gguf.Open(filepath.Join(assets, "vocab", "ggml-vocab-refact.gguf"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	types, err := f.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		return nil, err
	}
	merges, err := f.Strings("tokenizer.ggml.merges")
	if err != nil {
		return nil, err
	}
	const n = 49152
	if len(src) < n || len(types) < n {
		return nil, fmt.Errorf("refact vocabulary: %d tokens, want %d", len(src), n)
	}
	v := &mvocab{model: "gpt2", pre: "refact"}
	v.tokens = append([]string(nil), src[:n]...)
	v.types = append([]int32(nil), types[:n]...)
	v.tokens[0] = "<|end_of_text|>"
	for _, s := range []string{"<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>"} {
		v.tokens = append(v.tokens, s)
		v.types = append(v.types, tokControl)
	}
	for len(v.tokens)%8 != 0 {
		v.tokens = append(v.tokens, fmt.Sprintf("[PAD%d]", len(v.tokens)))
		v.types = append(v.types, tokUnused)
	}
	v.merges = merges
	v.ids = [][2]any{{"bos_token_id", uint32(0)}, {"eos_token_id", uint32(0)}, {"unknown_token_id", uint32(0)}, {"padding_token_id", uint32(0)}}
	v.tail = [][2]any{{"add_bos_token", false}}
	return v, nil
}

const tokUnused = 5

// ---------------------------------------------------------------------------
// Qwen3.5 MoE and Qwen3-Next

// qwenHybridMini: Qwen3_5MoeForCausalLM as Qwen3_5MoeTextModel writes it
// (next=false), or Qwen3NextForCausalLM as Qwen3NextModel writes it
// (next=true): Qwen2MoeModel's keys (TextModel, expert widths), the MTP
// block count, the delta-net sizes, the recurrent-layer array,
// full_attention_interval and the partial rope.dimension_count; qwen35moe
// adds the rope sections (TextModel writes them before rope.freq_base when
// the checkpoint has mrope_section). Every RMS norm weight except ssm_norm
// is a multiplier around 1 (the converter adds 1 to Qwen's zero-centred ones).
func qwenHybridMini(assets string, next bool) (*mmodel, error) {
	const (
		d, layers, mtp, heads, kvHeads, hd, ff = 128, 8, 1, 2, 1, 256, 384
		nExp, nExpUsed, ffExp, ffShared        = 4, 2, 64, 128
		conv, dk, hk, hv, interval, ropeDim    = 4, 64, 2, 4, 4, 64
		keyDim, valDim                         = dk * hk, dk * hv
		convDim                                = 2*keyDim + valDim
	)
	blocks := layers + mtp
	tok, _, err := qwen3Vocab(assets, true)
	if err != nil {
		return nil, err
	}
	arch, title := "qwen35moe", "Qwen3.5-MoE-mini"
	if next {
		arch, title = "qwen3next", "Qwen3-Next-mini"
	} else {
		tok.pre = "qwen35"
	}
	nv := len(tok.tokens)
	m := &mmodel{}
	a := arch + "."
	general(m, arch, title)
	m.set(a+"block_count", uint32(blocks))
	m.set(a+"context_length", uint32(262144))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"attention.head_count", uint32(heads))
	m.set(a+"attention.head_count_kv", uint32(kvHeads))
	if !next {
		m.set(a+"rope.dimension_sections", []int32{11, 11, 10, 0})
	}
	m.set(a+"rope.freq_base", float32(1e7))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-6))
	m.set(a+"expert_count", uint32(nExp))
	m.set(a+"expert_used_count", uint32(nExpUsed))
	m.set(a+"attention.key_length", uint32(hd))
	m.set(a+"attention.value_length", uint32(hd))
	m.set(a+"expert_feed_forward_length", uint32(ffExp))
	m.set(a+"expert_shared_feed_forward_length", uint32(ffShared))
	m.set(a+"nextn_predict_layers", uint32(mtp))
	m.set(a+"ssm.conv_kernel", uint32(conv))
	m.set(a+"ssm.state_size", uint32(dk))
	m.set(a+"ssm.group_count", uint32(hk))
	m.set(a+"ssm.time_step_rank", uint32(hv))
	m.set(a+"ssm.inner_size", uint32(valDim))
	recurrent := make([]bool, blocks)
	for i := 0; i < layers; i++ {
		recurrent[i] = (i+1)%interval != 0
	}
	m.set(a+"attention.recurrent_layers", gguf.Array{Elem: gguf.Bool, Values: recurrent})
	m.set(a+"full_attention_interval", uint32(interval))
	m.set(a+"rope.dimension_count", uint32(ropeDim))
	tok.kvs(m)

	m.add("token_embd.weight", normal(0.02), false, d, nv)
	for i := 0; i < blocks; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"post_attention_norm.weight", normw(1, 0.05), true, d)
		if !recurrent[i] { // gated attention (and the MTP block)
			m.add(b+"attn_q.weight", normal(0.1), false, d, 2*heads*hd) // gates of std ~1
			m.add(b+"attn_k.weight", normal(0.02), false, d, kvHeads*hd)
			m.add(b+"attn_v.weight", normal(0.05), false, d, kvHeads*hd)
			m.add(b+"attn_output.weight", normal(0.05), false, heads*hd, d)
			// norm weights of 2: scores of std about 4 at scale 1/16, so
			// that the rotation of 64 of 256 dimensions matters
			m.add(b+"attn_q_norm.weight", normw(2, 0.1), true, hd)
			m.add(b+"attn_k_norm.weight", normw(2, 0.1), true, hd)
		} else {
			m.add(b+"attn_qkv.weight", normal(0.05), false, d, convDim)
			m.add(b+"attn_gate.weight", normal(0.05), false, d, valDim)
			m.add(b+"ssm_conv1d.weight", normal(0.3), true, conv, convDim)
			m.add(b+"ssm_dt.bias", normw(1, 0.05), true, hv)
			m.add(b+"ssm_a", negUniform(0.05, 1), true, hv)
			if next {
				m.add(b+"ssm_ba.weight", normal(0.1), false, d, 2*hv)
			} else {
				m.add(b+"ssm_beta.weight", normal(0.1), false, d, hv)
				m.add(b+"ssm_alpha.weight", normal(0.1), false, d, hv)
			}
			m.add(b+"ssm_norm.weight", normw(1, 0.1), true, dk)
			m.add(b+"ssm_out.weight", normal(0.05), false, valDim, d)
		}
		m.add(b+"ffn_gate_inp.weight", normal(0.6), true, d, nExp)
		m.add(b+"ffn_gate_exps.weight", normal(0.08), false, d, ffExp, nExp)
		m.add(b+"ffn_up_exps.weight", normal(0.08), false, d, ffExp, nExp)
		m.add(b+"ffn_down_exps.weight", normal(0.08), false, ffExp, d, nExp)
		m.add(b+"ffn_gate_inp_shexp.weight", normal(0.1), true, d)
		m.add(b+"ffn_gate_shexp.weight", normal(0.08), false, d, ffShared)
		m.add(b+"ffn_up_shexp.weight", normal(0.08), false, d, ffShared)
		m.add(b+"ffn_down_shexp.weight", normal(0.08), false, ffShared, d)
		if i >= layers { // MTP: the nextn tensors (Qwen3.5's mtp.fc, pre_fc_norm_*, norm)
			m.add(b+"nextn.eh_proj.weight", normal(0.05), false, 2*d, d)
			m.add(b+"nextn.enorm.weight", normw(1, 0.05), true, d)
			m.add(b+"nextn.hnorm.weight", normw(1, 0.05), true, d)
			m.add(b+"nextn.shared_head_norm.weight", normw(1, 0.05), true, d)
		}
	}
	m.add("output_norm.weight", normw(8, 0.05), true, d)
	m.add("output.weight", normal(0.02), false, d, nv)
	return m, nil
}

// ---------------------------------------------------------------------------
// recordings

// HybridReferences reads testdata/reference-hybrid/index.tsv of this
// repository: llama.cpp's recordings of the hybrid presets (modelgen) and
// the 512-token recordings (modelgen presets and synthgguf's qwen35-mini).
// Each Ref has Path set to its jsonl file and Source to the command that
// writes the model (Ref.ModelPath makes it). A prompt written
// "FILE[:N tokens]" is the first N tokens of that file of the folder (the
// 512-token recordings).
func HybridReferences(t testing.TB) []Ref {
	var refs []Ref
	for _, row := range hybridIndex(t) {
		refs = append(refs, row.Ref)
	}
	return refs
}

func hybridIndex(t testing.TB) []modernRow { return repoIndex(t, "reference-hybrid") }

// LongReferences reads testdata/reference-long/index.tsv of this
// repository: llama.cpp's teacher-forced logits over prompts of 500 to
// 4,985 tokens (thinned: a file keeps some positions' tf lines), with an
// F16 cache, a quantized one (files named kvq8-*, kvq4-*: K and V in q8_0
// or q4_0, flash attention on), YaRN and LongRoPE.
func LongReferences(t testing.TB) []Ref {
	var refs []Ref
	for _, row := range repoIndex(t, "reference-long") {
		refs = append(refs, row.Ref)
	}
	return refs
}
