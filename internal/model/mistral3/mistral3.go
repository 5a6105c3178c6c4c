// Package mistral3 is llama.cpp's llama_model_mistral3 (Ministral 3 and
// Mistral 3 text models): the Llama block (decoder.PreNorm; a mixture of
// experts where the file has them) with YaRN RoPE scaling whose betas and
// log multiplier the file sets, and optional Llama 4-style attention
// temperature tuning: queries after RoPE scaled by
// 1 + temperature_scale·ln(⌊pos/original_context⌋ + 1).
package mistral3

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "mistral3", Meta: meta, Tweak: func(*model.Config) {}, Build: New, Experts: true})
}

// meta reads what llama.cpp's mistral3 loader adds: attention.
// temperature_scale (its floor is the original YaRN context), and the YaRN
// betas and log multiplier.
func meta(f *gguf.File, c *model.Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	for _, o := range []struct {
		k string
		v *float32
	}{{"attention.temperature_scale", &c.AttnTempScale}, {"rope.scaling.yarn_beta_fast", &c.Yarn.BetaFast},
		{"rope.scaling.yarn_beta_slow", &c.Yarn.BetaSlow}, {"rope.scaling.yarn_log_multiplier", &c.Yarn.LogMul}} {
		x, err := f.FloatOr(key(o.k), float64(*o.v))
		if err != nil {
			return err
		}
		*o.v = float32(x)
	}
	if c.AttnTempScale != 0 {
		c.AttnTempFloor = c.Yarn.OrigCtx
	}
	return nil
}

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	return decoder.NewPreNorm(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		for _, n := range []string{"ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"} {
			if b.Has(p + n) {
				if b.Err == nil {
					b.Err = fmt.Errorf("model: tensor %q: FFN biases are not supported", p+n)
				}
			}
		}
		return decoder.LlamaLayer(b, c, p, i)
	})
}
