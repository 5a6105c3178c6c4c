package engine

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/tokenizer"
)

// The draft model: a second, smaller model with the target's vocabulary
// proposes tokens greedily for every sequence that speculates in "draft"
// mode, batched across them, one forward pass per drafted position. Each
// sequence keeps its own cache in the draft model's pool, synced to the
// target's tokens at every step (what the target accepted stays, the rest
// is dropped).

// loadDraft loads path as the draft model of e (same context, a pool of
// the same number of positions, the same threads).
func (e *Engine) loadDraft(path string, opts Options) error {
	d, err := Load(path, Options{Threads: opts.Threads, CtxLen: e.ctxLen, KVTokens: e.kv.NBlocks * kvcache.BlockSize, Tokenizer: opts.Tokenizer})
	if err != nil {
		return fmt.Errorf("draft model: %w", err)
	}
	if d.model.Config().Hybrid() {
		d.Close()
		return fmt.Errorf("draft model %s has recurrent layers, whose state cannot be rolled back past rejected drafts: not supported as a draft model", path)
	}
	if err := vocabCompatible(e.vocab, d.vocab); err != nil {
		d.Close()
		return fmt.Errorf("draft model %s cannot draft for %s: %w", path, e.path, err)
	}
	e.draft = d
	return nil
}

// vocabCompatible is llama.cpp's check of a draft model's vocabulary
// (common_speculative_are_compatible): the same BOS and EOS, sizes within
// 128, and the same text for every token both have from id 5 on.
func vocabCompatible(t, d *tokenizer.Vocab) error {
	const maxDiff, checkFrom = 128, 5
	switch {
	case t.BOS != d.BOS || t.EOS != d.EOS:
		return fmt.Errorf("BOS/EOS %d/%d, the model's %d/%d", d.BOS, d.EOS, t.BOS, t.EOS)
	case t.AddBOS != d.AddBOS:
		return fmt.Errorf("add_bos %v, the model's %v", d.AddBOS, t.AddBOS)
	case abs(t.Len()-d.Len()) > maxDiff:
		return fmt.Errorf("%d tokens, the model's %d (at most %d apart)", d.Len(), t.Len(), maxDiff)
	}
	for id := checkFrom; id < min(t.Len(), d.Len()); id++ {
		if t.Tokens[id] != d.Tokens[id] {
			return fmt.Errorf("token %d is %q, the model's %q", id, d.Tokens[id], t.Tokens[id])
		}
	}
	return nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// draftState is one sequence's cache in the draft model.
type draftState struct {
	seq *kvcache.Seq
}

// release frees the sequence's draft cache (in the draft model's pool,
// which its engine's lock guards).
func (d *draftState) release(e *Engine) {
	if d.seq != nil {
		e.mu.Lock()
		d.seq.Free()
		e.mu.Unlock()
		d.seq = nil
	}
}

// draftRound is one batched draft step: which entries, and the tokens
// each evaluates.
type draftJob struct {
	en *entry
	k  int // drafts wanted
}

// draftWithModel proposes up to each job's k tokens with the draft model:
// every sequence's draft cache catches up with its tokens in one batch,
// then each round evaluates the previous draft of the sequences still
// drafting. A sequence stops where the draft's most likely token has less
// than PMin probability (unless Fixed), or its cache finds no room.
func (s *scheduler) draftWithModel(jobs []draftJob) {
	d := s.e.draft
	d.mu.Lock()
	defer d.mu.Unlock()
	t0 := time.Now()
	nv := d.model.Config().NVocab
	live := jobs[:0:0]
	b := &s.dbatch
	b.Tokens, b.Pos, b.Seq, b.Logits, b.Seqs = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0], b.Seqs[:0]
	for _, j := range jobs {
		ds := &j.en.spec.draft
		if ds.seq == nil {
			ds.seq = d.kv.NewSeq()
		}
		toks := j.en.tokens
		ds.seq.Truncate(min(commonPrefix(ds.seq.Tokens(), toks), len(toks)-1))
		l := ds.seq.Len()
		// A draft cache far behind (a prompt the target took from the
		// prefix cache) gains a step's token budget per step, without
		// drafting, so that no step carries an unbounded catch-up.
		hi := min(len(toks), l+s.opts.stepTokens)
		behind := hi < len(toks)
		s.draftCatchUp = max(s.draftCatchUp, hi-l)
		if feedDraft(b, ds, toks[:hi], j.k, !behind) && !behind {
			live = append(live, j)
		}
	}
	// Short catch-ups (the usual case: what the target accepted) in
	// one-token order, as the draft's own drafting steps and as the target
	// verifies: a model drafting for itself then agrees on every greedy
	// token. A long one (a new prompt) keeps the batch order, for speed.
	b.OneByOne = b.OneByOne[:0]
	short := true
	for i := 0; i < len(b.Tokens); {
		j := i
		for j < len(b.Tokens) && b.Seq[j] == b.Seq[i] {
			j++
		}
		short = short && j-i <= 8
		i = j
	}
	for range b.Seqs {
		b.OneByOne = append(b.OneByOne, short)
	}
	drafting := len(live) > 0 // else only catch-ups: not drafting's cost
	for round := 0; len(live) > 0 || round == 0 && len(b.Tokens) > 0; round++ {
		if need := len(live) * nv; len(s.dlogits) < need {
			s.dlogits = make([]float32, need)
		}
		if _, err := d.runner.Forward(b, s.dlogits); err != nil {
			for _, j := range live { // cannot happen with reserved blocks; draft nothing
				j.en.spec.drafts = j.en.spec.drafts[:0]
				j.en.spec.draft.seq.Free()
				j.en.spec.draft.seq = nil
			}
			break
		}
		next := live[:0]
		b.Tokens, b.Pos, b.Seq, b.Logits, b.Seqs = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0], b.Seqs[:0]
		for i, j := range live {
			sp := j.en.spec
			row := s.dlogits[i*nv : (i+1)*nv]
			tok := sample.Greedy(row)
			if !sp.p.Fixed && math.Exp(float64(row[tok])-sample.LogSumExp(row)) < float64(sp.p.PMin) {
				if len(sp.drafts) == 0 {
					// A round that proposes nothing cost a draft pass for
					// nothing: count it as a rejected draft, so a draft
					// model that is rarely sure stops being run each step.
					s.observe(sp, 1, 0)
				}
				continue
			}
			if int(tok) >= s.e.vocab.Len() { // a token only the draft has
				continue
			}
			sp.drafts = append(sp.drafts, tok)
			if len(sp.drafts) >= j.k {
				continue
			}
			ds := sp.draft.seq
			b.Tokens = append(b.Tokens, tok)
			b.Pos = append(b.Pos, int32(ds.Len()))
			b.Seq = append(b.Seq, int32(len(b.Seqs)))
			b.Logits = append(b.Logits, true)
			b.Seqs = append(b.Seqs, ds)
			next = append(next, j)
		}
		live = next
		if drafting {
			s.draftRounds++
		}
		b.OneByOne = b.OneByOne[:0]
	}
	if drafting {
		s.draftTime += time.Since(t0)
	}
}

