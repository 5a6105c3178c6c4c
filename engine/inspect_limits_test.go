package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestInspectChecksLayers: loom inspect checks block_count against the
// tensors as loading does: a file claiming a billion layers with tensors
// for two is reported with the key at fault, and the first part of a split
// model, whose layers are spread over the parts, against all of them.
func TestInspectChecksLayers(t *testing.T) {
	src := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	f, err := gguf.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	write := func(name string, part, n int, blockCount uint32) string {
		w := gguf.NewWriter()
		if part == 0 {
			for _, kv := range f.KVs {
				if kv.Key == "llama.block_count" {
					w.Set(kv.Key, blockCount)
					continue
				}
				w.Set(kv.Key, kv.Value)
			}
		}
		if n > 1 {
			w.Set("split.no", uint16(part))
			w.Set("split.count", uint16(n))
		}
		for i, ti := range f.Tensors {
			// The split puts each layer whole in one part: blk.0 in the
			// first, blk.1 in the second.
			p := 0
			if strings.HasPrefix(ti.Name, "blk.1.") || (n > 1 && !strings.HasPrefix(ti.Name, "blk.") && i%2 == 1) {
				p = 1
			}
			if n == 1 || p == part {
				if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(&f.Tensors[i])); err != nil {
					t.Fatal(err)
				}
			}
		}
		path := filepath.Join(dir, name)
		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		if _, err := w.WriteTo(out); err != nil {
			t.Fatal(err)
		}
		return path
	}
	evil := write("evil.gguf", 0, 1, 1e9)
	fi, err := engine.Inspect(evil)
	if err != nil {
		t.Fatal(err)
	}
	if fi.ModelErr == nil || !strings.Contains(fi.ModelErr.Error(), "llama.block_count = 1000000000 but the file has tensors for 2 layers (blk.0 … blk.1)") {
		t.Errorf("inspect of a billion layers: %v", fi.ModelErr)
	}
	first := write("tiny-00001-of-00002.gguf", 0, 2, 2)
	write("tiny-00002-of-00002.gguf", 1, 2, 2)
	fi, err = engine.Inspect(first)
	if err != nil {
		t.Fatal(err)
	}
	if fi.ModelErr != nil || fi.Model.NLayers != 2 {
		t.Errorf("inspect of a split model's first part: %+v, %v", fi.Model, fi.ModelErr)
	}
	e, err := engine.Load(first, engine.Options{Threads: 1, CtxLen: 32})
	if err != nil {
		t.Fatalf("loading the split model: %v", err)
	}
	e.Close()
}
