package tokenizer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/tokenizer"
)

// englishMB is 1 MB of English prose (TinyStories text, repeated).
func englishMB(b *testing.B) string {
	src, err := os.ReadFile(filepath.Join(testmodels.Shared(b), "models", "stories260K", "expected_run_c_t0_n200.txt"))
	if err != nil {
		b.Fatal(err)
	}
	s := strings.Repeat(string(src)+"\n", (1<<20)/len(src)+1)
	return s[:1<<20]
}

// BenchmarkEncode1MB reports MB/s per vocabulary family; the bar is
// "1 MB well under a second".
func BenchmarkEncode1MB(b *testing.B) {
	text := englishMB(b)
	dir := filepath.Join(testmodels.Shared(b), "models", "vocab")
	for _, name := range []string{"llama-spm", "gpt-2", "bert-bge", "deepseek-llm"} {
		b.Run(name, func(b *testing.B) {
			f, err := gguf.Open(filepath.Join(dir, "ggml-vocab-"+name+".gguf"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			v, err := tokenizer.FromGGUF(f)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for range b.N {
				v.Encode(text, false, false)
			}
		})
	}
}

// BenchmarkEncode1MB2026: the same text through the gpt-4o, tekken and
// gemma4 test vocabularies (llamacpp2026_test.go).
func BenchmarkEncode1MB2026(b *testing.B) {
	text := englishMB(b)
	for _, tv := range testVocabs[:3] {
		b.Run(tv.name, func(b *testing.B) {
			var buf strings.Builder
			if _, err := tv.build(b).WriteTo(&buf); err != nil {
				b.Fatal(err)
			}
			f, err := gguf.Parse([]byte(buf.String()))
			if err != nil {
				b.Fatal(err)
			}
			v, err := tokenizer.FromGGUF(f)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for range b.N {
				v.Encode(text, false, false)
			}
		})
	}
}
