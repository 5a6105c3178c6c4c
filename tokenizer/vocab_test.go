package tokenizer_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/tokenizer"
)

// vectors reads llama.cpp's .inp/.out test vectors for a vocabulary.
func vectors(t *testing.T, base string) ([]string, [][]int32) {
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	// Every input is followed by the separator line; outputs are one line each.
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(string(out), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var ids [][]int32
	for _, line := range lines {
		var row []int32
		for _, f := range strings.Fields(line) {
			v, _ := strconv.Atoi(f)
			row = append(row, int32(v))
		}
		ids = append(ids, row)
	}
	if len(texts) != len(ids) {
		t.Fatalf("%s: %d inputs, %d outputs", base, len(texts), len(ids))
	}
	return texts, ids
}

// TestVocabVectors: llama.cpp's tokenizer test vectors, exact.
func TestVocabVectors(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "vocab")
	files, _ := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf"))
	for _, path := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "ggml-vocab-"), ".gguf")
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(path + ".inp"); err != nil {
				t.Skip("no test vectors")
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			v, err := tokenizer.FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			texts, want := vectors(t, path)
			bad := 0
			for i, text := range texts {
				got := v.Encode(text, false, false)
				if !equal(got, want[i]) {
					bad++
					if bad <= 3 {
						t.Errorf("%q:\n got %v\nwant %v", text, got, want[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d strings differ", bad, len(texts))
			}
		})
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
