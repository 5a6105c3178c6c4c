// Package gptoss is llama.cpp's llama_model_openai_moe (architecture
// "gpt-oss"): RMSNorm → attention (Q/K/V and output biases, NeoX RoPE with
// YaRN scaling, a sliding window on every other layer from the first, and a
// learned sink logit per head that joins each softmax's denominator) →
// residual → RMSNorm (post_attention_norm) → mixture of experts (router with
// bias; the top k router logits, softmax over those k; experts with biases
// and gpt-oss's clamped SwiGLU; MXFP4 weights in the released files) →
// residual → final RMSNorm → an untied LM head.
package gptoss

import (
	"math"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "gpt-oss", Meta: meta, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.FFN, c.ExpertGating, c.QKVBias, c.Sinks = true, model.SwiGLUOAI, model.TopKSoftmax, true, true
		if c.RopeDims != c.HeadDim { // llama.cpp scales by 1/√n_rot
			c.AttnScale = 1 / float32(math.Sqrt(float64(c.RopeDims)))
		}
	}, Build: New, Experts: true})
}

// meta reads the sliding pattern (every other layer from layer 0 unless
// the file says otherwise), as llama.cpp's loader does.
func meta(f *gguf.File, c *model.Config) error {
	return model.SlidingPattern(f, c, 2)
}

// New binds the weights of cfg from src: decoder.PreNorm, its FFN norm
// being post_attention_norm and its FFN the experts.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, _ int) decoder.Layer {
		l := decoder.Layer{
			AttnNorm: decoder.RMSNorm(b, p+"attn_norm.weight", c.Dim),
			Attn:     decoder.SplitQKV(b, c, p),
			FFNNorm:  decoder.RMSNorm(b, p+"post_attention_norm.weight", c.Dim),
		}
		l.Attn.BindQKVBias(b, c, p)
		l.Attn.OutBias = b.Vector(p+"attn_output.bias", c.Dim)
		if c.Sinks {
			l.Attn.Sinks = b.Vector(p+"attn_sinks.weight", c.NHeads)
		}
		x := decoder.BindExperts(b, c, p)
		x.BindExpertBiases(b, c, p)
		l.Experts = &x
		return l
	})
}
