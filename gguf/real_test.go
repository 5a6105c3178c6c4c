package gguf_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestRealTruncations cuts a real model file at every offset of its header
// and tensor table and at intervals through its data: each cut is an error.
func TestRealTruncations(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	step := func(n int) int {
		if uint64(n) < f.DataOffset+64 {
			return 1
		}
		return 4093
	}
	for n := 0; n < len(b); n += step(n) {
		if _, err := gguf.Parse(b[:n]); err == nil {
			t.Fatalf("truncation at %d of %d accepted", n, len(b))
		}
	}
}
