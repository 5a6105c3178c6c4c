package engine

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestHugePageWeights: by default the matrices not repacked at load whose
// bytes lie in a file mapping are copied into one region of huge-page
// memory (where the kernel has THP), byte for byte, and the others (a
// folder's tensors converted onto the heap) stay where they are; the
// logits are the same bits as with every weight read in place
// (WeightsInPlace, --mmap), which copies nothing; Close frees the region.
// A GGUF file and a Hugging Face folder.
func TestHugePageWeights(t *testing.T) {
	models := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k")
	for _, c := range []struct {
		name, path string
		holds      func(e *Engine) func([]byte) bool
	}{
		{"gguf-f16", filepath.Join(models, "gguf", "TinyStories-656K.f16.gguf"), func(e *Engine) func([]byte) bool {
			parts := append([]*gguf.File{e.file}, e.parts...)
			return func(b []byte) bool {
				return slices.ContainsFunc(parts, func(p *gguf.File) bool { return p.Holds(b) })
			}
		}},
		{"hf-folder", filepath.Join(models, "hf"), func(e *Engine) func([]byte) bool { return e.folder.Holds }},
	} {
		t.Run(c.name, func(t *testing.T) {
			inPlace, err := Load(c.path, Options{Threads: 2, WeightsInPlace: true})
			if err != nil {
				t.Fatal(err)
			}
			defer inPlace.Close()
			if inPlace.HugePageWeights() != 0 || inPlace.weights != nil {
				t.Fatalf("WeightsInPlace copied %d bytes", inPlace.HugePageWeights())
			}
			moved, err := Load(c.path, Options{Threads: 2})
			if err != nil {
				t.Fatal(err)
			}
			if hugepage.Enabled() {
				checkMoved(t, inPlace, moved, c.holds(inPlace))
			}
			ids := inPlace.Tokenize("Once upon a time, a little fox", true, false)
			want, err := inPlace.Logits(t.Context(), ids)
			if err != nil {
				t.Fatal(err)
			}
			got, err := moved.Logits(t.Context(), ids)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want {
				for j := range want[i] {
					if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
						t.Fatalf("position %d logit %d: %v with the copy, %v in place", i, j, got[i][j], want[i][j])
					}
				}
			}
			if err := moved.Close(); err != nil {
				t.Fatal(err)
			}
			if moved.weights != nil || moved.HugePageWeights() != 0 {
				t.Error("Close kept the copied weights")
			}
		})
	}
}

// checkMoved: each unpacked matrix of moved is in the huge-page region iff
// its counterpart in inPlace lies in a file mapping (holds), with the same
// bytes either way.
func checkMoved(t *testing.T, inPlace, moved *Engine, holds func([]byte) bool) {
	t.Helper()
	if moved.weights == nil || moved.HugePageWeights() == 0 {
		t.Fatal("nothing copied into huge pages")
	}
	region := moved.weights.Bytes()
	lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(region))), uintptr(unsafe.Pointer(unsafe.SliceData(region)))+uintptr(len(region))
	orig := map[string][]byte{}
	for _, m := range inPlace.matrices() {
		orig[m.Name] = m.Data
	}
	n := 0
	for _, m := range moved.matrices() {
		if m.Packed() {
			continue
		}
		p := uintptr(unsafe.Pointer(unsafe.SliceData(m.Data)))
		inRegion := p >= lo && p+uintptr(len(m.Data)) <= hi
		if want := holds(orig[m.Name]); inRegion != want {
			t.Errorf("%s: in the huge-page region %v, want %v (in a file mapping: %v)", m.Name, inRegion, want, want)
		}
		if inRegion {
			n++
		}
		if !bytes.Equal(m.Data, orig[m.Name]) {
			t.Errorf("%s: bytes differ from the file's", m.Name)
		}
	}
	if n == 0 {
		t.Fatal("no matrix in the huge-page region")
	}
	if ok, err := hugepage.Advised(region); err != nil || (len(region) >= 2*hugepage.Size && !ok) {
		t.Errorf("region of %d bytes advised %v (%v)", len(region), ok, err)
	}
}
