package engine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestSplitGGUF: a model split into parts as llama.cpp's gguf-split writes
// them (metadata in the first, split.no/split.count in each, tensors
// spread over the parts) loads as one model, from any part's name, with
// the same logits as the whole file.
func TestSplitGGUF(t *testing.T) {
	src := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	const n = 3
	for part := range n {
		w := gguf.NewWriter()
		if part == 0 {
			for _, kv := range f.KVs {
				w.Set(kv.Key, kv.Value)
			}
		}
		w.Set("split.no", uint16(part))
		w.Set("split.count", uint16(n))
		w.Set("split.tensors.count", int32(len(f.Tensors)))
		for i, ti := range f.Tensors {
			if i%n == part {
				if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(&f.Tensors[i])); err != nil {
					t.Fatal(err)
				}
			}
		}
		out, err := os.Create(filepath.Join(dir, fmt.Sprintf("tiny-%05d-of-%05d.gguf", part+1, n)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.WriteTo(out); err != nil {
			t.Fatal(err)
		}
		out.Close()
	}
	whole, err := engine.Load(src, engine.Options{Threads: 1, CtxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	ids := whole.Tokenize("Once upon a time", true, false)
	want, _ := whole.NextLogits(t.Context(), ids)
	for _, name := range []string{"tiny-00001-of-00003.gguf", "tiny-00002-of-00003.gguf"} {
		split, err := engine.Load(filepath.Join(dir, name), engine.Options{Threads: 1, CtxLen: 64})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := split.NextLogits(t.Context(), ids)
		if !slices.Equal(got, want) || len(split.Tensors()) != len(f.Tensors) {
			t.Errorf("%s: logits or tensors differ from the whole file", name)
		}
		split.Close()
	}
	os.Remove(filepath.Join(dir, "tiny-00003-of-00003.gguf"))
	if _, err := engine.Load(filepath.Join(dir, "tiny-00001-of-00003.gguf"), engine.Options{Threads: 1}); err == nil {
		t.Error("a split model with a missing part loaded")
	}
}
