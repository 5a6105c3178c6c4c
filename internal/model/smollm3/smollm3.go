// Package smollm3 is llama.cpp's llama_model_smollm3: the Llama block
// (decoder.PreNorm) whose every fourth layer (3, 7, 11, …) attends without
// RoPE (NoPE), as llama.cpp fixes it (n_no_rope_layer_step = 4).
package smollm3

import (
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "smollm3", Tweak: func(c *model.Config) { c.NoRopeEvery = 4 }, Build: New})
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, decoder.LlamaLayer)
}
