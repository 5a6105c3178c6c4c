package families_test

import (
	"slices"
	"testing"

	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
)

// TestRegistered: importing families makes every architecture Loom runs
// known, each with a builder.
func TestRegistered(t *testing.T) {
	want := []string{"bert", "gemma-embedding", "gemma2", "gemma3", "gemma4", "gpt-oss", "gpt2", "granite", "granitehybrid", "lfm2", "llama", "mistral3", "nomic-bert", "phi3", "qwen2", "qwen3", "qwen35", "qwen35moe", "qwen3moe", "qwen3next", "smollm3"}
	if got := model.Names(); !slices.Equal(got, want) {
		t.Fatalf("registered %v, want %v", got, want)
	}
	for _, n := range want {
		a, err := model.Lookup(n)
		if err != nil || a.Build == nil || a.Tweak == nil {
			t.Errorf("%s: %+v, %v", n, a, err)
		}
	}
}