// draftRatio is a draft round's cost (one drafted position for every
// sequence) in units of a target step's fixed cost (0 before any).
func (s *scheduler) draftRatio() float64 {
	if s.draftRounds == 0 {
		return 0
	}
	c0 := s.cost.fixed()
	if c0 <= 0 {
		return 0
	}
	return s.draftTime.Seconds() / float64(s.draftRounds) / c0
}

// draftPrefill runs this step's prompt chunks of the sequences that draft
// with the draft model through the draft model too, without logits: the
// draft cache follows the target's prompt chunk by chunk, in the steps that
// prefill anyway, so the first drafting step catches up one token instead
// of the whole prompt — a pass as long as the prompt that would stall every
// stream for it and count as drafting cost (the adaptive choice and the
// gate would read it as drafting being slow). A draft cache behind by more
// than this step's chunk (the target's prompt came from the prefix cache)
// gains at most the step's token budget per step; what is left when the
// prompt ends, draftWithModel catches up.
func (s *scheduler) draftPrefill(runs []run) {
	d := s.e.draft
	if d == nil {
		return
	}
	b := &s.dbatch
	b.Tokens, b.Pos, b.Seq, b.Logits, b.Seqs = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0], b.Seqs[:0]
	b.OneByOne, b.Adapters = b.OneByOne[:0], b.Adapters[:0]
	for _, r := range runs {
		en := r.en
		sp := en.spec
		if sp == nil || sp.p.Mode != SpecDraft || en.seq.Len() >= en.nPrompt {
			continue
		}
		ds := &sp.draft
		if ds.seq == nil {
			ds.seq = d.kv.NewSeq()
		}
		// The prompt tokens the target holds once this step is done.
		toks := en.tokens[:min(en.seq.Len()+r.n, en.nPrompt)]
		ds.seq.Truncate(commonPrefix(ds.seq.Tokens(), toks))
		if l := ds.seq.Len(); l < len(toks) {
			feedDraft(b, ds, toks[:min(len(toks), l+s.opts.stepTokens)], 0, false)
		}
	}
	if len(b.Tokens) == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.runner.Forward(b, nil); err != nil {
		// Cannot happen with reserved blocks; the sequences draft from a
		// fresh cache later (draftWithModel catches up).
		for _, r := range runs {
			if sp := r.en.spec; sp != nil && sp.draft.seq != nil && slices.Contains(b.Seqs, sp.draft.seq) {
				sp.draft.seq.Free()
				sp.draft.seq = nil
			}
		}
	}
}

// feedDraft adds the tokens of toks past what ds's cache holds to the
// draft batch b, with room reserved for extra positions more (the drafts
// to come) and logits after the last one when logits; false, with the
// cache freed, when the draft pool has no room.
func feedDraft(b *model.Batch, ds *draftState, toks []int32, extra int, logits bool) bool {
	l := ds.seq.Len()
	if ds.seq.Reserve(len(toks)-l+extra) != nil {
		ds.seq.Free()
		ds.seq = nil
		return false
	}
	for p := l; p < len(toks); p++ {
		b.Tokens = append(b.Tokens, toks[p])
		b.Pos = append(b.Pos, int32(p))
		b.Seq = append(b.Seq, int32(len(b.Seqs)))
		b.Logits = append(b.Logits, logits && p == len(toks)-1)
	}
	b.Seqs = append(b.Seqs, ds.seq)
	return true
}
