// Package qwen35 is llama.cpp's qwen35 (Qwen3.5 dense): a hybrid of gated
// delta nets (decoder.DeltaNet, a recurrent state per sequence) and, on
// every ssm full_attention_interval-th layer, gated full attention — a
// Qwen3 attention (per-head Q/K RMS norms, NeoX RoPE on the first
// rope.dimension_count dimensions) whose output each head multiplies by
// sigmoid of a gate projected with its query. Each block adds its mixer
// of the normed stream, then a SwiGLU of the stream normed again
// (post_attention_norm), as the pre-norm families.
//
// Qwen3.5's RoPE is interleaved multi-section (sections over time, height
// and width): for text every section has the token's position, so it is
// NeoX RoPE over the rotated dimensions.
//
// The same network with a mixture of experts in every block is qwen35moe
// (softmax over the router's logits, the top k renormalized, and a shared
// expert gated by sigmoid(ffn_gate_inp_shexp·x) added), and qwen3next
// (Qwen3-Next) is qwen35moe with plain NeoX RoPE, value heads grouped
// over the key heads (value head h reads key head h/(H_v/H_k), where
// Qwen3.5's converter tiles them) and the write strength and decay
// projected together (ssm_ba, laid out per key head).
package qwen35

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	tweak := func(c *model.Config) { c.RopeNeoX, c.QKNorm, c.AttnOutGate = true, true, true }
	model.Register(model.Arch{Name: "qwen35", Meta: meta, Tweak: tweak, Build: New})
	model.Register(model.Arch{Name: "qwen35moe", Meta: meta, Tweak: tweak, Build: New, Experts: true})
	model.Register(model.Arch{Name: "qwen3next", Meta: meta, Tweak: tweak, Build: New, Experts: true})
}

