package model_test

import (
	"math"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
)

// ropeConfig reads the config of a tiny llama (context 64) with meta's
// RoPE keys.
func ropeConfig(t *testing.T, arch string, meta map[string]any) (*model.Config, error) {
	t.Helper()
	f, err := gguf.Parse(tiny{arch: arch, meta: meta}.build(t))
	if err != nil {
		t.Fatal(err)
	}
	f.Path = "rope.gguf"
	return model.ConfigFromGGUF(f)
}

// llamaYarnAttn is llama_context's yarn_attn_factor for YaRN with factor
// 1/freqScale and no log multiplier, in float32 as llama.cpp computes it:
// get_mscale(factor, 1) · 1/(1 + 0.1·logf(factor)), then × attn_factor.
func llamaYarnAttn(freqScale, attn float32) float32 {
	factor := 1 / freqScale
	logf := func(x float32) float32 { return float32(math.Log(float64(x))) }
	m := float32(1)
	if factor > 1 {
		m = float32(float32(0.1)*logf(factor)) + 1
	}
	return m * (1 / float32(1+float32(float32(0.1)*logf(factor)))) * attn
}

// TestRopeScalingFromGGUF: the RoPE scaling keys as llama.cpp's
// load_hparams and llama_context resolve them: the type defaults to
// linear, so a factor without a type scales; none ignores the factor;
// rope.scale_linear is the factor's old name; yarn turns the
// extrapolation mix on and derives the magnitude; longrope scales as
// linear (its factors are tensors); rope.scaling.attn_factor scales cos
// and sin with or without YaRN; the original context defaults to the
// training one.
func TestRopeScalingFromGGUF(t *testing.T) {
	cases := []struct {
		name       string
		meta       map[string]any
		scaling    string
		scale, fs  float32
		ext, attn  float32
		orig, yorg int
		err        string
	}{
		{"unscaled", nil, "linear", 1, 1, 0, 1, 64, 64, ""},
		{"linear", map[string]any{"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": float32(4)}, "linear", 4, 0.25, 0, 1, 64, 64, ""},
		{"factor without a type", map[string]any{"llama.rope.scaling.factor": float32(4)}, "linear", 4, 0.25, 0, 1, 64, 64, ""},
		{"old key", map[string]any{"llama.rope.scale_linear": float32(2)}, "linear", 2, 0.5, 0, 1, 64, 64, ""},
		{"none ignores the factor", map[string]any{"llama.rope.scaling.type": "none", "llama.rope.scaling.factor": float32(4)}, "none", 1, 1, 0, 1, 64, 64, ""},
		{"yarn", map[string]any{"llama.rope.scaling.type": "yarn", "llama.rope.scaling.factor": float32(4), "llama.rope.scaling.original_context_length": uint32(16)},
			"yarn", 4, 0.25, 1, llamaYarnAttn(0.25, 1), 16, 16, ""},
		{"yarn with attn_factor", map[string]any{"llama.rope.scaling.type": "yarn", "llama.rope.scaling.factor": float32(3), "llama.rope.scaling.attn_factor": float32(0.5)},
			"yarn", 3, 1 / float32(3), 1, llamaYarnAttn(1/float32(3), 0.5), 64, 64, ""},
		{"longrope", map[string]any{"llama.rope.scaling.type": "longrope", "llama.rope.scaling.original_context_length": uint32(16), "llama.rope.scaling.attn_factor": float32(1.25)},
			"longrope", 1, 1, 0, 1.25, 16, 16, ""},
		{"zero original context", map[string]any{"llama.rope.scaling.original_context_length": uint32(0)}, "linear", 1, 1, 0, 1, 0, 64, ""},
		{"unknown type", map[string]any{"llama.rope.scaling.type": "dynamic"}, "", 0, 0, 0, 0, 0, 0, `rope scaling type "dynamic" is not supported`},
		{"negative factor", map[string]any{"llama.rope.scaling.factor": float32(-2)}, "", 0, 0, 0, 0, 0, 0, "rope.scaling.factor = -2 (must be positive)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ropeConfig(t, "", c.meta)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []any{cfg.RopeScaling, cfg.RopeScale, cfg.FreqScale(), cfg.Yarn.ExtFactor, cfg.Yarn.AttnFactor, cfg.RopeOrigCtx, cfg.Yarn.OrigCtx}
			want := []any{c.scaling, c.scale, c.fs, c.ext, c.attn, c.orig, c.yorg}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("scaling, scale, freq scale, ext, attn, orig ctx, YaRN orig ctx = %v, want %v", got, want)
					break
				}
			}
		})
	}
}

