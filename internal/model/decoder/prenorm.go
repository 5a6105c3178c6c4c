package decoder

import "github.com/loom-inference/loom/internal/model"

// PreNorm is a family whose block is Llama's, whatever its weights hold
// (biases, Q/K norms, fused projections, experts): each layer adds
// attention of the normed stream, then the FFN (SwiGLU, or a mixture of
// experts) of the normed stream. Llama, Qwen2, Qwen3 and Phi-3 are this
// network with their own binders.
type PreNorm struct{ Weights }

// NewPreNorm binds a pre-norm network's weights with layer.
func NewPreNorm(cfg *model.Config, src model.Source, layer LayerBinder) (model.Model, error) {
	w, err := Bind(cfg, src, layer, nil)
	if err != nil {
		return nil, err
	}
	return &PreNorm{w}, nil
}

// LlamaLayer binds the Llama block of layer p: attn_norm, split Q/K/V
// projections, ffn_norm, and a SwiGLU FFN, or experts when c has them.
func LlamaLayer(b *model.Binder, c *model.Config, p string, _ int) Layer {
	l := Layer{
		AttnNorm: RMSNorm(b, p+"attn_norm.weight", c.Dim),
		Attn:     SplitQKV(b, c, p),
		FFNNorm:  RMSNorm(b, p+"ffn_norm.weight", c.Dim),
	}
	if c.NExperts > 0 {
		x := BindExperts(b, c, p)
		l.Experts = &x
	} else {
		l.FFN = GatedFFN(b, c, p)
	}
	return l
}

// NewRunner implements model.Model.
func (m *PreNorm) NewRunner(opts model.RunnerOptions) model.Runner { return NewRunner(m, opts) }

// Forward implements Net.
func (m *PreNorm) Forward(s *Step) {
	s.Embed(m.Head.Embd)
	s.Angles(&m.Rope)
	s.Embedded()
	for li := range m.Layers {
		l := &m.Layers[li]
		s.Norm(&l.AttnNorm)
		if li == len(m.Layers)-1 {
			s.KeepWanted() // queries, output and FFN for the wanted tokens only
		}
		s.Mixer(li, l)
		s.Residual()
		s.Norm(&l.FFNNorm)
		if l.Experts != nil {
			s.MoE(li, l.Experts)
		} else {
			s.SwiGLU(&l.FFN)
		}
		s.Residual()
		s.LayerDone(li)
	}
	s.Logits(&m.Head, 0)
}
