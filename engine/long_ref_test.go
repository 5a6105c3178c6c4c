package engine_test

import (
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestLongReferences: llama.cpp's recordings at long context
// (testdata/reference-long: prompts of 500 to 4,985 tokens) match by the
// reference rules — the F16 cache on the exact path, the kvq8-/kvq4-
// files with K and V in q8_0 or q4_0 on the tiled path (llama.cpp's -fa),
// YaRN past the original context, LongRoPE's long and short factors.
func TestLongReferences(t *testing.T) {
	if testing.Short() {
		t.Skip("long prompts: run without -short")
	}
	for _, r := range testmodels.LongReferences(t) {
		t.Run(strings.TrimSuffix(r.File, ".jsonl"), func(t *testing.T) {
			var o engine.Options
			switch {
			case strings.HasPrefix(r.File, "kvq8-"):
				o.CacheTypeK, o.CacheTypeV = "q8_0", "q8_0"
			case strings.HasPrefix(r.File, "kvq4-"):
				o.CacheTypeK, o.CacheTypeV = "q4_0", "q4_0"
			}
			checkModelWith(t, r, r.ModelPath(t), true, o)
		})
	}
}
