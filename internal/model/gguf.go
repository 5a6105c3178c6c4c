package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/loom-inference/loom/gguf"
)

// GGUFSource serves tensors from a parsed GGUF file.
type GGUFSource struct{ F *gguf.File }

// Tensor implements Source.
func (s GGUFSource) Tensor(name string) (Tensor, bool) {
	t, ok := s.F.Tensor(name)
	if !ok {
		return Tensor{}, false
	}
	return Tensor{Name: t.Name, Type: t.Type, Dims: t.Dims, Data: s.F.TensorData(t)}, true
}

// TensorNames implements TensorNamer.
func (s GGUFSource) TensorNames() []string {
	names := make([]string, len(s.F.Tensors))
	for i := range s.F.Tensors {
		names[i] = s.F.Tensors[i].Name
	}
	return names
}

// SplitSource serves tensors from the parts of a split GGUF model
// (llama.cpp's gguf-split: MODEL-0000K-of-0000N.gguf), each tensor from the
// part that holds it.
type SplitSource []*gguf.File

// Tensor implements Source.
func (s SplitSource) Tensor(name string) (Tensor, bool) {
	for _, f := range s {
		if t, ok := (GGUFSource{f}).Tensor(name); ok {
			return t, true
		}
	}
	return Tensor{}, false
}

// TensorNames implements TensorNamer.
func (s SplitSource) TensorNames() []string {
	var names []string
	for _, f := range s {
		names = append(names, GGUFSource{f}.TensorNames()...)
	}
	return names
}

// splitPart reports whether f is one part of a split model (gguf-split's
// split.count > 1).
func splitPart(f *gguf.File) bool {
	n, err := f.UintOr("split.count", 1)
	return err == nil && n > 1
}

// ConfigFromGGUF reads the hyperparameters of f's architecture
// (keys "<arch>.embedding_length" and so on, as llama.cpp reads them).
func ConfigFromGGUF(f *gguf.File) (*Config, error) { return configFrom(f, GGUFSource{f}) }

// ConfigFrom reads f's metadata; the vocabulary size comes from
// token_embd.weight wherever src holds it (any part of a split model, a
// Hugging Face folder).
func ConfigFrom(f *gguf.File, src Source) (*Config, error) { return configFrom(f, src) }

