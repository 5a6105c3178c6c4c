package engine

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestHugePageWeights: by default the matrices not repacked at load are
// copied into one region of huge-page memory (where the kernel has THP),
// every one of them, byte for byte; the logits are the same bits as with
// the weights read from the file's mapping (WeightsInPlace, --mmap), which
// copies nothing; Close frees the region.
func TestHugePageWeights(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K.f16.gguf")
	inPlace, err := Load(path, Options{Threads: 2, WeightsInPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	defer inPlace.Close()
	if inPlace.HugePageWeights() != 0 || inPlace.weights != nil {
		t.Fatalf("WeightsInPlace copied %d bytes", inPlace.HugePageWeights())
	}
	moved, err := Load(path, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if hugepage.Enabled() {
		if moved.weights == nil || moved.HugePageWeights() == 0 {
			t.Fatal("nothing copied into huge pages")
		}
		region := moved.weights.Bytes()
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
		orig := map[string][]byte{}
		for _, m := range inPlace.matrices() {
			orig[m.Name] = m.Data
		}
		n := 0
		for _, m := range moved.matrices() {
			if m.Packed() {
				continue
			}
			n++
			p := uintptr(unsafe.Pointer(unsafe.SliceData(m.Data)))
			if p < lo || p+uintptr(len(m.Data)) > lo+uintptr(len(region)) {
				t.Errorf("%s: still read from %#x, outside the region", m.Name, p)
			}
			if !bytes.Equal(m.Data, orig[m.Name]) {
				t.Errorf("%s: copy differs from the file's bytes", m.Name)
			}
		}
		if n == 0 {
			t.Fatal("an F16 model with no matrix left unpacked")
		}
		if ok, err := hugepage.Advised(region); err != nil || (len(region) >= 2*hugepage.Size && !ok) {
			t.Errorf("region of %d bytes advised %v (%v)", len(region), ok, err)
		}
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
				t.Fatalf("position %d logit %d: %v with the copy, %v from the mapping", i, j, got[i][j], want[i][j])
			}
		}
	}
	if err := moved.Close(); err != nil {
		t.Fatal(err)
	}
	if moved.weights != nil || moved.HugePageWeights() != 0 {
		t.Error("Close kept the copied weights")
	}
}
