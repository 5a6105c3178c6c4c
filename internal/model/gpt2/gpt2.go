// Package gpt2 is llama.cpp's llm_build_gpt2: token plus learned absolute
// position embeddings (no RoPE) → LayerNorm with bias → multi-head
// attention from a fused QKV projection with bias, output projection with
// bias → LayerNorm → MLP: up with bias, GELU (tanh form), down with bias →
// a final LayerNorm and the LM head.
package gpt2

import (
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "gpt2", Tweak: func(c *model.Config) {
		c.LayerNorm, c.LearnedPos, c.FFN, c.RopeDims, c.SlidingWindow = true, true, model.GELU, 0, 0
	}, Build: New})
}

// Model is a GPT-2 network's weights.
type Model struct {
	decoder.Weights
	PosEmbd *kernels.Matrix // [ctx, dim] learned positions
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	m := &Model{}
	var err error
	m.Weights, err = decoder.Bind(cfg, src, func(b *model.Binder, c *model.Config, p string, _ int) decoder.Layer {
		return decoder.Layer{
			AttnNorm: decoder.LayerNorm(b, p+"attn_norm.", c.Dim),
			Attn:     decoder.FusedQKV(b, c, p), // with biases
			FFNNorm:  decoder.LayerNorm(b, p+"ffn_norm.", c.Dim),
			FFN:      decoder.MLP(b, c, p),
		}
	}, func(b *model.Binder, c *model.Config) {
		m.PosEmbd = b.Matrix("position_embd.weight", c.CtxLen, c.Dim)
		if m.PosEmbd != nil {
			m.PosEmbd.Embedding = true
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// NewRunner implements model.Model.
func (m *Model) NewRunner(opts model.RunnerOptions) model.Runner { return decoder.NewRunner(m, opts) }

// Forward implements decoder.Net.
func (m *Model) Forward(s *decoder.Step) {
	s.Embed(m.Head.Embd)
	s.AddPositions(m.PosEmbd)
	s.Embedded()
	for li := range m.Layers {
		l := &m.Layers[li]
		s.Norm(&l.AttnNorm) // LayerNorm with bias
		if li == len(m.Layers)-1 {
			s.KeepWanted() // queries, output and FFN for the wanted tokens only
		}
		s.Attention(li, &l.Attn)
		s.Residual()
		s.Norm(&l.FFNNorm)
		s.GELU(&l.FFN)
		s.Residual()
		s.LayerDone(li)
	}
	s.Logits(&m.Head, 0) // final LayerNorm, then the head
}
