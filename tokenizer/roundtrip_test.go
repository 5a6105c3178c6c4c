package tokenizer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/tokenizer"
)

// TestRoundTrip: decode(encode(s)) == s on every vocabulary whose family
// guarantees it: byte-level BPE (every byte has a token) and SPM with byte
// fallback (the space prefix SPM adds is dropped after BOS, as llama.cpp
// does). WordPiece (bert) does not: it lower-cases, strips accents and
// folds whitespace, so it is excluded.
func TestRoundTrip(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "vocab")
	files, _ := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf"))
	inputs := allInputs(t)
	for _, path := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "ggml-vocab-"), ".gguf")
		if name == "bert-bge" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			v, err := tokenizer.FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range inputs {
				ids := v.Encode(s, false, false)
				st := v.NewStream(true)
				var sb strings.Builder
				for _, id := range ids {
					sb.WriteString(st.Add(id))
				}
				sb.WriteString(st.Flush())
				if sb.String() != s {
					t.Errorf("%q -> %q", s, sb.String())
				}
			}
		})
	}
}
