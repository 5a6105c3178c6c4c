// Package gemma3 is llama.cpp's llama_model_gemma3 (text): embeddings
// scaled by √dim → RMSNorm → attention (per-head RMSNorm of Q and K, then
// NeoX-style RoPE, queries scaled by 1/√head_dim before the product; five
// sliding-window layers to one global one, the local layers with their own
// unscaled RoPE base, the global ones with the file's base and scaling) →
// RMSNorm of the attention output → residual → RMSNorm → GeGLU (tanh GELU)
// → RMSNorm of the FFN output → residual → final RMSNorm, the head tied to
// the embeddings unless the file has output.weight; no soft-capping unless
// the file asks for a final one.
package gemma3

import (
	"fmt"
	"math"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "gemma3", Meta: meta, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.EmbedScale, c.PostNorms, c.FFN, c.QPreScale, c.QKNorm = true, true, true, model.GeGLU, true, true
	}, Build: New})
	// EmbeddingGemma: Gemma 3 bidirectional, its sliding layers seeing
	// ±window/2 positions (llama.cpp's LLAMA_SWA_TYPE_SYMMETRIC), the
	// final norm's output pooled, then the dense projections (decoder.PoolHead).
	model.Register(model.Arch{Name: "gemma-embedding", Meta: embeddingMeta, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.EmbedScale, c.PostNorms, c.FFN, c.QPreScale, c.QKNorm = true, true, true, model.GeGLU, true, true
		c.NonCausal, c.SymmetricSWA, c.EmbedOnly, c.AttnScale = true, true, true, 0
	}, Build: New})
}

// embeddingMeta reads EmbeddingGemma's keys as llama.cpp's loader does:
// the sliding window is required, the pattern and local RoPE base as
// Gemma 3's, no soft-capping, the query scale 1/√head_dim.
func embeddingMeta(f *gguf.File, c *model.Config) error {
	if c.SlidingWindow <= 0 {
		return fmt.Errorf("model: %s.attention.sliding_window is missing (EmbeddingGemma needs it)", c.Arch)
	}
	return meta(f, c)
}

// pattern is llama.cpp's default Gemma 3 sliding-window pattern: of every
// 6 layers the first 5 slide.
const pattern = 6

// meta reads what Gemma 3 adds to the common keys, as llama.cpp's loader
// does: with a sliding window, which layers slide
// (attention.sliding_window_pattern as a per-layer bool array or a period,
// else every layer but each 6th) and the local layers' RoPE base
// (rope.freq_base_swa, default 10000); the optional final soft-cap; and the
// query scale, 1/√(dim/heads) for the 62-layer 27B model (Google's
// query_pre_attn_scalar), 1/√head_dim otherwise.
func meta(f *gguf.File, c *model.Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	if c.SlidingWindow > 0 {
		if err := model.SlidingPattern(f, c, pattern); err != nil {
			return err
		}
		base, err := f.FloatOr(key("rope.freq_base_swa"), 10000)
		if err != nil {
			return err
		}
		c.RopeBaseSWA = float32(base)
	}
	final, err := f.FloatOr(key("final_logit_softcapping"), 0)
	if err != nil {
		return err
	}
	c.FinalSoftcap = float32(final)
	if c.NLayers == 62 && c.NHeads > 0 {
		c.AttnScale = 1 / float32(math.Sqrt(float64(float32(c.Dim/c.NHeads))))
	}
	return nil
}

// New binds the weights of cfg from src: decoder.PostNorm with Q/K norms.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPostNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		l := decoder.GemmaLayer(b, c, p, i)
		l.Attn.BindQKNorm(b, c, p)
		return l
	})
}
