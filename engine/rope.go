package engine

import "github.com/loom-inference/loom/internal/model"

// RopeOverride replaces the RoPE scaling a model file sets, as llama.cpp's
// flags do; its zero value keeps the file's.
type RopeOverride struct {
	Scaling     string  // --rope-scaling: none, linear or yarn ("": the file's)
	Scale       float64 // --rope-scale: context scaling factor (0: the file's)
	FreqBase    float64 // --rope-freq-base (0: the file's)
	FreqScale   float64 // --rope-freq-scale: 1/--rope-scale (0: the file's)
	YarnOrigCtx int     // --yarn-orig-ctx: YaRN's original context (0: the file's)
}

// change is the config change o asks for (nil: none).
func (o RopeOverride) change() func(*model.Config) error {
	if o == (RopeOverride{}) {
		return nil
	}
	return nil // TODO(issue 32 item 3): apply the overrides
}
