// Package gemma2 is llama.cpp's llm_build_gemma2: embeddings scaled by √dim
// → RMSNorm → attention (NeoX-style RoPE, queries scaled before the
// product, scores soft-capped: cap·tanh(s/cap), a sliding window on every
// other layer starting with the first) → RMSNorm of the attention output →
// residual → RMSNorm → GeGLU (tanh GELU) → RMSNorm of the FFN output →
// residual → final RMSNorm, the head tied to the embeddings, logits
// soft-capped.
package gemma2

import (
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "gemma2", Meta: softcaps, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.EmbedScale, c.PostNorms, c.FFN, c.SlidingEvery, c.QPreScale = true, true, true, model.GeGLU, 2, true
	}, Build: New})
}

// softcaps reads gemma2.attn_logit_softcapping and
// gemma2.final_logit_softcapping, with llama.cpp's defaults (50 and 30)
// when the keys are absent.
func softcaps(f *gguf.File, c *model.Config) error {
	attn, err := f.FloatOr(c.Arch+".attn_logit_softcapping", 50)
	if err != nil {
		return err
	}
	final, err := f.FloatOr(c.Arch+".final_logit_softcapping", 30)
	if err != nil {
		return err
	}
	c.AttnSoftcap, c.FinalSoftcap = float32(attn), float32(final)
	return nil
}

// Model is a Gemma 2 network's weights.
type Model struct{ decoder.Weights }

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	w, err := decoder.Bind(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.LlamaLayer(b, c, p, i)
		l.PostAttn = decoder.RMSNorm(b, p+"post_attention_norm.weight", c.Dim)
		l.PostFFN = decoder.RMSNorm(b, p+"post_ffw_norm.weight", c.Dim)
		return l
	}, nil)
	if err != nil {
		return nil, err
	}
	return &Model{w}, nil
}

// NewRunner implements model.Model.
func (m *Model) NewRunner(opts model.RunnerOptions) model.Runner { return decoder.NewRunner(m, opts) }

// Forward implements decoder.Net.
func (m *Model) Forward(s *decoder.Step) {
	s.Embed(m.Head.Embd)
	s.ScaleEmbeddings()
	s.Angles(&m.Rope)
	s.Embedded()
	for li := range m.Layers {
		l := &m.Layers[li]
		s.Norm(&l.AttnNorm)
		s.Attention(li, &l.Attn) // soft-capped scores; sliding on even layers
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
