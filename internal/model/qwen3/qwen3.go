// Package qwen3 is llama.cpp's llm_build_qwen3 and llm_build_qwen3moe: the
// Llama block (decoder.PreNorm) with NeoX-style RoPE and a per-head RMSNorm
// of Q and K before the rotation; Qwen3-MoE replaces the SwiGLU with a
// mixture of experts (softmax over all experts, top k, weights
// renormalized).
package qwen3

import (
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	tweak := func(c *model.Config) { c.RopeNeoX, c.QKNorm, c.SlidingWindow = true, true, 0 }
	model.Register(model.Arch{Name: "qwen3", Tweak: tweak, Build: New})
	model.Register(model.Arch{Name: "qwen3moe", Tweak: tweak, Build: New, Experts: true})
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.LlamaLayer(b, c, p, i)
		l.Attn.BindQKNorm(b, c, p)
		return l
	})
}
