package decoder_test

import (
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
)

// loadGGUF loads the model in the GGUF file at path; the file stays open
// (its weights mapped) until the test ends.
func loadGGUF(t testing.TB, path string) model.Model {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := model.LoadGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newPool makes a KV pool of blocks blocks for c as the engine does for
// its layers: none for a layer that reads another's cache or a recurrent
// one, and slots recurrent states for a hybrid model.
func newPool(t testing.TB, c *model.Config, blocks, slots int) *kvcache.Pool {
	t.Helper()
	noKV := make([]bool, c.NLayers)
	for l := range noKV {
		noKV[l] = c.KVLayer(l) != l || c.Recurrent(l)
	}
	pool, err := kvcache.NewWindowedPool(c.NLayers, c.KVDim(), blocks, kvcache.Window{NoKV: noKV})
	if err != nil {
		t.Fatal(err)
	}
	if c.Hybrid() {
		if err := pool.SetState(kvcache.State{Elems: c.StateElems, Slots: slots}); err != nil {
			t.Fatal(err)
		}
	}
	return pool
}
