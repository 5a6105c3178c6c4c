// Package granite is llama.cpp's llama_model_granite (Granite 3.x dense):
// the Llama block with four multipliers — embeddings × embedding_scale,
// attention scores × attention.scale (instead of 1/√head_dim), each
// block's output × residual_scale before its residual add, and logits ÷
// logit_scale. rope.scaling.finetuned = false turns RoPE off, as llama.cpp
// reads it.
package granite

import (
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "granite", Meta: meta, Tweak: func(*model.Config) {}, Build: New})
}

// meta reads the multipliers: logit_scale is required, as llama.cpp
// requires it; the others are optional (0: not applied).
func meta(f *gguf.File, c *model.Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	logit, err := f.Float(key("logit_scale"))
	if err != nil {
		return err
	}
	c.LogitDiv = float32(logit)
	for _, o := range []struct {
		k string
		v *float32
	}{{"embedding_scale", &c.EmbedMul}, {"residual_scale", &c.ResidualMul}, {"attention.scale", &c.AttnScale}} {
		x, err := f.FloatOr(key(o.k), 0)
		if err != nil {
			return err
		}
		*o.v = float32(x)
	}
	rope, err := f.Bool(key("rope.scaling.finetuned"), true)
	if err != nil {
		return err
	}
	if !rope {
		c.NoRopeEvery = 1
	}
	return nil
}

// Model is a Granite network's weights (Granite 3, or Granite 4.0-H:
// hybrid.go).
type Model struct{ decoder.Weights }

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	w, err := decoder.Bind(cfg, src, decoder.LlamaLayer, nil)
	if err != nil {
		return nil, err
	}
	return &Model{w}, nil
}

// NewRunner implements model.Model.
func (m *Model) NewRunner(opts model.RunnerOptions) model.Runner { return decoder.NewRunner(m, opts) }

// Forward implements decoder.Net.
func (m *Model) Forward(s *decoder.Step) {
	c := &m.Cfg
	s.Embed(m.Head.Embd)
	if c.EmbedMul != 0 {
		s.MulEmbeddings(c.EmbedMul)
	}
	s.Angles(&m.Rope)
	s.Embedded()
	for li := range m.Layers {
		l := &m.Layers[li]
		s.Norm(&l.AttnNorm)
		if li == len(m.Layers)-1 {
			s.KeepWanted() // queries, output and FFN for the wanted tokens only
		}
		s.Mixer(li, l) // attention (scores × attention.scale), or Granite 4.0-H's Mamba-2 layer
		residual(s, c)
		s.Norm(&l.FFNNorm)
		if l.Experts != nil {
			s.MoE(li, l.Experts) // Granite 4.0-H: and the shared expert
		} else {
			s.SwiGLU(&l.FFN)
		}
		residual(s, c)
		s.LayerDone(li)
	}
	s.Logits(&m.Head, 0)
	s.ScaleLogits(1 / c.LogitDiv)
}

// residual adds a block's output, scaled by residual_scale when set.
func residual(s *decoder.Step, c *model.Config) {
	if c.ResidualMul != 0 {
		s.ScaleOutput(c.ResidualMul)
	}
	s.Residual()
}
