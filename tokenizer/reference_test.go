package tokenizer_test

import (
	"slices"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/tokenizer"
)

// TestReferencePrompts: every recorded prompt tokenizes to llama.cpp's ids
// (add_special on, special tokens not parsed).
func TestReferencePrompts(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range testmodels.References(t) {
		key := r.Model + "\x00" + r.Prompt
		if seen[key] || (r.Synthetic() && !slices.Contains([]string{"smollm2-135m Q8_0", "qwen2.5-0.5b Q8_0", "llama-3.2-1b Q8_0", "qwen3-0.6b Q8_0", "tiny-test F32", "tinyllama-1.1b F16"}, r.Model)) {
			continue
		}
		seen[key] = true
		t.Run(r.File, func(t *testing.T) {
			f, err := gguf.Open(r.ModelPath(t))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			v, err := tokenizer.FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			want := r.Load(t).Prompt.Tokens
			got := v.Encode(r.Prompt, true, false)
			if !slices.Equal(got, want) {
				t.Fatalf("prompt %q:\n got %v\nwant %v", r.Prompt, got, want)
			}
		})
	}
}
