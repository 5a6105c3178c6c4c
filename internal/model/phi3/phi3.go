// Package phi3 is llama.cpp's llm_build_phi3: the Llama block
// (decoder.PreNorm) with attention from one fused QKV projection,
// NeoX-style RoPE, queries scaled by 1/√headDim before the product (scores
// unscaled), and the SwiGLU from one fused gate+up projection (the gate's
// rows, then up's). The 128k models' LongRoPE factors
// (rope_factors_long/short.weight, picked by the context) and their
// rope.scaling.attn_factor are decoder.Bind's and the config's.
package phi3

import (
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "phi3", Tweak: tweak, Build: New})
}

// tweak sets Phi-3's flags. llama.cpp ignores the file's sliding window
// (attention.sliding_window, 2047 in Phi-3-mini's files): "Phi SWA is
// currently disabled", every layer attends to the whole context.
func tweak(c *model.Config) {
	c.RopeNeoX, c.QPreScale = true, true
	c.SlidingWindow = 0
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		// Converters write fused projections; split ones load too.
		l := decoder.Layer{
			AttnNorm: decoder.RMSNorm(b, p+"attn_norm.weight", c.Dim),
			FFNNorm:  decoder.RMSNorm(b, p+"ffn_norm.weight", c.Dim),
		}
		if b.Has(p + "attn_qkv.weight") {
			l.Attn = decoder.FusedQKV(b, c, p)
		} else {
			l.Attn = decoder.SplitQKV(b, c, p)
		}
		if b.Has(p + "ffn_gate.weight") {
			l.FFN = decoder.GatedFFN(b, c, p)
		} else {
			l.FFN = decoder.FusedGatedFFN(b, c, p)
		}
		return l
	})
}
