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

// New binds the weights of cfg from src: decoder.PostNorm.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPostNorm(cfg, src, decoder.GemmaLayer)
}