// meta reads the recurrent layers' geometry (ssm.*) and which layers are
// recurrent: attention.recurrent_layers, or every layer but each
// full_attention_interval-th (default 4), as llama.cpp's load_hparams.
func meta(f *gguf.File, c *model.Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	// The last nextn_predict_layers blocks are the multi-token prediction
	// head (real files carry one): the main pass does not run them.
	mtp, err := f.UintOr(key("nextn_predict_layers"), 0)
	if err != nil {
		return err
	}
	if mtp >= uint64(c.NLayers) {
		return fmt.Errorf("model: %s = %d of %s = %d blocks leaves no layer", key("nextn_predict_layers"), mtp, key("block_count"), c.NLayers)
	}
	c.NLayers -= int(mtp)
	for _, a := range []*[]int{&c.LayerKVHeads, &c.LayerHidden} {
		if *a != nil {
			*a = (*a)[:c.NLayers]
		}
	}
	if err := model.ReadSSM(f, c); err != nil {
		return err
	}
	if c.Arch != "qwen3next" { // Qwen3.5's interleaved multi-section RoPE
		if err := sections(f, c); err != nil {
			return err
		}
	}
	g := &c.SSM
	switch {
	case g.DtRank%g.Groups != 0:
		return fmt.Errorf("model: %s = %d value heads cannot share %s = %d key heads", key("ssm.time_step_rank"), g.DtRank, key("ssm.group_count"), g.Groups)
	case g.Inner%g.DtRank != 0 || g.Inner/g.DtRank != g.State:
		return fmt.Errorf("model: %s = %d over %d value heads is not the key heads' width %s = %d (llama.cpp's delta net needs equal widths)", key("ssm.inner_size"), g.Inner, g.DtRank, key("ssm.state_size"), g.State)
	}
	rec := make([]bool, c.NLayers)
	if v, ok := f.Get(key("attention.recurrent_layers")); ok && v.Type == gguf.ArrayT {
		a := v.V.(gguf.Array)
		if a.Len() < c.NLayers {
			return fmt.Errorf("model: %s has %d entries for %d layers", key("attention.recurrent_layers"), a.Len(), c.NLayers)
		}
		for i := range c.NLayers {
			x, ok := a.Int(i)
			if !ok {
				return fmt.Errorf("model: %s is an array of %s, want bools", key("attention.recurrent_layers"), a.Elem)
			}
			rec[i] = x != 0
		}
	} else {
		every, err := f.UintOr(key("full_attention_interval"), 4)
		if err != nil {
			return err
		}
		if every == 0 || every > model.MaxLayers {
			return fmt.Errorf("model: %s = %d is out of range", key("full_attention_interval"), every)
		}
		for i := range rec {
			rec[i] = uint64(i+1)%every != 0
		}
	}
	c.StateElems = make([]int, c.NLayers)
	elems := decoder.DeltaNetStateElems(c)
	if elems > model.MaxStateElems {
		return fmt.Errorf("model: a delta net's state of %d values (%s) is over the limit of %d", elems, key("ssm.*"), model.MaxStateElems)
	}
	for l, r := range rec {
		if r {
			c.StateElems[l] = elems
		}
	}
	return nil
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	next := cfg.Arch == "qwen3next"
	if cfg.NExperts == 0 && cfg.Arch != "qwen35" {
		return nil, fmt.Errorf("model: %s.expert_count is 0: %s blocks are mixtures of experts", cfg.Arch, cfg.Arch)
	}
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.Layer{
			AttnNorm: decoder.RMSNorm(b, p+"attn_norm.weight", c.Dim),
			FFNNorm:  decoder.RMSNorm(b, p+"post_attention_norm.weight", c.Dim),
		}
		decoder.BindMoE(&l, b, c, p, true)
		if c.Recurrent(i) {
			if next {
				l.DeltaNet = decoder.BindDeltaNetNext(b, c, p)
			} else {
				l.DeltaNet = decoder.BindDeltaNet(b, c, p)
			}
			return l
		}
		qDim, kvDim := c.NHeads*c.HeadDim, c.KVDim()
		l.Attn = decoder.Attn{
			Q:     b.Matrix(p+"attn_q.weight", 2*qDim, c.Dim),
			K:     b.Matrix(p+"attn_k.weight", kvDim, c.Dim),
			V:     b.Matrix(p+"attn_v.weight", kvDim, c.Dim),
			Out:   b.Matrix(p+"attn_output.weight", c.Dim, qDim),
			Gated: true,
		}
		l.Attn.BindQKNorm(b, c, p)
		return l
	})
}

// sections reads rope.dimension_sections (required, 4 entries) and marks
// the rotary pairs that stay still for text, as ggml's IMROPE assigns
// pair j the section s = j mod Σsections: the token's position (time,
// height or width component) when s%3 is 0, 1 or 2 and s < 3·sections[s%3],
// else the fourth component, 0 for text. Qwen3.5's [11, 11, 10, 0] over
// 32 pairs rotates them all (NeoX RoPE on the first rope.dimension_count
// dimensions).
func sections(f *gguf.File, c *model.Config) error {
	k := c.Arch + ".rope.dimension_sections"
	v, ok := f.Get(k)
	if !ok {
		return fmt.Errorf("model: missing %s", k)
	}
	a, ok := v.V.(gguf.Array)
	if !ok || a.Len() < 3 || a.Len() > 4 {
		return fmt.Errorf("model: %s must be an array of 4 integers", k)
	}
	var sec [4]int
	sum := 0
	for i := range a.Len() {
		x, ok := a.Int(i)
		if !ok || x < 0 || x > int64(model.MaxWidth) {
			return fmt.Errorf("model: %s[%d] is not a count", k, i)
		}
		sec[i] = int(x)
		sum += sec[i]
	}
	if sum == 0 || sum > c.RopeDims {
		return fmt.Errorf("model: %s %v sums to %d (want 1 to the %d rotated dimensions)", k, sec, sum, c.RopeDims)
	}
	var still []bool
	for j := range c.RopeDims / 2 {
		s := j % sum
		if s%3 < 3 && s < 3*sec[s%3] {
			continue
		}
		if still == nil {
			still = make([]bool, c.RopeDims/2)
		}
		still[j] = true
	}
	c.RopeStill = still
	return nil
}
