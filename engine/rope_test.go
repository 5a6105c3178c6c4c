package engine

import (
	"math"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/model"
)

// TestRopeOverride: llama.cpp's RoPE flags checked with errors naming the
// flag, then applied to a YaRN model's config as llama_context applies
// its parameters: --rope-scale N is a frequency scale of 1/N in float32,
// --rope-freq-scale is kept as given, both must agree, none turns the
// scaling off, --yarn-orig-ctx changes YaRN's original context, and the
// engine's context reaches the config for LongRoPE.
func TestRopeOverride(t *testing.T) {
	base := func() *model.Config {
		c := &model.Config{Arch: "llama", RopeBase: 10000, RopeScale: 4, CtxLen: 64,
			Yarn: model.YaRN{ExtFactor: 1, BetaFast: 32, BetaSlow: 1, OrigCtx: 16, RopeAttnFactor: 1}}
		return c
	}
	cases := []struct {
		name      string
		o         Options
		scaling   string
		base, fs  float32
		ext       float32
		yarnOrig  int
		ropeCtx   int
		err       string
		unchanged bool
	}{
		{"nothing", Options{}, "", 10000, 0.25, 1, 16, 0, "", true},
		{"the context alone", Options{CtxLen: 512}, "", 10000, 0.25, 1, 16, 512, "", false},
		{"--rope-scale", Options{Rope: RopeOverride{Scale: 3}}, "yarn", 10000, 1 / float32(3), 1, 16, 0, "", false},
		{"--rope-freq-scale", Options{Rope: RopeOverride{FreqScale: 0.3}}, "yarn", 10000, 0.3, 1, 16, 0, "", false},
		{"both, agreeing", Options{Rope: RopeOverride{Scale: 8, FreqScale: 0.125}}, "yarn", 10000, 0.125, 1, 16, 0, "", false},
		{"--rope-scaling none", Options{Rope: RopeOverride{Scaling: "none"}, CtxLen: 100}, "none", 10000, 1, 0, 16, 100, "", false},
		{"--rope-scaling linear", Options{Rope: RopeOverride{Scaling: "linear"}}, "linear", 10000, 0.25, 0, 16, 0, "", false},
		{"--rope-freq-base and --yarn-orig-ctx", Options{Rope: RopeOverride{FreqBase: 1e6, YarnOrigCtx: 32}}, "yarn", 1e6, 0.25, 1, 32, 0, "", false},
		{"both, disagreeing", Options{Rope: RopeOverride{Scale: 8, FreqScale: 0.5}}, "", 0, 0, 0, 0, 0, "--rope-scale 8 and --rope-freq-scale 0.5 disagree", false},
		{"bad scaling", Options{Rope: RopeOverride{Scaling: "longrope"}}, "", 0, 0, 0, 0, 0, `--rope-scaling "longrope" (want none, linear or yarn)`, false},
		{"negative scale", Options{Rope: RopeOverride{Scale: -2}}, "", 0, 0, 0, 0, 0, "--rope-scale -2", false},
		{"NaN base", Options{Rope: RopeOverride{FreqBase: math.NaN()}}, "", 0, 0, 0, 0, 0, "--rope-freq-base NaN", false},
		{"huge freq scale", Options{Rope: RopeOverride{FreqScale: 1e300}}, "", 0, 0, 0, 0, 0, "--rope-freq-scale 1e+300", false},
		{"tiny scale", Options{Rope: RopeOverride{Scale: 1e-300}}, "", 0, 0, 0, 0, 0, "--rope-scale 1e-300", false},
		{"negative original context", Options{Rope: RopeOverride{YarnOrigCtx: -1}}, "", 0, 0, 0, 0, 0, "--yarn-orig-ctx -1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			change := c.o.ropeChange()
			if c.unchanged {
				if change != nil {
					t.Fatal("a change for no override")
				}
				return
			}
			cfg := base()
			err := change(cfg)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []any{cfg.RopeScaling, cfg.RopeBase, cfg.FreqScale(), cfg.Yarn.ExtFactor, cfg.Yarn.OrigCtx, cfg.RopeCtx}
			want := []any{c.scaling, c.base, c.fs, c.ext, c.yarnOrig, c.ropeCtx}
			if c.scaling == "" { // the context alone: the file's RoPE untouched
				want[0] = ""
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("scaling, base, freq scale, ext, YaRN context, context = %v, want %v", got, want)
				}
			}
		})
	}
}
