package kvcache

import "fmt"

// Sliding-window layers keep only their window. A layer that attends
// through a window of W positions never reads a position more than W−1
// before the query, so its K and V live apart from the other layers', in
// slots of one block each that a sequence holds only while some position
// of the block can still be seen: as the sequence grows past a block by
// the window (and Slack more positions, so a speculative rollback never
// reaches back to a released block), it lets the block's slot go. The
// block itself stays (the global layers need every position); its slot
// stays attached to it, reusable, while it is in the prefix index, until
// the slot is needed elsewhere (least recently released first).
//
// A sequence resuming at position n — reusing a cached prefix, or
// truncated to one — needs the slots of the blocks overlapping
// [n−W+1, n): Reuse and Truncate stop at the longest prefix whose window
// is still stored (a "checkpoint" at every block boundary whose window's
// slots survive), so what follows is recomputed, never read from a
// released slot. Slot 0 is kept zero: released positions' V rows point at
// it (their weight is 0, and 0·0 cannot be NaN).
//
// Layout of a sliding layer l: as the package comment's, with the slot s
// in place of the block: K[l][s·B·kvd + e·B + i], V[l][(s·B + i)·kvd + e].

// Window configures a pool's sliding-window layers.
type Window struct {
	Layers []bool // per layer: whether it attends through the window (nil: none)
	Size   int    // positions a sliding layer sees
	Slots  int    // slots (of BlockSize positions) for the sliding layers of every sequence
	// NoKV, per layer (nil: none), marks layers that store no keys or
	// values of their own (Gemma 4's shared layers read another's): they
	// get no arrays, whether or not the pool keeps windows apart.
	NoKV []bool
}

// Slack is how many positions beyond the window a sequence keeps: a
// speculative rollback (at most 64 drafted tokens) stays within what it
// holds.
const Slack = 96

// slotState is the bookkeeping of the sliding layers' slots.
type slotState struct {
	block  []int32 // per slot: the block it holds the window layers of (-1: free)
	ref    []int32 // per slot: sequences holding it
	cached lru     // attached slots no sequence holds, least recently released first
	free   []int32
}

func (w *slotState) init(n int) {
	w.block = make([]int32, n+1)
	w.ref = make([]int32, n+1)
	w.cached = newLRU(n + 1)
	for s := range w.block {
		w.block[s] = -1
	}
	for s := n; s >= 1; s-- { // slot 0 stays zero: pop order 1, 2, …
		w.free = append(w.free, int32(s))
	}
}

func (w *slotState) available() int { return len(w.free) + w.cached.n }

// Sliding reports whether layer l keeps only its window.
func (p *Pool) Sliding(l int) bool { return p.win.Layers != nil && p.win.Layers[l] }

// Windowed reports whether the pool has sliding-window layers.
func (p *Pool) Windowed() bool { return p.win.Slots > 0 }

// WindowSize is the window of the sliding layers (0: none).
func (p *Pool) WindowSize() int { return p.win.Size }

// attachSlot gives block b a slot for its sliding layers, held once (the
// caller's). The caller has checked availability.
func (p *Pool) attachSlot(b int32) {
	w := &p.slots
	var s int32
	if n := len(w.free); n > 0 {
		s = w.free[n-1]
		w.free = w.free[:n-1]
	} else {
		s = w.cached.head
		w.cached.remove(s)
		p.meta[w.block[s]].slot = 0
	}
	w.block[s], w.ref[s] = b, 1
	p.meta[b].slot = s
}

// retainSlot holds block b's slot once more; it reports false when the
// block has none.
func (p *Pool) retainSlot(b int32) bool {
	s := p.meta[b].slot
	if s <= 0 {
		return false
	}
	w := &p.slots
	if w.ref[s] == 0 {
		w.cached.remove(s)
	}
	w.ref[s]++
	return true
}

// releaseSlot lets block b's slot go once: with no holder left it stays
// attached (and evictable) while the block is in the prefix index, and is
// freed otherwise.
func (p *Pool) releaseSlot(b int32) {
	s := p.meta[b].slot
	w := &p.slots
	if s <= 0 || w.ref[s] <= 0 {
		panic(fmt.Sprintf("kvcache: block %d's window slot %d released with reference count %d", b, s, w.ref[max(s, 0)]))
	}
	w.ref[s]--
	if w.ref[s] > 0 {
		return
	}
	if p.meta[b].hashed {
		w.cached.push(s)
		return
	}
	p.detachSlot(b)
}

// detachSlot frees block b's slot, which no sequence holds.
func (p *Pool) detachSlot(b int32) {
	s := p.meta[b].slot
	if s <= 0 {
		return
	}
	w := &p.slots
	if w.ref[s] != 0 {
		panic(fmt.Sprintf("kvcache: block %d's window slot %d freed while held %d times", b, s, w.ref[s]))
	}
	if w.cached.has(s) {
		w.cached.remove(s)
	}
	w.block[s] = -1
	w.free = append(w.free, s)
	p.meta[b].slot = 0
}

// copySlot copies the sliding layers' K and V of slot src into dst.
func (p *Pool) copySlot(dst, src int32) {
	for l := range p.NLayers {
		if p.Sliding(l) && !p.noKV(l) {
			p.copyLayerBlock(l, dst, src)
		}
	}
}

// SlotRefs returns the reference count of every window slot (tests).
func (p *Pool) SlotRefs() []int32 { return append([]int32(nil), p.slots.ref...) }

// WindowSlot is the slot holding block i's sliding layers for this
// sequence: 0 (the zero slot) for a block it has let go.
func (s *Seq) WindowSlot(i int) int32 {
	if i < s.slideFrom {
		return 0
	}
	return s.pool.meta[s.blocks[i]].slot
}

// windowStart is the first position a sequence of n positions still
// needs for its sliding layers (its next query sees n−W+1 on).
func (p *Pool) windowStart(n int) int { return max(0, n-p.win.Size+1) }

// slide lets go of the slots of the blocks no query from position
// Len() on can see (keeping Slack more positions).
func (s *Seq) slide() {
	p := s.pool
	if !p.Windowed() {
		return
	}
	need := p.windowStart(len(s.tokens)) - Slack
	for ; s.slideFrom < len(s.blocks) && (s.slideFrom+1)*BlockSize <= need; s.slideFrom++ {
		p.releaseSlot(s.blocks[s.slideFrom])
	}
}

// windowStored reports whether the blocks overlapping the window of a
// sequence resumed at n positions, [n−W+1, n), still have their slots
// (held by s from slideFrom on, or attached and cached before it).
func (s *Seq) windowStored(n int) bool {
	p := s.pool
	for i := p.windowStart(n) / BlockSize; i*BlockSize < n; i++ {
		if i >= s.slideFrom {
			break // held by s
		}
		if p.meta[s.blocks[i]].slot <= 0 {
			return false
		}
	}
	return true
}

// rewind takes back the slots of the blocks from the window of a
// sequence resumed at n positions to slideFrom (they are attached:
// windowStored(n) holds).
func (s *Seq) rewind(n int) {
	first := s.pool.windowStart(n) / BlockSize
	for s.slideFrom > first {
		s.slideFrom--
		s.pool.retainSlot(s.blocks[s.slideFrom])
	}
}