// TestSetRope: llama.cpp's context overrides (--rope-scaling,
// --rope-freq-base, --rope-freq-scale, --yarn-orig-ctx) as llama_context
// applies them over the file's values, and their validation.
func TestSetRope(t *testing.T) {
	yarnFile := map[string]any{"llama.rope.scaling.type": "yarn", "llama.rope.scaling.factor": float32(4),
		"llama.rope.scaling.original_context_length": uint32(16), "llama.rope.scaling.attn_factor": float32(0.75)}
	noneFile := map[string]any{"llama.rope.scaling.type": "none", "llama.rope.scaling.factor": float32(8)}
	cases := []struct {
		name            string
		file            map[string]any
		p               model.RopeParams
		scaling         string
		base, fs        float32
		ext, attn       float32
		yarnOrig, lrOrg int
		err             string
	}{
		{"nothing", yarnFile, model.RopeParams{}, "yarn", 10000, 0.25, 1, llamaYarnAttn(0.25, 0.75), 16, 16, ""},
		{"none turns YaRN off", yarnFile, model.RopeParams{Scaling: "none"}, "none", 10000, 1, 0, 0.75, 16, 16, ""},
		{"linear keeps the factor, no mix", yarnFile, model.RopeParams{Scaling: "linear"}, "linear", 10000, 0.25, 0, 0.75, 16, 16, ""},
		{"yarn on an unscaled file", nil, model.RopeParams{Scaling: "yarn", FreqScale: 0.125}, "yarn", 10000, 0.125, 1, llamaYarnAttn(0.125, 1), 64, 64, ""},
		{"the factor a none file ignores", noneFile, model.RopeParams{Scaling: "linear"}, "linear", 10000, 0.125, 0, 1, 64, 64, ""},
		{"frequency scale kept as given", yarnFile, model.RopeParams{FreqScale: 0.3}, "yarn", 10000, 0.3, 1, llamaYarnAttn(0.3, 0.75), 16, 16, ""},
		{"frequency base", nil, model.RopeParams{FreqBase: 500000}, "linear", 500000, 1, 0, 1, 64, 64, ""},
		{"YaRN's original context, not LongRoPE's", yarnFile, model.RopeParams{YarnOrigCtx: 32}, "yarn", 10000, 0.25, 1, llamaYarnAttn(0.25, 0.75), 32, 16, ""},
		{"unknown scaling", nil, model.RopeParams{Scaling: "longrope"}, "", 0, 0, 0, 0, 0, 0, `RoPE scaling "longrope" (want none, linear or yarn)`},
		{"negative base", nil, model.RopeParams{FreqBase: -1}, "", 0, 0, 0, 0, 0, 0, "RoPE frequency base -1"},
		{"NaN scale", nil, model.RopeParams{FreqScale: float32(math.NaN())}, "", 0, 0, 0, 0, 0, 0, "RoPE frequency scale NaN"},
		{"negative original context", nil, model.RopeParams{YarnOrigCtx: -5}, "", 0, 0, 0, 0, 0, 0, "YaRN original context -5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ropeConfig(t, "", c.file)
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.SetRope(c.p)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []any{cfg.RopeScaling, cfg.RopeBase, cfg.FreqScale(), cfg.Yarn.ExtFactor, cfg.Yarn.AttnFactor, cfg.Yarn.OrigCtx, cfg.RopeOrigCtx}
			want := []any{c.scaling, c.base, c.fs, c.ext, c.attn, c.yarnOrig, c.lrOrg}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("scaling, base, freq scale, ext, attn, YaRN orig, LongRoPE orig = %v, want %v", got, want)
					break
				}
			}
			if cfg.RopeScale != 1/cfg.FreqScale() {
				t.Errorf("RopeScale %v, want 1/%v", cfg.RopeScale, cfg.FreqScale())
			}
			if err := cfg.Validate(); err != nil {
				t.Errorf("the changed config is invalid: %v", err)
			}
		})
	}
}

// TestLongRopeCtx: LongRoPE's long factors apply when the per-sequence
// context, rounded up to 256 as llama.cpp pads n_ctx, exceeds the
// original context; with no context given, the engine's default one.
func TestLongRopeCtx(t *testing.T) {
	cases := []struct {
		orig, ctx, train int
		long             bool
	}{
		{4096, 4096, 131072, false}, {4096, 4097, 131072, true}, {4096, 4000, 131072, false},
		{4000, 3900, 131072, true}, {4000, 3840, 131072, false}, {4096, 0, 131072, false},
		{64, 0, 131072, true}, {4096, 131072, 131072, true},
	}
	for _, c := range cases {
		cfg := model.Config{RopeOrigCtx: c.orig, RopeCtx: c.ctx, CtxLen: c.train}
		if got := cfg.LongRopeCtx(); got != c.long {
			t.Errorf("original %d, context %d: long %v, want %v", c.orig, c.ctx, got, c.long)
		}
	}
}
