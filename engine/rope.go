package engine

import (
	"fmt"
	"math"

	"github.com/loom-inference/loom/internal/model"
)

// RopeOverride replaces the RoPE scaling a model file sets, as llama.cpp's
// flags do; its zero value keeps the file's.
type RopeOverride struct {
	Scaling     string  // --rope-scaling: none, linear or yarn ("": the file's)
	Scale       float64 // --rope-scale: context scaling factor (0: the file's)
	FreqBase    float64 // --rope-freq-base (0: the file's)
	FreqScale   float64 // --rope-freq-scale: 1/--rope-scale (0: the file's)
	YarnOrigCtx int     // --yarn-orig-ctx: YaRN's original context (0: the file's)
}

// params checks o and turns it into llama_context's parameters:
// --rope-scale N is rope_freq_scale = 1/N (in float32, as llama.cpp's
// argument parser divides), --rope-freq-scale is rope_freq_scale itself;
// given both, they must agree.
func (o RopeOverride) params() (model.RopeParams, error) {
	p := model.RopeParams{Scaling: o.Scaling, YarnOrigCtx: o.YarnOrigCtx}
	f32 := func(flag string, v float64) (float32, error) {
		if math.IsNaN(v) || v < 0 || float32(v) > math.MaxFloat32 || v > 0 && float32(v) == 0 {
			return 0, fmt.Errorf("engine: %s %v (want a positive number; 0 keeps the model's)", flag, v)
		}
		return float32(v), nil
	}
	var err error
	switch o.Scaling {
	case "", "none", "linear", "yarn":
	default:
		return p, fmt.Errorf("engine: --rope-scaling %q (want none, linear or yarn)", o.Scaling)
	}
	if p.FreqBase, err = f32("--rope-freq-base", o.FreqBase); err != nil {
		return p, err
	}
	if p.FreqScale, err = f32("--rope-freq-scale", o.FreqScale); err != nil {
		return p, err
	}
	scale, err := f32("--rope-scale", o.Scale)
	if err != nil {
		return p, err
	}
	if scale != 0 {
		fs := 1 / scale // std::stof, then 1.0f / value
		if fs == 0 || math.IsInf(float64(fs), 0) {
			return p, fmt.Errorf("engine: --rope-scale %v is out of range", o.Scale)
		}
		if p.FreqScale != 0 && p.FreqScale != fs {
			return p, fmt.Errorf("engine: --rope-scale %v and --rope-freq-scale %v disagree (--rope-freq-scale is 1/--rope-scale: give one)", o.Scale, o.FreqScale)
		}
		p.FreqScale = fs
	}
	if o.YarnOrigCtx < 0 || o.YarnOrigCtx > model.MaxCtx {
		return p, fmt.Errorf("engine: --yarn-orig-ctx %d (want 1 to %d; 0 keeps the model's)", o.YarnOrigCtx, model.MaxCtx)
	}
	return p, nil
}

// change is the config change o asks for (nil: none): o's parameters
// applied as llama_context applies its cparams (model.Config.SetRope).
// An invalid override is an error of the change, reported with the file.
func (o RopeOverride) change() func(*model.Config) error {
	if o == (RopeOverride{}) {
		return nil
	}
	return func(c *model.Config) error {
		p, err := o.params()
		if err != nil {
			return err
		}
		return c.SetRope(p)
	}
}

// ropeChange is Rope's change, then ropeCtx's (nil: neither):
// configChanges' RoPE part.
func (o Options) ropeChange() func(*model.Config) error {
	rope, ctx := o.Rope.change(), o.ropeCtx()
	switch {
	case rope == nil:
		return ctx
	case ctx == nil:
		return rope
	}
	return func(c *model.Config) error {
		if err := rope(c); err != nil {
			return err
		}
		return ctx(c)
	}
}

// ropeCtx is the config change that tells the model the per-sequence
// context the engine will run with (llama.cpp's n_ctx_seq), which picks
// LongRoPE's long or short factors; nil when CtxLen is 0 (the model's
// default context, which the config assumes).
func (o Options) ropeCtx() func(*model.Config) error {
	if o.CtxLen <= 0 {
		return nil
	}
	return func(c *model.Config) error {
		c.RopeCtx = o.CtxLen
		return nil
	}
}
