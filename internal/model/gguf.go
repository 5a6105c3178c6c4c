package model

import (
	"fmt"

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
	c := &Config{Arch: arch}
	get := func(key string, def int64) int {
		if err != nil {
			return 0
		}
		var v uint64
		if def < 0 {
			v, err = f.Uint(arch + "." + key)
		} else {
			v, err = f.UintOr(arch+"."+key, uint64(def))
		}
		if err == nil && v > 1<<31 {
			err = fmt.Errorf("gguf: %s.%s = %d is out of range", arch, key, v)
		}
		return int(v)
	}
	c.Dim = get("embedding_length", -1)
	c.NLayers = get("block_count", -1)
	c.HiddenDim = get("feed_forward_length", -1)
	c.NHeads = get("attention.head_count", -1)
	c.NKVHeads = get("attention.head_count_kv", int64(c.NHeads))
	c.CtxLen = get("context_length", 2048)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	if c.NHeads <= 0 || c.Dim%c.NHeads != 0 {
		// key_length may still give head_dim; default needs a divisible dim.
		c.HeadDim = 0
	} else {
		c.HeadDim = c.Dim / c.NHeads
	}
	c.HeadDim = get("attention.key_length", int64(c.HeadDim))
	if vl := get("attention.value_length", int64(c.HeadDim)); err == nil && vl != c.HeadDim {
		return nil, fmt.Errorf("%s: value_length %d differs from key_length %d (unsupported)", f.Path, vl, c.HeadDim)
	}
	c.RopeDims = get("rope.dimension_count", int64(c.HeadDim))
	c.SlidingWindow = get("attention.sliding_window", 0)
	c.NExperts = get("expert_count", 0)
	c.NExpertsUsed = get("expert_used_count", 0)
	c.ExpertHidden = get("expert_feed_forward_length", int64(c.HiddenDim))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	eps, err := f.FloatOr(arch+".attention.layer_norm_rms_epsilon", 1e-5)
	if err != nil {
		return nil, err
	}
	if _, ok := f.Get(arch + ".attention.layer_norm_epsilon"); ok { // LayerNorm models (GPT-2)
		if eps, err = f.FloatOr(arch+".attention.layer_norm_epsilon", 1e-5); err != nil {
			return nil, err
		}
	}
	c.Eps = float32(eps)
	// Soft-capping: Gemma 2's defaults (50, 30) apply when the keys are
	// absent, as in llama.cpp; Tweak clears them for other families.
	acap, err := f.FloatOr(arch+".attn_logit_softcapping", 50)
	if err != nil {
		return nil, err
	}
	fcap, err := f.FloatOr(arch+".final_logit_softcapping", 30)
	if err != nil {
		return nil, err
	}
	c.AttnSoftcap, c.FinalSoftcap = float32(acap), float32(fcap)
	base, err := f.FloatOr(arch+".rope.freq_base", 10000)
	if err != nil {
		return nil, err
	}
	c.RopeBase = float32(base)
	c.RopeScale = 1
	if st, _ := f.String(arch + ".rope.scaling.type"); st == "linear" {
		fac, err := f.FloatOr(arch+".rope.scaling.factor", 1)
		if err != nil {
			return nil, err
		}
		if fac > 0 {
			c.RopeScale = float32(fac)
		}
	} else if st != "" && st != "none" {
		return nil, fmt.Errorf("%s: rope scaling type %q is not supported", f.Path, st)
	}
	if t, ok := src.Tensor("token_embd.weight"); ok && len(t.Dims) == 2 {
		c.NVocab = int(t.Dims[1])
	}
	c.SlidingEvery = 1
	if !a.Softcaps {
		c.AttnSoftcap, c.FinalSoftcap = 0, 0
	}
	a.Tweak(c)
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return c, nil
}

// LoadGGUF builds the model stored in f.
func LoadGGUF(f *gguf.File) (Model, error) { return LoadGGUFFrom(f, GGUFSource{f}) }

// LoadGGUFFrom builds the model whose metadata is f's and whose tensors
// come from src (the parts of a split model).
func LoadGGUFFrom(f *gguf.File, src Source) (Model, error) {
	cfg, err := configFrom(f, src)
	if err != nil {
		return nil, err
	}
	a, _ := Lookup(cfg.Arch)
	m, err := a.Build(cfg, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return m, nil
}
