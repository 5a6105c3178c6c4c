package decoder_test

import (
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestDecodeZeroAllocs: a decode step (one token through every layer, two
// threads) allocates nothing once buffers exist.
func TestDecodeZeroAllocs(t *testing.T) {
	f, err := gguf.Open(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := model.LoadGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	r := m.NewRunner(model.RunnerOptions{Threads: 2, MaxCtx: 512})
	defer r.Close()
	c := m.Config()
	pool, err := kvcache.NewPool(c.NLayers, c.KVDim(), kvcache.BlocksFor(512))
	if err != nil {
		t.Fatal(err)
	}
	seq := pool.NewSeq()
	logits := make([]float32, c.NVocab)
	b := &model.Batch{Tokens: []int32{1}, Pos: []int32{0}, Seqs: []*kvcache.Seq{seq}}
	if _, err := r.Forward(b, logits); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		b.Tokens[0], b.Pos[0] = 42, int32(seq.Len())
		if _, err := r.Forward(b, logits); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decode step", allocs)
	}
}
