package qwen35_test

import (
	"slices"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestRopeSections: Qwen3.5's interleaved multi-section RoPE, as ggml's
// IMROPE assigns a pair's position component for text: [11, 11, 10, 0]
// over 32 pairs rotates all of them; [2, 2, 2, 2] (a section sum of 8)
// leaves pairs 6 and 7 of every 8 still (their component is the fourth,
// 0 for text); a sum of 0 or past the rotated dimensions is refused.
func TestRopeSections(t *testing.T) {
	still := func(t *testing.T, set string) ([]bool, error) {
		src := "modelgen -model qwen35moe-mini -type Q8_0 -seed 1"
		if set != "" {
			src += " -set qwen35moe.rope.dimension_sections=" + set
		}
		f, err := gguf.Open(testmodels.Modern(t, src))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := model.LoadGGUF(f)
		if err != nil {
			return nil, err
		}
		return m.Config().RopeStill, nil
	}
	if s, err := still(t, ""); err != nil || s != nil {
		t.Errorf("[11 11 10 0]: still pairs %v (%v), want none", s, err)
	}
	s, err := still(t, "2,2,2,2")
	if err != nil {
		t.Fatal(err)
	}
	var want []bool
	for j := range 32 {
		want = append(want, j%8 >= 6)
	}
	if !slices.Equal(s, want) {
		t.Errorf("[2 2 2 2]: still %v, want %v", s, want)
	}
	for _, bad := range []string{"0,0,0,0", "40,40,0,0"} {
		if _, err := still(t, bad); err == nil {
			t.Errorf("sections %s accepted", bad)
		}
	}
}
