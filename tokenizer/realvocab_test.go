package tokenizer

import (
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
)

func realVocabs(tb testing.TB) []*Vocab {
	dir := filepath.Join(testmodels.Shared(tb), "models", "vocab")
	var out []*Vocab
	for _, name := range []string{"llama-spm", "gpt-2"} {
		f, err := gguf.Open(filepath.Join(dir, "ggml-vocab-"+name+".gguf"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { f.Close() })
		v, err := FromGGUF(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}
