package tokenizer_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/tokenizer"
)

// TestLlamaCppReviewVectors: strings beyond llama.cpp's own test vectors
// (numbers with spaces, contractions, code, HTML, JSON, SQL, currency and
// math symbols, Korean, Hindi, zero-width and format characters,
// whitespace runs), tokenized by llama.cpp b4748's llama-tokenize (--ids
// --no-bos) on every vocabulary in shared/models/vocab and four synthgguf
// presets, recorded in testdata/llamacpp_b4748_review.jsonl. Among them:
// a GPT-NeoX file without tokenizer.ggml.pre (llama.cpp's "default"
// pre-tokenizer) and BERT's WordPiece on Hangul, Devanagari and zero-width
// characters.
func TestLlamaCppReviewVectors(t *testing.T) {
	shared := testmodels.Shared(t)
	f, err := os.Open(filepath.Join("testdata", "llamacpp_b4748_review.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vocabs := map[string]*tokenizer.Vocab{}
	load := func(name string) *tokenizer.Vocab {
		if v, ok := vocabs[name]; ok {
			return v
		}
		var path string
		if rest, ok := strings.CutPrefix(name, "synth:"); ok {
			if testing.Short() {
				vocabs[name] = nil
				return nil
			}
			p := strings.Split(rest, ":")
			path = testmodels.Synth(t, "-model", p[0], "-type", p[1], "-seed", "1")
		} else {
			path = filepath.Join(shared, "models", name)
		}
		g, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		v, err := tokenizer.FromGGUF(g)
		if err != nil {
			t.Fatal(err)
		}
		vocabs[name] = v
		return v
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	n, skipped := 0, 0
	for sc.Scan() {
		var c struct {
			Vocab, Text string
			IDs         []int32
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		v := load(c.Vocab)
		if v == nil {
			skipped++
			continue
		}
		n++
		if got := v.Encode(c.Text, false, true); !slices.Equal(got, c.IDs) {
			t.Errorf("%s %q:\n got %v\nwant %v (llama.cpp b4748)", c.Vocab, c.Text, got, c.IDs)
		}
	}
	t.Logf("%d strings agree with llama.cpp (%d synthgguf cases skipped under -short)", n, skipped)
	if v := vocabs["vocab/ggml-vocab-gpt-neox.gguf"]; v != nil && len(v.Warnings) == 0 {
		t.Error("a file without tokenizer.ggml.pre loads without the warning llama.cpp prints")
	}
}
