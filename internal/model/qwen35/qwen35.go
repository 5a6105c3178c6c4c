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
package qwen35

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "qwen35", Meta: meta, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKNorm, c.AttnOutGate = true, true, true
	}, Build: New})
}

// meta reads the recurrent layers' geometry (ssm.*) and which layers are
// recurrent: attention.recurrent_layers, or every layer but each
// full_attention_interval-th (default 4), as llama.cpp's load_hparams.
func meta(f *gguf.File, c *model.Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	u := func(k string, lim uint64) (int, error) {
		v, err := f.UintOr(key(k), 0)
		if err == nil && (v == 0 || v > lim) {
			err = fmt.Errorf("model: %s = %d is out of range (1 to %d)", key(k), v, lim)
		}
		return int(v), err
	}
	g := &c.SSM
	var err error
	for _, p := range []struct {
		k   string
		v   *int
		lim uint64
	}{
		{"ssm.conv_kernel", &g.Conv, 64},
		{"ssm.inner_size", &g.Inner, model.MaxWidth},
		{"ssm.state_size", &g.State, 4096},
		{"ssm.group_count", &g.Groups, model.MaxHeads},
		{"ssm.time_step_rank", &g.DtRank, model.MaxHeads},
	} {
		if *p.v, err = u(p.k, p.lim); err != nil {
			return err
		}
	}
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
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.Layer{
			AttnNorm: decoder.RMSNorm(b, p+"attn_norm.weight", c.Dim),
			FFNNorm:  decoder.RMSNorm(b, p+"post_attention_norm.weight", c.Dim),
			FFN:      decoder.GatedFFN(b, c, p),
		}
		if c.Recurrent(i) {
			l.DeltaNet = decoder.BindDeltaNet(b, c, p)
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
