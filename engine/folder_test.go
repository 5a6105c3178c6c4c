package engine_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestFolderReferences: the TinyStories-656K Hugging Face folder (F32
// safetensors) loaded directly agrees with llama.cpp's recordings of the
// F16 GGUF converted from it, by the recordings' own rules. "Once upon a
// time" tokenizes the same with tokenizer.json as with the GGUF's
// vocabulary; the second prompt does not (llama.cpp's converter stores
// this BPE tokenizer as a SentencePiece vocabulary with every score
// -1000, dropping its merges), so its recorded ids are evaluated as given.
func TestFolderReferences(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	n := 0
	for _, r := range testmodels.References(t) {
		if !strings.HasPrefix(r.File, "real-TinyStories-656K.f16-") {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(r.File, ".jsonl"), func(t *testing.T) {
			checkModel(t, r, dir, r.Prompt == "Once upon a time")
		})
	}
	if n != 2 {
		t.Fatalf("%d TinyStories-656K F16 recordings, want 2", n)
	}
}

// TestFolderTokenizer: a folder tokenizes with its tokenizer.json (BPE
// merges by rank, as transformers does), not as the converted GGUF's
// equal-score vocabulary would; BOS and EOS per tokenizer_config.json.
func TestFolderTokenizer(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	e, err := engine.Load(dir, engine.Options{Threads: 1, CtxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The GGUF's vocabulary gives 1 80 147 201 282 215 286 158 420 177 1168
	// 1662 887 610 57 4 here: "little" is 158 420 177 there, 598 by rank.
	got := e.Tokenize("Once upon a time, there was a little girl named Lily. She loved to play outside!", true, false)
	want := []int32{1, 80, 147, 201, 282, 215, 286, 598, 1662, 887, 610, 57, 4}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if e.Vocab.EOS != 2 || e.Vocab.BOS != 1 || !e.Vocab.AddBOS {
		t.Fatalf("BOS %d EOS %d add_bos %v", e.Vocab.BOS, e.Vocab.EOS, e.Vocab.AddBOS)
	}
}
