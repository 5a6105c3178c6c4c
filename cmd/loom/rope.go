package main

import (
	"flag"
	"fmt"

	"github.com/loom-inference/loom/engine"
)

// ropeFlags are llama.cpp's RoPE flags: --rope-scaling, --rope-scale,
// --rope-freq-base, --rope-freq-scale and --yarn-orig-ctx. Unset, each
// keeps what the model's file says.
type ropeFlags struct {
	scaling                    string
	scale, freqBase, freqScale float64
	yarnOrigCtx                int
}

func addRopeFlags(fs *flag.FlagSet) *ropeFlags {
	r := &ropeFlags{}
	fs.Func("rope-scaling", "RoPE scaling `{none,linear,yarn}` instead of the model's (llama.cpp's --rope-scaling; none turns the model's scaling off)", func(v string) error {
		switch v {
		case "none", "linear", "yarn":
			r.scaling = v
			return nil
		}
		return fmt.Errorf("%q: want none, linear or yarn", v)
	})
	fs.Float64Var(&r.scale, "rope-scale", 0, "RoPE context scaling factor: positions are divided by `N`, stretching the context N times (the same as --rope-freq-scale 1/N; default: the model's)")
	fs.Float64Var(&r.freqBase, "rope-freq-base", 0, "RoPE base frequency `N`, as NTK-aware scaling raises it (default: the model's)")
	fs.Float64Var(&r.freqScale, "rope-freq-scale", 0, "RoPE frequency scale `N`: angles are multiplied by N, stretching the context 1/N times (default: the model's)")
	fs.IntVar(&r.yarnOrigCtx, "yarn-orig-ctx", 0, "YaRN: the model's original context `N` (default: the model's, else its training context)")
	return r
}

// override is the engine's Options.Rope.
func (r *ropeFlags) override() engine.RopeOverride {
	return engine.RopeOverride{Scaling: r.scaling, Scale: r.scale, FreqBase: r.freqBase, FreqScale: r.freqScale, YarnOrigCtx: r.yarnOrigCtx}
}
