// Package llama is the Llama block, llama.cpp's llm_build_llama: RMSNorm →
// grouped-query attention with RoPE (and per-dimension RoPE factors, Llama
// 3.1) → RMSNorm → SwiGLU, or a mixture of experts in place of the SwiGLU
// when the file has experts (Mixtral: softmax over all experts, top k,
// weights renormalized). Llama 2/3, Mistral, SmolLM and TinyLlama are this
// block: decoder.PreNorm over decoder.LlamaLayer.
package llama

import (
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "llama", Tweak: func(c *model.Config) { c.SlidingWindow = 0 }, Build: New, Experts: true})
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, decoder.LlamaLayer)
}
