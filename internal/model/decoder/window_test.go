package decoder_test

import (
	"math"
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestWindowedPoolSameLogits: a pool that keeps only the sliding layers'
// window (kvcache.NewWindowedPool) gives bit for bit the logits of one
// that keeps every position, on Gemma 3 (window 8 on 5 of 6 layers):
// three prompts of 150, 90 and 61 tokens in one batch, then 100 decode
// steps of all three together, with a fork and a rollback on the way (a
// sequence truncated by 40 positions: within Slack, so it resumes where it
// was cut) and a second rollback far behind its window (it resumes at the
// nearest position whose window is still stored, and recomputes the rest).
// By the end every sequence has let go of most of its blocks' window
// slots, and the windowed pool's sliding layers hold a fraction of the
// plain pool's memory.
func TestWindowedPoolSameLogits(t *testing.T) {
	m := loadGGUF(t, testmodels.Synth(t, "-model", "gemma3-mini", "-type", "F16", "-seed", "1"))
	c := m.Config()
	w := kvcache.Window{Layers: make([]bool, c.NLayers), Size: c.SlidingWindow, Slots: 40}
	for l := range w.Layers {
		w.Layers[l] = c.Sliding(l)
	}
	const blocks = 64
	plain, err := kvcache.NewPool(c.NLayers, c.KVDim(), blocks)
	if err != nil {
		t.Fatal(err)
	}
	windowed, err := kvcache.NewWindowedPool(c.NLayers, c.KVDim(), blocks, w)
	if err != nil {
		t.Fatal(err)
	}
	// 1 global layer of 64 blocks and 5 sliding ones of 41 slots (slot 0
	// is the zero slot) against 6 layers of 64 blocks.
	if want := plain.Bytes() / 6 / 64 * (64 + 5*41); windowed.Bytes() != want {
		t.Fatalf("windowed pool takes %d bytes, want %d (plain %d)", windowed.Bytes(), want, plain.Bytes())
	}
	type run struct {
		r    model.Runner
		pool *kvcache.Pool
		seqs []*kvcache.Seq
	}
	runs := []*run{{r: m.NewRunner(model.RunnerOptions{Threads: 1, MaxCtx: 1024}), pool: plain},
		{r: m.NewRunner(model.RunnerOptions{Threads: 1, MaxCtx: 1024}), pool: windowed}}
	nv := c.NVocab
	tok := func(i, p int) int32 { return int32((p*(13+2*i) + 7*i + 3) % nv) }
	// step evaluates, in both runs, each sequence's tokens from its length
	// to upto[i] (all with logits) and compares the logits bit for bit.
	step := func(what string, upto []int) {
		t.Helper()
		var outs [2][]float32
		for k, ru := range runs {
			b := &model.Batch{}
			for i, s := range ru.seqs {
				for p := s.Len(); p < upto[i]; p++ {
					b.Tokens = append(b.Tokens, tok(i, p))
					b.Pos = append(b.Pos, int32(p))
					b.Seq = append(b.Seq, int32(len(b.Seqs)))
					b.Logits = append(b.Logits, true)
				}
				if len(b.Seq) > 0 && int(b.Seq[len(b.Seq)-1]) == len(b.Seqs) {
					b.Seqs = append(b.Seqs, s)
				}
			}
			outs[k] = make([]float32, len(b.Tokens)*nv)
			if _, err := ru.r.Forward(b, outs[k]); err != nil {
				t.Fatalf("%s: run %d: %v", what, k, err)
			}
		}
		for i := range outs[0] {
			if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
				t.Fatalf("%s: logit %d (row %d) = %v with the window kept, %v with every position", what, i, i/nv, outs[1][i], outs[0][i])
			}
		}
	}
	for _, ru := range runs {
		for range 3 {
			ru.seqs = append(ru.seqs, ru.pool.NewSeq())
		}
	}
	lens := []int{150, 90, 61}
	step("prompts", lens)
	for s := range 100 {
		switch s {
		case 30: // a fork of sequence 1 decodes on as sequence 3
			for _, ru := range runs {
				ru.seqs = append(ru.seqs, ru.seqs[1].Fork())
			}
			lens = append(lens, lens[1])
		case 60: // speculative-style rollback of 40 positions
			for _, ru := range runs {
				ru.seqs[0].Truncate(lens[0] - 40)
			}
			lens[0] -= 40
			if got := runs[1].seqs[0].Len(); got != lens[0] {
				t.Fatalf("rollback within Slack: resumed at %d, want %d", got, lens[0])
			}
		case 90: // a rollback far behind the window: recompute from a checkpoint
			for _, ru := range runs {
				ru.seqs[2].Truncate(40)
			}
			if got := runs[1].seqs[2].Len(); got > 40 {
				t.Fatalf("truncated to %d positions, want at most 40", got)
			}
			// Recompute in both runs from where the windowed one resumes.
			resumed := runs[1].seqs[2].Len()
			t.Logf("truncated to 40: resumed at %d", resumed)
			if resumed < 40 {
				runs[0].seqs[2].Truncate(resumed)
				step("recompute", []int{lens[0], lens[1], 40, lens[3]})
			}
			lens[2] = 40
		}
		for i := range lens {
			lens[i]++
		}
		step("decode", lens)
	}
	held := 0
	for _, r := range windowed.SlotRefs() {
		if r > 0 {
			held++
		}
	}
	used := windowed.Used()
	t.Logf("after %v positions: %d blocks held, %d window slots held (window %d + slack %d)", lens, used, held, w.Size, kvcache.Slack)
	if most := len(lens) * (kvcache.BlocksFor(w.Size+kvcache.Slack) + 2); held > most || held >= used {
		t.Errorf("%d window slots held for %d blocks (at most %d): the sequences did not let go of their old slots", held, used, most)
	}
	for _, ru := range runs {
		for _, s := range ru.seqs {
			s.Free()
		}
		ru.r.Close()
	}
}
