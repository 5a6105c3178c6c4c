package kvcache

import "fmt"

// Recurrent layers (the hybrid models' gated delta nets, Mamba-2 and
// short-convolution layers) keep no keys and values: each carries a state
// of fixed size per sequence, which every token reads and rewrites. A
// pool for such a model holds those states, F32, in slots of every
// recurrent layer's state: each sequence owns one live slot (its state
// after its Len() positions), and the other slots hold checkpoints.
//
// A state cannot be cut back to an earlier position the way K and V rows
// can, so prefix reuse and rollback need the state as it was there. A
// checkpoint is the state after a block's last position, attached to that
// block while the block is in the prefix index (as a sliding layer's
// window slot is): a sequence reusing a cached prefix, or truncated,
// resumes at the deepest block of it that has one and computes what
// follows. Checkpoints are copies, evicted least recently used first
// whenever a slot is needed; the runner asks for one (Checkpoint) at the
// last block boundary each forward pass crosses for a sequence, so a
// prompt leaves one at the end of each chunk and of its last full block,
// and a generation one at its latest block (each replacing its previous
// one), which the next turn of a chat resumes from.
//
// Layout: S[l][slot·Elems[l] + e], element e of layer l's state in slot
// slot (its meaning is the family's). Slot 0 is never handed out.

// State configures a pool's recurrent states.
type State struct {
	Elems []int // per layer: float32 elements of its state (0: an attention layer)
	Slots int   // slots in all: live states and checkpoints
}

// stateSlots is the bookkeeping of the state slots.
type stateSlots struct {
	elems  []int
	n      int     // slots (0: no recurrent layers)
	block  []int32 // per slot: the block it is a checkpoint of (-1: none)
	cached lru     // attached checkpoints, least recently used first
	free   []int32
}

// SetState gives the pool recurrent states (before any sequence uses
// it): Elems per layer, Slots slots. It allocates them.
func (p *Pool) SetState(st State) error {
	if len(st.Elems) != p.NLayers || st.Slots <= 0 || st.Slots > 1<<20 {
		return fmt.Errorf("kvcache: recurrent state for %d of %d layers in %d slots", len(st.Elems), p.NLayers, st.Slots)
	}
	if p.Windowed() {
		return fmt.Errorf("kvcache: a pool keeping windows apart cannot hold recurrent states")
	}
	w := &p.rec
	w.elems, w.n = append([]int(nil), st.Elems...), st.Slots
	w.block = make([]int32, st.Slots+1)
	w.cached = newLRU(st.Slots + 1)
	for s := range w.block {
		w.block[s] = -1
	}
	for s := st.Slots; s >= 1; s-- { // pop order 1, 2, …
		w.free = append(w.free, int32(s))
	}
	p.S = make([][]float32, p.NLayers)
	for l, e := range st.Elems {
		if e < 0 || int64(e)*int64(st.Slots+1) > 1<<31-1 {
			return fmt.Errorf("kvcache: recurrent state of %d elements × %d slots in layer %d", e, st.Slots, l)
		}
		if e > 0 {
			p.S[l] = make([]float32, (st.Slots+1)*e)
		}
	}
	return nil
}

// Recurrent reports whether the pool holds recurrent states.
func (p *Pool) Recurrent() bool { return p.rec.n > 0 }

// StateOf is layer l's state in slot s: [Elems[l]].
func (p *Pool) StateOf(l int, s int32) []float32 {
	e := p.rec.elems[l]
	return p.S[l][int(s)*e : int(s+1)*e]
}

// StateBytes is the memory of one slot (every recurrent layer's state).
func (p *Pool) StateBytes() int64 {
	var n int64
	for _, e := range p.rec.elems {
		n += 4 * int64(e)
	}
	return n
}

// StateSlots is the number of slots and how many are free or hold an
// evictable checkpoint.
func (p *Pool) StateSlots() (slots, available int) {
	return p.rec.n, len(p.rec.free) + p.rec.cached.n
}

// Checkpoints is the number of checkpoints attached to cached blocks.
func (p *Pool) Checkpoints() int { return p.rec.cached.n }

// allocState takes a free slot, evicting the least recently used
// checkpoint if none is free; 0 when every slot is live or pending.
func (p *Pool) allocState() int32 {
	w := &p.rec
	if n := len(w.free); n > 0 {
		s := w.free[n-1]
		w.free = w.free[:n-1]
		return s
	}
	if w.cached.head < 0 {
		return 0
	}
	s := w.cached.head
	p.detachCkpt(w.block[s])
	n := len(w.free)
	w.free = w.free[:n-1] // detachCkpt freed it
	return s
}

// freeState returns slot s (live or pending) to the free list.
func (p *Pool) freeState(s int32) {
	if s <= 0 {
		return
	}
	if p.rec.block[s] >= 0 {
		panic(fmt.Sprintf("kvcache: state slot %d freed while a checkpoint of block %d", s, p.rec.block[s]))
	}
	p.rec.free = append(p.rec.free, s)
}

// copyState copies every recurrent layer's state of slot src into dst.
func (p *Pool) copyState(dst, src int32) {
	for l, e := range p.rec.elems {
		if e > 0 {
			copy(p.StateOf(l, dst), p.StateOf(l, src))
		}
	}
}

// zeroState clears slot s: the state before a sequence's first token.
func (p *Pool) zeroState(s int32) {
	for l, e := range p.rec.elems {
		if e > 0 {
			clear(p.StateOf(l, s))
		}
	}
}

