package decoder_test

import (
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/testmodels"
)

// BenchmarkDecodeHybrid: one decode step (one token through every layer)
// of the hybrid presets: qwen35-mini's gated delta nets (value heads of
// 64) and granitehybrid-mini's Mamba-2 layers (heads of 64 channels, 64
// states). One thread, so that the pool's synchronisation on a busy
// machine does not drown the layers' own time.
func BenchmarkDecodeHybrid(b *testing.B) {
	for _, c := range []struct{ name, path string }{
		{"qwen35-mini", testmodels.Synth(b, "-model", "qwen35-mini", "-type", "Q8_0", "-seed", "1")},
		{"granitehybrid-mini", testmodels.Modern(b, "modelgen -model granitehybrid-mini -type Q8_0 -seed 1")},
	} {
		b.Run(c.name, func(b *testing.B) { benchDecode(b, c.path) })
	}
}

func benchDecode(b *testing.B, path string) {
	m := loadGGUF(b, path)
	const ctx = 512
	r := m.NewRunner(model.RunnerOptions{Threads: 1, MaxCtx: ctx})
	defer r.Close()
	c := m.Config()
	pool := newPool(b, c, kvcache.BlocksFor(ctx), 8)
	logits := make([]float32, c.NVocab)
	bt := &model.Batch{Tokens: []int32{1}, Pos: []int32{0}}
	seq := pool.NewSeq()
	for b.Loop() {
		if seq.Len() >= ctx-1 { // a fresh sequence: attention stays short
			seq.Free()
			seq = pool.NewSeq()
		}
		bt.Tokens[0], bt.Pos[0], bt.Seqs = 42, int32(seq.Len()), []*kvcache.Seq{seq}
		if _, err := r.Forward(bt, logits); err != nil {
			b.Fatal(err)
		}
	}
}
