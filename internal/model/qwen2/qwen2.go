// Package qwen2 is llama.cpp's llm_build_qwen2: the Llama block
// (decoder.PreNorm) with biases on the Q, K and V projections and
// NeoX-style RoPE (rotating the two halves of a head rather than
// interleaved pairs).
package qwen2

import (
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "qwen2", Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKVBias, c.SlidingWindow = true, true, 0
	}, Build: New})
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.LlamaLayer(b, c, p, i)
		l.Attn.BindQKVBias(b, c, p)
		return l
	})
}
