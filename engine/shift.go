package engine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/loom-inference/loom/internal/kvcache"
)

// Context shift (Options.ContextShift, llama.cpp's --context-shift): a
// sequence that fills its context keeps its first Keep positions, drops
// half of the rest — the oldest — and goes on; the runner re-rotates the
// keys that move back (decoder.Runner.Shift). Without it, a full context
// ends the request (FinishLength, DetailContext).

// shifter is a runner that can shift a sequence's context.
type shifter interface {
	Shift(seq *kvcache.Seq, keep, d int) error
}

// canShift reports whether this model's sequences can shift their
// context, and why not.
func (e *Engine) canShift(keep int) error {
	c := e.model.Config()
	switch _, ok := e.runner.(shifter); {
	case keep < 0:
		return fmt.Errorf("engine: --keep %d is negative", keep)
	case keep >= e.ctxLen-1:
		return fmt.Errorf("engine: --keep %d leaves nothing to drop from a context of %d", keep, e.ctxLen)
	case !ok:
		return errors.New("engine: --context-shift: this model's runner cannot shift its context")
	case c.Hybrid():
		return fmt.Errorf("engine: --context-shift: %s has recurrent layers, whose state does not shift with positions", c.Arch)
	case c.LearnedPos:
		return fmt.Errorf("engine: --context-shift: %s learns absolute positions (no rotation can move them)", c.Arch)
	}
	return nil
}

// shiftContext makes room in en's full context: the positions after the
// first keep (the BOS token at least) lose their older half. It returns
// why the request ends when it cannot (nil: it goes on).
func (s *scheduler) shiftContext(en *entry) *finish {
	e := s.e
	n := en.seq.Len() // every token but the newest is in the cache
	keep := min(e.shiftKeep, n)
	if keep == 0 && len(en.tokens) > 0 && en.tokens[0] == e.vocab.BOS {
		keep = 1
	}
	d := (n - keep) / 2
	if d <= 0 {
		return &finish{FinishLength, DetailContext, true}
	}
	if en.spec != nil { // the draft model's cache does not shift: no more drafting
		en.spec.draft.release(e.draft)
		en.spec = nil
	}
	if err := e.runner.(shifter).Shift(en.seq, keep, d); err != nil {
		// kvcache.ErrFull: no free blocks for private copies of shared
		// ones (canShift ruled the model's other reasons out).
		return &finish{FinishLength, DetailContext, true}
	}
	en.tokens = slices.Concat(en.tokens[:keep], en.tokens[keep+d:])
	if en.nPrompt > keep {
		en.nPrompt = max(keep, en.nPrompt-d)
	}
	en.res.ContextShifts++
	return nil
}

// ContextShift reports whether sequences that fill their context shift it
// (Options.ContextShift) instead of ending.
func (e *Engine) ContextShift() bool { return e.shiftKeep >= 0 }
