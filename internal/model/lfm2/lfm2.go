// Package lfm2 is llama.cpp's lfm2 (Liquid LFM2 and LFM2.5, dense): a
// hybrid of gated short convolutions (decoder.ShortConv: B⊙X through a
// causal depthwise convolution of shortconv.l_cache taps, gated by C; a
// state of the last inputs per sequence) and GQA attention layers with
// per-head Q/K RMS norms and NeoX RoPE. A layer is a convolution when its
// attention.head_count_kv entry is 0. Each block adds its mixer of the
// normed stream, then a SwiGLU of the stream normed again; the final norm
// is the tensor the converter names token_embd_norm.
package lfm2

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "lfm2", Meta: meta, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKNorm, c.OutputNorm = true, true, "token_embd_norm.weight"
	}, Build: New})
}

// meta reads the convolution's width (shortconv.l_cache, required, more
// than 1 as llama.cpp asserts) and marks the layers without KV heads as
// convolutions.
func meta(f *gguf.File, c *model.Config) error {
	k := c.Arch + ".shortconv.l_cache"
	l, err := f.Uint(k)
	if err != nil {
		return err
	}
	if l < 2 || l > 64 {
		return fmt.Errorf("model: %s = %d is out of range (2 to 64)", k, l)
	}
	c.SSM = model.SSM{Kind: model.ShortConv, Conv: int(l)}
	if !c.NonCausal {
		return model.RecurrentByKVHeads(c, decoder.ShortConvStateElems(c))
	}
	return fmt.Errorf("model: %s.attention.causal = false (LFM2's bidirectional embedding variants) is not supported", c.Arch)
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.Layer{
			AttnNorm: decoder.RMSNorm(b, p+"attn_norm.weight", c.Dim),
			FFNNorm:  decoder.RMSNorm(b, p+"ffn_norm.weight", c.Dim),
			FFN:      decoder.GatedFFN(b, c, p),
		}
		if c.Recurrent(i) {
			l.ShortConv = decoder.BindShortConv(b, c, p)
			return l
		}
		l.Attn = decoder.SplitQKV(b, c, p)
		l.Attn.BindQKNorm(b, c, p)
		return l
	})
}
