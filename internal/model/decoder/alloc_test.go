package decoder_test

import (
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestDecodeZeroAllocs: a decode step (one token through every layer, two
// threads) allocates nothing once buffers exist.
func TestDecodeZeroAllocs(t *testing.T) {
	for name, path := range map[string]string{
		"tinystories": filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"),
		// gated delta nets: states and checkpoints in the pool
		"qwen35-mini": testmodels.Synth(t, "-model", "qwen35-mini", "-type", "Q8_0", "-seed", "1"),
		// short convolutions; Mamba-2 layers beside MoE with a shared expert
		"lfm2-mini":          testmodels.Modern(t, "modelgen -model lfm2-mini -type Q8_0 -seed 1"),
		"granitehybrid-mini": testmodels.Modern(t, "modelgen -model granitehybrid-mini -type Q8_0 -seed 1"),
	} {
		t.Run(name, func(t *testing.T) { decodeZeroAllocs(t, path) })
	}
}

func decodeZeroAllocs(t *testing.T, path string) {
	m := loadGGUF(t, path)
	r := m.NewRunner(model.RunnerOptions{Threads: 2, MaxCtx: 512})
	defer r.Close()
	c := m.Config()
	pool := newPool(t, c, kvcache.BlocksFor(512), 8)
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
