package engine_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestKVSizeAtLoad: a KV cache that cannot hold one sequence of the
// context is refused at load (KVTooSmallError), by positions or bytes; the
// default pool holds Parallel whole sequences in whole blocks, so they
// never preempt one another.
func TestKVSizeAtLoad(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	for _, o := range []engine.Options{
		{Threads: 1, KVTokens: 1},
		{Threads: 1, CtxLen: 512, KVTokens: 511},
		{Threads: 1, KVBytes: 1024},
	} {
		e, err := engine.Load(path, o)
		var ke *engine.KVTooSmallError
		if !errors.As(err, &ke) || ke.CtxLen != 512 {
			t.Errorf("%+v: %v, want a KVTooSmallError for the 512-position context", o, err)
		}
		if err == nil {
			e.Close()
		}
	}
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 512, KVTokens: 512})
	if err != nil {
		t.Fatalf("a KV cache of exactly one context: %v", err)
	}
	e.Close()
	// 100 positions take 4 blocks of 32: four sequences need 16 blocks,
	// where 100 × 4 positions would make 13.
	e, err = engine.Load(path, engine.Options{Threads: 1, CtxLen: 100, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if ci := e.Cache(); ci.Blocks*ci.BlockSize < 4*((100+ci.BlockSize-1)/ci.BlockSize*ci.BlockSize) {
		t.Errorf("default KV cache of %d blocks × %d for 4 sequences of 100 positions", ci.Blocks, ci.BlockSize)
	}
}