func configFrom(f *gguf.File, src Source) (*Config, error) {
	arch, ok := f.String("general.architecture")
	if !ok {
		return nil, fmt.Errorf("%s: missing general.architecture", f.Path)
	}
	a, err := Lookup(arch)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	key := func(k string) string { return arch + "." + k }
	c := &Config{Arch: arch}
	// Every count is checked to be an integer within int32 range here, and
	// against the limits and the others by validate below; block_count is
	// checked against the blk.N tensors at once.
	get := func(k string, def int64) int {
		if err != nil {
			return 0
		}
		var v uint64
		if def < 0 {
			v, err = f.Uint(key(k))
		} else {
			v, err = f.UintOr(key(k), uint64(def))
		}
		if err == nil && v > MaxCtx {
			err = fmt.Errorf("model: %s = %d is out of range", key(k), v)
		}
		return int(v)
	}
	c.Dim = get("embedding_length", -1)
	c.NLayers = get("block_count", -1)
	if _, one := src.(GGUFSource); err == nil && !(one && splitPart(f)) { // one part of a split model holds some layers only
		err = CheckLayers(src, c.NLayers, key("block_count"))
	}
	// feed_forward_length and head_count_kv may be per-layer arrays (Gemma
	// 4), as llama.cpp's get_key_or_arr reads them: the scalar is then the
	// largest entry (what buffers are sized by).
	perLayer := func(k string, zero bool) []int {
		if err != nil {
			return nil
		}
		v, ok := f.Get(key(k))
		if !ok || v.Type != gguf.ArrayT {
			return nil
		}
		a := v.V.(gguf.Array)
		if a.Len() != c.NLayers {
			err = fmt.Errorf("model: %s has %d entries for %d layers", key(k), a.Len(), c.NLayers)
			return nil
		}
		out := make([]int, a.Len())
		for i := range out {
			x, ok := a.Int(i)
			if !ok || x < 0 || x == 0 && !zero || x > MaxCtx {
				err = fmt.Errorf("model: %s[%d] is not a positive count", key(k), i)
				return nil
			}
			out[i] = int(x)
		}
		return out
	}
	if c.LayerHidden = perLayer("feed_forward_length", false); c.LayerHidden != nil {
		c.HiddenDim = slices.Max(c.LayerHidden)
	} else {
		c.HiddenDim = get("feed_forward_length", -1)
	}
	c.NHeads = get("attention.head_count", -1)
	// 0 KV heads mark a recurrent layer in hybrid families (LFM2, Granite
	// 4.0-H); validate refuses them on any other layer.
	if c.LayerKVHeads = perLayer("attention.head_count_kv", true); c.LayerKVHeads != nil {
		c.NKVHeads = slices.Max(c.LayerKVHeads)
	} else {
		c.NKVHeads = get("attention.head_count_kv", int64(c.NHeads))
	}
	c.CtxLen = get("context_length", 2048)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if _, ok := f.Get(key("attention.key_length")); !ok && c.NHeads > 0 && c.Dim%c.NHeads != 0 {
		return nil, fmt.Errorf("%s: model: %s = %d is not divisible by %s = %d (and there is no %s)",
			f.Path, key("embedding_length"), c.Dim, key("attention.head_count"), c.NHeads, key("attention.key_length"))
	}
	if c.NHeads > 0 {
		c.HeadDim = c.Dim / c.NHeads
	}
	c.HeadDim = get("attention.key_length", int64(c.HeadDim))
	if vl := get("attention.value_length", int64(c.HeadDim)); err == nil && vl != c.HeadDim {
		return nil, fmt.Errorf("%s: model: %s = %d differs from %s = %d (unsupported)", f.Path, key("attention.value_length"), vl, key("attention.key_length"), c.HeadDim)
	}
	c.RopeDims = get("rope.dimension_count", int64(c.HeadDim))
	c.SlidingWindow = get("attention.sliding_window", 0)
	c.NExperts = get("expert_count", 0)
	c.NExpertsUsed = get("expert_used_count", 0)
	c.ExpertHidden = get("expert_feed_forward_length", int64(c.HiddenDim))
	c.SharedHidden = get("expert_shared_feed_forward_length", 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if c.NExperts == 0 { // a dense model: nothing is sized by expert widths
		c.NExpertsUsed, c.ExpertHidden, c.SharedHidden = 0, 0, 0
	}
	float := func(k string, def float64) float32 {
		if err != nil {
			return 0
		}
		var v float64
		v, err = f.FloatOr(key(k), def)
		return float32(v)
	}
	c.Eps = float("attention.layer_norm_rms_epsilon", 1e-5)
	if _, ok := f.Get(key("attention.layer_norm_epsilon")); ok { // LayerNorm models (GPT-2)
		c.Eps = float("attention.layer_norm_epsilon", 1e-5)
	}
	// RoPE as llama_model's load_hparams reads it (the type defaults to
	// linear, the factor is read whatever the type, rope.scale_linear is
	// its old name) and llama_context resolves it (resolveRope).
	c.RopeBase = float("rope.freq_base", 10000)
	c.RopeOrigCtx = get("rope.scaling.original_context_length", int64(c.CtxLen))
	c.Yarn = YaRN{RopeAttnFactor: float("rope.scaling.attn_factor", 1), BetaFast: 32, BetaSlow: 1, OrigCtx: c.RopeOrigCtx}
	if c.Yarn.OrigCtx == 0 { // cparams.n_ctx_orig_yarn: the training context when the file says 0
		c.Yarn.OrigCtx = c.CtxLen
	}
	c.RopeScaling = "linear"
	if st, ok := f.String(key("rope.scaling.type")); ok {
		c.RopeScaling = st
	}
	if !slices.Contains([]string{"none", "linear", "yarn", "longrope"}, c.RopeScaling) {
		return nil, fmt.Errorf("%s: rope scaling type %q is not supported", f.Path, c.RopeScaling)
	}
	if _, ok := f.Get(key("rope.scaling.factor")); ok {
		c.ropeTrainFactor = float("rope.scaling.factor", 0)
	} else {
		c.ropeTrainFactor = float("rope.scale_linear", 0)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if c.ropeTrainFactor == 0 { // llama.cpp: no factor, no scaling
		c.ropeTrainFactor = 1
	}
	c.resolveRope(RopeParams{}) // validate rejects a negative or non-finite factor
	if t, ok := src.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 {
		c.NVocab = int(min(t.Dims[1], MaxVocab+1))
	}
	c.SlidingEvery = 1
	if err := readEmbedding(f, c, key); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if a.Meta != nil {
		if err := a.Meta(f, c); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	c.Yarn.AttnFactor = yarnAttnFactor(c)
	a.Tweak(c)
	if c.NExperts > 0 && !a.Experts {
		return nil, fmt.Errorf("%s: model: %s = %d, but Loom's %s blocks have no experts", f.Path, key("expert_count"), c.NExperts, arch)
	}
	if err := c.validate(key); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return c, nil
}

// LoadGGUF builds the model stored in f.
func LoadGGUF(f *gguf.File) (Model, error) { return LoadGGUFFrom(f, GGUFSource{f}) }

// LoadGGUFFrom builds the model whose metadata is f's and whose tensors
// come from src (the parts of a split model).
func LoadGGUFFrom(f *gguf.File, src Source) (Model, error) { return LoadGGUFWith(f, src, nil) }

// LoadGGUFWith is LoadGGUFFrom with the caller's changes to the config
// before the model is built (the engine's pooling override); set's error
// is reported with the file's path.
func LoadGGUFWith(f *gguf.File, src Source, set func(*Config) error) (Model, error) {
	cfg, err := configFrom(f, src)
	if err != nil {
		return nil, err
	}
	if set != nil {
		if err := set(cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	a, _ := Lookup(cfg.Arch)
	m, err := a.Build(cfg, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return m, nil
}

// SetRope overrides the file's RoPE parameters as llama_context's
// parameters do (llama.cpp's --rope-scaling, --rope-freq-base,
// --rope-freq-scale or --rope-scale, --yarn-orig-ctx): the frequency base
// and scale replace the file's, scaling none turns the scale off, yarn
// turns YaRN's extrapolation mix on (any other type off), the original
// context replaces YaRN's (not LongRoPE's threshold, which llama.cpp
// takes from the file), and YaRN's magnitude scale is derived again.
// Zero fields keep the file's.
func (c *Config) SetRope(p RopeParams) error {
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	switch {
	case !slices.Contains([]string{"", "none", "linear", "yarn"}, p.Scaling):
		return fmt.Errorf("model: RoPE scaling %q (want none, linear or yarn)", p.Scaling)
	case !finite(p.FreqBase) || p.FreqBase < 0:
		return fmt.Errorf("model: RoPE frequency base %v (must be positive)", p.FreqBase)
	case !finite(p.FreqScale) || p.FreqScale < 0:
		return fmt.Errorf("model: RoPE frequency scale %v (must be positive)", p.FreqScale)
	case p.YarnOrigCtx < 0 || p.YarnOrigCtx > MaxCtx:
		return fmt.Errorf("model: YaRN original context %d (want 1 to %d)", p.YarnOrigCtx, MaxCtx)
	case c.LearnedPos:
		return fmt.Errorf("model: %s has learned positions, no RoPE to change", c.Arch)
	}
	c.resolveRope(p)
	return nil
}

// resolveRope sets the RoPE the model runs with from the file's values
// and p's overrides, as llama_context's constructor does: rope_freq_base,
// rope_freq_scale (1 with scaling none), n_ctx_orig_yarn, yarn_ext_factor
// (1 with YaRN, else 0) and yarn_attn_factor.
func (c *Config) resolveRope(p RopeParams) {
	if c.RopeScaling == "" { // a config not read from a file
		c.RopeScaling = "linear"
		if c.Yarn.ExtFactor != 0 {
			c.RopeScaling = "yarn"
		}
	}
	if c.ropeTrainFactor == 0 {
		c.ropeTrainFactor = c.RopeScale
	}
	if p.Scaling != "" {
		c.RopeScaling = p.Scaling
	}
	if p.FreqBase != 0 {
		c.RopeBase = p.FreqBase
	}
	fs := 1 / c.ropeTrainFactor // hparams.rope_freq_scale_train
	if p.FreqScale != 0 {
		fs = p.FreqScale
	}
	if c.RopeScaling == "none" {
		fs = 1
	}
	c.RopeFreqScale, c.RopeScale = fs, 1/fs
	if p.YarnOrigCtx != 0 {
		c.Yarn.OrigCtx = p.YarnOrigCtx
	}
	c.Yarn.ExtFactor = 0
	if c.RopeScaling == "yarn" {
		c.Yarn.ExtFactor = 1
	}
	c.Yarn.AttnFactor = yarnAttnFactor(c)
}

// yarnAttnFactor is llama_context's yarn_attn_factor: with YaRN,
// get_mscale(factor, 1) / get_mscale(factor, LogMul) (or get_mscale(factor,
// 1) alone without rope.scaling.yarn_log_mul) · 1/(1 + 0.1·ln factor) — the
// terms cancel but for float32 rounding, which is kept: ggml multiplies
// the magnitude scale back in (nn.RoPE.Yarn) — then · rope.scaling.
// attn_factor, with or without YaRN. Each step is float32, as llama.cpp
// computes it.
func yarnAttnFactor(c *Config) float32 {
	y := &c.Yarn
	af := float32(1)
	if y.ExtFactor != 0 {
		factor := 1 / c.FreqScale() // 1.0f / cparams.rope_freq_scale
		mscale := func(m float32) float32 {
			if factor <= 1 {
				return 1
			}
			return float32(float32(0.1)*m*logf(factor)) + 1
		}
		af = mscale(1)
		if y.LogMul != 0 {
			af = mscale(1) / mscale(y.LogMul)
		}
		af *= 1 / float32(1+float32(float32(0.1)*logf(factor)))
	}
	return af * y.RopeAttnFactor
}

// logf is C's logf for the arguments here (positive, normal): the float64
// logarithm rounded to float32, which glibc's logf returns.
func logf(x float32) float32 { return float32(math.Log(float64(x))) }

// SlidingPattern sets which layers slide as llama.cpp's load_swa_pattern
// does (dense_first false): the file's attention.sliding_window_pattern as
// a per-layer bool array, or as a period n, else the family's period: of
// every n layers the first n−1 slide (n = 0: all of them).
func SlidingPattern(f *gguf.File, c *Config, period uint64) error {
	key := c.Arch + ".attention.sliding_window_pattern"
	if v, ok := f.Get(key); ok && v.Type == gguf.ArrayT {
		// Per layer, bools or integers (nonzero: sliding); layers past
		// the array's end attend globally, as llama.cpp's get_arr leaves them.
		a := v.V.(gguf.Array)
		if a.Len() > c.NLayers {
			return fmt.Errorf("model: %s has %d entries for %d layers", key, a.Len(), c.NLayers)
		}
		c.SlidingLayers = make([]bool, c.NLayers)
		for i := range a.Len() {
			x, ok := a.Int(i)
			if !ok {
				return fmt.Errorf("model: %s is an array of %s, want bools or integers", key, a.Elem)
			}
			c.SlidingLayers[i] = x != 0
		}
		return nil
	}
	n, err := f.UintOr(key, period)
	if err != nil {
		return err
	}
	if n > MaxLayers {
		return fmt.Errorf("model: %s = %d is out of range", key, n)
	}
	c.SlidingLayers = make([]bool, c.NLayers)
	for l := range c.SlidingLayers {
		c.SlidingLayers[l] = n == 0 || uint64(l)%n < n-1
	}
	return nil
}

// readEmbedding reads what makes an embedding or reranking model:
// attention.causal, pooling_type, classifier.output_labels and the token
// type count, as llama.cpp's load_hparams does.
func readEmbedding(f *gguf.File, c *Config, key func(string) string) error {
	causal, err := f.Bool(key("attention.causal"), true)
	if err != nil {
		return err
	}
	c.NonCausal = !causal
	if _, ok := f.Get(key("pooling_type")); ok {
		p, err := f.Uint(key("pooling_type"))
		if err != nil {
			return fmt.Errorf("model: %s: %w", key("pooling_type"), err)
		}
		if p > uint64(PoolRank) {
			return fmt.Errorf("model: %s = %d is not a pooling type (0 none, 1 mean, 2 cls, 3 last, 4 rank)", key("pooling_type"), p)
		}
		c.Pooling, c.PoolingSet = Pooling(p), true
		c.EmbedOnly = c.Pooling != PoolNone
	}
	c.NClsOut = 1
	if v, ok := f.Get(key("classifier.output_labels")); ok {
		if v.Type != gguf.ArrayT {
			return fmt.Errorf("model: %s is not an array", key("classifier.output_labels"))
		}
		n := v.V.(gguf.Array).Len()
		if n < 1 || n > 1<<16 {
			return fmt.Errorf("model: %s has %d labels", key("classifier.output_labels"), n)
		}
		c.NClsOut = n
	}
	tt, err := f.UintOr("tokenizer.ggml.token_type_count", 0)
	if err != nil {
		return err
	}
	if tt > 1<<16 {
		return fmt.Errorf("model: tokenizer.ggml.token_type_count = %d is out of range", tt)
	}
	c.TokenTypes = int(tt)
	return nil
}
