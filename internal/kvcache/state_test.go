package kvcache

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// stateOf is what a recurrent state holds after toks in this test: their
// count and a 48-bit hash, 16 bits per element (exact in float32).
func stateOf(toks []int32) [4]float32 {
	h := uint64(14695981039346656037)
	for _, t := range toks {
		h = (h ^ uint64(uint32(t))) * 1099511628211
	}
	return [4]float32{float32(len(toks)), float32(h & 0xffff), float32(h >> 16 & 0xffff), float32(h >> 32 & 0xffff)}
}

// extendRec appends toks to a recurrent sequence as the runner does:
// reserve (which gives it its live state), ask for a checkpoint at the
// last block boundary the run crosses, write the states, commit.
func extendRec(s *Seq, toks []int32) error {
	if err := s.Reserve(len(toks)); err != nil {
		return err
	}
	fill(s, s.Len(), s.Len()+len(toks), toks)
	all := append(append([]int32(nil), s.tokens...), toks...)
	if at := len(all) / BlockSize * BlockSize; at > s.Len() {
		if ck := s.Checkpoint(at); ck > 0 {
			st := stateOf(all[:at])
			copy(s.pool.StateOf(0, ck), st[:])
		}
	}
	st := stateOf(all)
	copy(s.pool.StateOf(0, s.StateSlot()), st[:])
	s.Commit(toks)
	return nil
}

// TestStateRandom is TestPoolRandom for a pool with a recurrent layer:
// besides the blocks' accounting, every sequence's live state is the
// state after exactly its tokens (after reuse, which resumes at a
// checkpoint, truncation, forks and eviction), every checkpoint a
// sequence can reach holds the state after its block, and every state
// slot is exactly one of free, live in one sequence, or a checkpoint of
// the block that names it; at the end every slot is free or evictable.
func TestStateRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p, err := NewPool(2, 3, 24)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetState(State{Elems: []int{4, 0}, Slots: 14}); err != nil {
		t.Fatal(err)
	}
	prompt := func() []int32 {
		toks := make([]int32, 1+rng.IntN(4*BlockSize))
		v := rng.IntN(3)
		for i := range toks {
			toks[i] = int32(i/BlockSize*7 + (i/BlockSize+v)%2*(i%3))
		}
		return toks
	}
	var live []*Seq
	fulls, reused, resumed := 0, 0, 0
	for step := range 4000 {
		switch op := rng.IntN(10); {
		case op < 3 || len(live) == 0:
			s := p.NewSeq()
			toks := prompt()
			got := s.Reuse(toks)
			reused += got
			if got%BlockSize != 0 {
				t.Fatalf("step %d: reused %d tokens, not whole blocks", step, got)
			}
			if err := extendRec(s, toks[got:]); errors.Is(err, ErrFull) {
				fulls++
				s.Free()
				break
			} else if err != nil {
				t.Fatal(err)
			}
			live = append(live, s)
		case op < 6:
			s := live[rng.IntN(len(live))]
			for range 1 + rng.IntN(40) { // decode, one token a step
				if err := extendRec(s, []int32{int32(1000 + rng.IntN(50))}); errors.Is(err, ErrFull) {
					fulls++
					break
				} else if err != nil {
					t.Fatal(err)
				}
			}
		case op < 7:
			live = append(live, live[rng.IntN(len(live))].Fork())
		case op < 8:
			s := live[rng.IntN(len(live))]
			n := rng.IntN(s.Len() + 1)
			s.Truncate(n)
			if s.Len() > n {
				t.Fatalf("step %d: truncated to %d, holds %d", step, n, s.Len())
			}
			if s.Len() > 0 && s.Len() < n {
				resumed++
			}
		default:
			i := rng.IntN(len(live))
			live[i].Free()
			live = append(live[:i], live[i+1:]...)
		}
		if len(live) > 8 { // finished requests leave room
			live[0].Free()
			live = live[1:]
		}
		verify(t, p, live)
		verifyStates(t, p, live)
	}
	for _, s := range live {
		s.Free()
	}
	verifyStates(t, p, nil)
	if n, avail := p.StateSlots(); avail != n {
		t.Fatalf("after freeing everything: %d of %d state slots free or evictable", avail, n)
	}
	if fulls == 0 || reused == 0 || resumed == 0 {
		t.Errorf("the pool never ran full (%d), reused a prefix (%d) or resumed at a checkpoint (%d)", fulls, reused, resumed)
	}
	t.Logf("%d reservations found the pool full; %d positions reused; %d truncations resumed at a checkpoint", fulls, reused, resumed)
}

func verifyStates(t *testing.T, p *Pool, live []*Seq) {
	t.Helper()
	w := &p.rec
	role := make([]string, w.n+1)
	for _, s := range live {
		if len(s.pend) != 0 {
			t.Fatalf("a sequence keeps %d pending checkpoints after its commit", len(s.pend))
		}
		if s.state == 0 {
			if s.Len() != 0 {
				t.Fatalf("a sequence of %d positions without a state", s.Len())
			}
			continue
		}
		if role[s.state] != "" {
			t.Fatalf("state slot %d live in two sequences", s.state)
		}
		role[s.state] = "live"
		if got, want := [4]float32(p.StateOf(0, s.state)), stateOf(s.tokens); s.Len() > 0 && got != want {
			t.Fatalf("sequence of %d positions holds the state %v, want %v", s.Len(), got, want)
		}
		for i := range min(len(s.blocks), s.Len()/BlockSize) {
			if ck := p.meta[s.blocks[i]].ckpt; ck > 0 {
				if got, want := [4]float32(p.StateOf(0, ck)), stateOf(s.tokens[:(i+1)*BlockSize]); got != want {
					t.Fatalf("checkpoint of block %d (index %d) holds %v, want %v", s.blocks[i], i, got, want)
				}
			}
		}
	}
	for _, sl := range w.free {
		if role[sl] != "" || w.block[sl] != -1 || sl == 0 {
			t.Fatalf("state slot %d free and %q or attached to block %d", sl, role[sl], w.block[sl])
		}
		role[sl] = "free"
	}
	n := 0
	for sl := w.cached.head; sl >= 0; sl = w.cached.next[sl] {
		if role[sl] != "" || w.block[sl] < 0 || p.meta[w.block[sl]].ckpt != sl || !p.meta[w.block[sl]].hashed {
			t.Fatalf("state slot %d a checkpoint and %q, of block %d", sl, role[sl], w.block[sl])
		}
		role[sl] = "ckpt"
		n++
	}
	if n != w.cached.n {
		t.Fatalf("checkpoint LRU has %d, count says %d", n, w.cached.n)
	}
	for sl := 1; sl <= w.n; sl++ {
		if role[sl] == "" {
			t.Fatalf("state slot %d leaked: neither free, live nor a checkpoint", sl)
		}
	}
	for b := range p.meta {
		if ck := p.meta[b].ckpt; ck > 0 && w.block[ck] != int32(b) {
			t.Fatalf("block %d names checkpoint slot %d, which names block %d", b, ck, w.block[ck])
		}
	}
}