// attachCkpt makes slot s the checkpoint of block b (registered, without
// one): the state after its last position.
func (p *Pool) attachCkpt(b, s int32) {
	p.meta[b].ckpt = s
	p.rec.block[s] = b
	p.rec.cached.push(s)
}

// detachCkpt frees block b's checkpoint, if it has one.
func (p *Pool) detachCkpt(b int32) {
	if !p.Recurrent() {
		return
	}
	s := p.meta[b].ckpt
	if s <= 0 {
		return
	}
	p.rec.cached.remove(s)
	p.rec.block[s] = -1
	p.meta[b].ckpt = 0
	p.rec.free = append(p.rec.free, s)
}

// touchCkpt marks block b's checkpoint as just used.
func (p *Pool) touchCkpt(b int32) {
	s := p.meta[b].ckpt
	p.rec.cached.remove(s)
	p.rec.cached.push(s)
}

// StateSlot is the sequence's live state slot (0: none yet; Reserve
// takes one).
func (s *Seq) StateSlot() int32 { return s.state }

// ensureState gives a recurrent sequence its live slot, zeroed (it holds
// no position yet) or restored by the caller.
func (s *Seq) ensureState() error {
	if !s.pool.Recurrent() || s.state > 0 {
		return nil
	}
	if len(s.tokens) != 0 {
		panic("kvcache: a recurrent sequence with positions and no state")
	}
	st := s.pool.allocState()
	if st == 0 {
		return ErrFull
	}
	s.pool.zeroState(st)
	s.state = st
	return nil
}

// ckptPending is a checkpoint the forward pass is writing: the state after
// n positions, attached to the block ending there once it is committed.
type ckptPending struct {
	n    int
	slot int32
}

// Checkpoint asks for a slot to hold the state after n positions, a block
// boundary the forward pass about to run crosses (Len() < n). It returns
// 0 when none is wanted (the block already has one, or no slot is left);
// otherwise the runner writes the state there and Commit attaches it.
func (s *Seq) Checkpoint(n int) int32 {
	p := s.pool
	if !p.Recurrent() || p.Private || n%BlockSize != 0 || n <= len(s.tokens) || n <= 0 {
		return 0
	}
	i := n/BlockSize - 1
	if i < len(s.blocks) && p.meta[s.blocks[i]].ckpt > 0 {
		return 0
	}
	if n == len(s.tokens)+1 && s.lastCk > 0 {
		// A generation keeps its latest checkpoint only.
		if b := s.lastCk - 1; p.meta[b].ckpt == s.lastSlot {
			p.detachCkpt(b)
		}
		s.lastCk = 0
	}
	st := p.allocState()
	if st == 0 {
		return 0
	}
	s.pend = append(s.pend, ckptPending{n, st})
	return st
}

// attachPending attaches the checkpoints of positions Commit stored to
// their blocks, if those are in the prefix index without one; the others
// are freed.
func (s *Seq) attachPending(oneToken bool) {
	p := s.pool
	keep := s.pend[:0]
	for _, c := range s.pend {
		if c.n > len(s.tokens) {
			keep = append(keep, c)
			continue
		}
		i := c.n/BlockSize - 1
		b := s.blocks[i]
		if i < len(s.hashes) && p.meta[b].hashed && p.meta[b].ckpt == 0 {
			p.attachCkpt(b, c.slot)
			if oneToken {
				s.lastCk, s.lastSlot = b+1, c.slot
			}
			continue
		}
		p.freeState(c.slot)
	}
	s.pend = keep
}

// dropPending frees checkpoints that were asked for but not committed.
func (s *Seq) dropPending() {
	for _, c := range s.pend {
		s.pool.freeState(c.slot)
	}
	s.pend = s.pend[:0]
}

// resume sets a recurrent sequence back to the deepest of its first
// blocks, up to n positions, that has a checkpoint (0 positions if none):
// it keeps that many positions and restores the state there.
func (s *Seq) resume(n int) {
	p := s.pool
	s.dropPending()
	if s.state == 0 { // before choosing a checkpoint: this may evict one
		s.state = p.allocState()
	}
	at := 0
	for i := min(n/BlockSize, len(s.blocks), len(s.tokens)/BlockSize) - 1; i >= 0; i-- {
		if p.meta[s.blocks[i]].ckpt > 0 {
			at = (i + 1) * BlockSize
			break
		}
	}
	if s.state == 0 { // nothing to restore into: start over
		at = 0
	}
	s.cut(at)
	if s.state == 0 {
		return
	}
	if at == 0 {
		p.zeroState(s.state)
		return
	}
	b := s.blocks[at/BlockSize-1]
	p.copyState(s.state, p.meta[b].ckpt)
	p.touchCkpt(b)
}

// forkState gives fork f its own copy of s's state; without a slot left f
// holds no position (it is recomputed).
func (s *Seq) forkState(f *Seq) {
	if !s.pool.Recurrent() || s.state == 0 {
		return
	}
	st := s.pool.allocState()
	if st == 0 {
		f.cut(0)
		return
	}
	s.pool.copyState(st, s.state)
	f.state = st
}

// freeStates returns the sequence's live slot and pending checkpoints.
func (s *Seq) freeStates() {
	s.dropPending()
	if s.state > 0 {
		s.pool.freeState(s.state)
		s.state = 0
	}
}
