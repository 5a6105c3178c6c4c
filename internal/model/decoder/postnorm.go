package decoder

import "github.com/loom-inference/loom/internal/model"

// PostNorm is Gemma's block: embeddings scaled by √dim; each layer adds the
// RMS-normed output of attention of the normed stream, then the RMS-normed
// output of a GeGLU FFN of the normed stream (post-norms on both); the
// sliding layers rotate with their own RoPE when the family has one
// (Config.RopeBaseSWA); logits soft-capped when Config.FinalSoftcap is set.
// Gemma 2 and Gemma 3 are this network with their own binders (Gemma 2's
// attention scores are soft-capped too, Gemma 3 normalizes Q and K).
type PostNorm struct{ Weights }

// NewPostNorm binds a post-norm network's weights with layer.
func NewPostNorm(cfg *model.Config, src model.Source, layer LayerBinder) (model.Model, error) {
	w, err := Bind(cfg, src, layer, nil)
	if err != nil {
		return nil, err
	}
	return &PostNorm{w}, nil
}

// GemmaLayer binds the Llama block of layer p with Gemma's norms of the
// attention and FFN outputs (post_attention_norm, post_ffw_norm).
func GemmaLayer(b *model.Binder, c *model.Config, p string, i int) Layer {
	l := LlamaLayer(b, c, p, i)
	l.PostAttn = RMSNorm(b, p+"post_attention_norm.weight", c.Dim)
	l.PostFFN = RMSNorm(b, p+"post_ffw_norm.weight", c.Dim)
	return l
}

// NewRunner implements model.Model.
func (m *PostNorm) NewRunner(opts model.RunnerOptions) model.Runner { return NewRunner(m, opts) }

// Forward implements Net.
func (m *PostNorm) Forward(s *Step) {
	s.Embed(m.Head.Embd)
	s.ScaleEmbeddings()
	s.Angles(&m.Rope) // the global layers' (all of them without RopeBaseSWA)
	if m.Cfg.RopeBaseSWA > 0 {
		s.SlidingAngles(&m.RopeSWA) // the sliding layers' own base, unscaled
	}
	s.Embedded()
	for li := range m.Layers {
		l := &m.Layers[li]
		s.Norm(&l.AttnNorm)
		if li == len(m.Layers)-1 {
			s.KeepWanted() // queries, output and FFN for the wanted tokens only
		}
		s.Attention(li, &l.Attn)
		s.NormOutput(&l.PostAttn)
		s.Residual()
		s.Norm(&l.FFNNorm)
		s.GeGLU(&l.FFN)
		s.NormOutput(&l.PostFFN)
		s.Residual()
		s.LayerDone(li)
	}
	s.Logits(&m.Head, m.Cfg.FinalSoftcap)
}
