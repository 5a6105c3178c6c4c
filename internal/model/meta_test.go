package model_test

import (
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
)

// TestFamilyMeta: a family's own metadata is read by its Arch.Meta hook
// only: Gemma 2's soft-caps take llama.cpp's defaults (50, 30) when absent
// and the file's values when present, a malformed one is refused with the
// file and key named, and other families ignore the keys.
func TestFamilyMeta(t *testing.T) {
	cases := []struct {
		name        string
		file        tiny
		attn, final float32
		err         string
	}{
		{"gemma2 defaults", tiny{arch: "gemma2"}, 50, 30, ""},
		{"gemma2 from the file", tiny{arch: "gemma2", meta: map[string]any{
			"gemma2.attn_logit_softcapping": float32(20), "gemma2.final_logit_softcapping": float64(15)}}, 20, 15, ""},
		{"gemma2 malformed", tiny{arch: "gemma2", meta: map[string]any{"gemma2.final_logit_softcapping": "30"}},
			0, 0, `evil.gguf: gguf: metadata "gemma2.final_logit_softcapping" has type string`},
		{"gemma2 negative", tiny{arch: "gemma2", meta: map[string]any{"gemma2.attn_logit_softcapping": float32(-1)}},
			0, 0, "soft-caps -1 and 30"},
		{"llama ignores them", tiny{meta: map[string]any{
			"llama.attn_logit_softcapping": float32(20), "llama.final_logit_softcapping": float32(15)}}, 0, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := gguf.Parse(c.file.build(t))
			if err != nil {
				t.Fatal(err)
			}
			f.Path = "evil.gguf"
			cfg, err := model.ConfigFromGGUF(f)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.AttnSoftcap != c.attn || cfg.FinalSoftcap != c.final {
				t.Errorf("soft-caps %v, %v; want %v, %v", cfg.AttnSoftcap, cfg.FinalSoftcap, c.attn, c.final)
			}
		})
	}
}
