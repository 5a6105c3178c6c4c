package kernels

import (
	"runtime"
	"testing"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestPackedHugePages: a repacked copy, read through once per token,
// carries the huge-page advice over the huge pages it holds.
func TestPackedHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are Linux's")
	}
	const rows, cols = 2048, 2048 // 4.25 MiB of Q8_0: whole huge pages inside
	m, err := NewMatrix("w", tensor.Q8_0, rows, cols, make([]byte, rows*cols/32*34))
	if err != nil {
		t.Fatal(err)
	}
	m.Pack()
	if !m.Packed() {
		t.Skip("no packed Q8_0 kernels on this CPU")
	}
	ok, err := hugepage.Advised(m.packed)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("packed copy of %d bytes not advised for huge pages", len(m.packed))
	}
}
