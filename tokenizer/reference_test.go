package tokenizer_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/tokenizer"
)

// TestReferencePrompts: every recorded prompt tokenizes to llama.cpp's ids
// (add_special on, special tokens not parsed). A synthetic model's
// vocabulary is the same in every tensor type, so each preset is read from
// its smallest (Q2_K) file.
func TestReferencePrompts(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range testmodels.References(t) {
		preset := ""
		if r.Synthetic() {
			preset = strings.Fields(r.Model)[0]
		}
		key := r.Model + "\x00" + r.Prompt
		if preset != "" {
			key = preset + "\x00" + r.Prompt
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		t.Run(r.File, func(t *testing.T) {
			var v *tokenizer.Vocab
			if preset != "" {
				v = presetVocab(t, preset)
			} else {
				f, err := gguf.Open(r.ModelPath(t))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if v, err = tokenizer.FromGGUF(f); err != nil {
					t.Fatal(err)
				}
			}
			want := r.Load(t).Prompt.Tokens
			got := v.Encode(r.Prompt, true, false)
			if r.PromptTokens > 0 && len(got) > r.PromptTokens { // a long recording: the text's first tokens
				got = got[:r.PromptTokens]
			}
			if !slices.Equal(got, want) {
				t.Fatalf("prompt %q:\n got %v\nwant %v", r.Prompt, got, want)
			}
		})
	}
}
