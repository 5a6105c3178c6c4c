package kvcache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
)

// fill writes a recognizable value into every slot of s's positions
// [from, to): the token at that position, in K and V of every layer (a
// sliding layer's in the block's window slot).
func fill(s *Seq, from, to int, toks []int32) {
	p := s.pool
	for pos := from; pos < to; pos++ {
		at := s.Slot(pos)
		for l := range p.NLayers {
			k, v := at.K, at.V
			if p.Sliding(l) {
				k, v = at.SK, at.SV
			}
			for e := range p.KVDim {
				p.K[l][k+e*BlockSize] = uint16(toks[pos-from])
				p.V[l][v+e] = uint16(toks[pos-from])
			}
		}
	}
}

// check verifies that s's cache holds its tokens: every position in the
// layers that keep them all, the positions of the blocks whose window
// slots s holds in the sliding layers (a window and Slack at least).
func check(t *testing.T, s *Seq) {
	t.Helper()
	p := s.pool
	if p.Windowed() && s.slideFrom*BlockSize > p.windowStart(s.Len()) {
		t.Fatalf("sequence of %d positions holds window slots from block %d on only (window %d)", s.Len(), s.slideFrom, p.WindowSize())
	}
	for pos, tok := range s.tokens {
		at := s.Slot(pos)
		for l := range p.NLayers {
			k, v := at.K, at.V
			if p.Sliding(l) {
				if pos/BlockSize < s.slideFrom {
					continue
				}
				k, v = at.SK, at.SV
			}
			if kk, vv := p.K[l][k+(p.KVDim-1)*BlockSize], p.V[l][v]; kk != uint16(tok) || vv != uint16(tok) {
				t.Fatalf("position %d (block %d) layer %d holds K %d V %d, want token %d", pos, s.blocks[pos/BlockSize], l, kk, vv, tok)
			}
		}
	}
}

// extend appends toks to s as a forward pass would: reserve, write, commit.
func extend(s *Seq, toks []int32) error {
	if err := s.Reserve(len(toks)); err != nil {
		return err
	}
	fill(s, s.Len(), s.Len()+len(toks), toks)
	s.Commit(toks)
	return nil
}

// TestPoolRandom runs sequences through random appends, reuse, forks,
// truncations and frees against a small pool, checking after every
// operation that reference counts equal the holders, no block is held by
// a sequence and free at once, every sequence still reads its own tokens
// (copy on write and eviction never touch a held block), and at the end
// every block is back.
//
// The windowed pool's first layer slides (a window of 40 positions): its
// sequences also hold exactly the window slots of the blocks from
// slideFrom on, no slot is lost or held twice, and every sequence still
// reads its window.
func TestPoolRandom(t *testing.T) {
	for _, w := range []Window{{}, {Layers: []bool{true, false}, Size: 40, Slots: 16}} {
		t.Run(fmt.Sprintf("window%d", w.Size), func(t *testing.T) { poolRandom(t, w) })
	}
}

func poolRandom(t *testing.T, w Window) {
	rng := rand.New(rand.NewPCG(1, 2))
	p, err := NewWindowedPool(2, 3, 24, w)
	if err != nil {
		t.Fatal(err)
	}
	// Prompts share prefixes: tokens drawn from a tiny alphabet per block.
	prompt := func() []int32 {
		n := 1 + rng.IntN(5*BlockSize)
		toks := make([]int32, n)
		for i := range toks {
			toks[i] = int32(i/BlockSize*7 + rng.IntN(2)*(i%3))
		}
		// Half the prompts take one of two variants per block: they
		// share prefixes that reuse finds.
		if v := rng.IntN(4); v < 2 {
			for i := range toks {
				toks[i] = int32(i/BlockSize*7 + (i/BlockSize+v)%2*(i%3))
			}
		}
		return toks
	}
	var live []*Seq
	fulls, reused := 0, 0
	for step := range 4000 {
		switch op := rng.IntN(10); {
		case op < 3 || len(live) == 0: // a new sequence, reusing what it can
			s := p.NewSeq()
			toks := prompt()
			got := s.Reuse(toks)
			reused += got
			if got%BlockSize != 0 || got >= len(toks) && len(toks) > 0 {
				t.Fatalf("step %d: reused %d of %d tokens", step, got, len(toks))
			}
			for i := range got {
				if s.tokens[i] != toks[i] {
					t.Fatalf("step %d: reused block holds other tokens", step)
				}
			}
			if err := extend(s, toks[got:]); errors.Is(err, ErrFull) {
				fulls++
				s.Free()
				break
			} else if err != nil {
				t.Fatal(err)
			}
			live = append(live, s)
		case op < 6: // decode a few tokens
			s := live[rng.IntN(len(live))]
			toks := make([]int32, 1+rng.IntN(3))
			for i := range toks {
				toks[i] = int32(1000 + rng.IntN(50))
			}
			if err := extend(s, toks); errors.Is(err, ErrFull) {
				fulls++
			} else if err != nil {
				t.Fatal(err)
			}
		case op < 7: // fork
			live = append(live, live[rng.IntN(len(live))].Fork())
		case op < 8: // truncate
			s := live[rng.IntN(len(live))]
			s.Truncate(rng.IntN(s.Len() + 1))
		default: // free (finished or cancelled)
			i := rng.IntN(len(live))
			live[i].Free()
			live = append(live[:i], live[i+1:]...)
		}
		verify(t, p, live)
	}
	for _, s := range live {
		s.Free()
	}
	verify(t, p, nil)
	want := p.NBlocks
	if w.Slots > 0 {
		want = min(want, w.Slots)
	}
	if p.Used() != 0 || p.Available() != want {
		t.Fatalf("after freeing everything: %d blocks used, %d available of %d", p.Used(), p.Available(), p.NBlocks)
	}
	if fulls == 0 || reused == 0 {
		t.Errorf("the pool never ran full (%d) or never reused a prefix (%d): the test does not exercise eviction and reuse", fulls, reused)
	}
	t.Logf("%d reservations found the pool full; %d positions reused", fulls, reused)
}

func verify(t *testing.T, p *Pool, live []*Seq) {
	t.Helper()
	holders := make([]int32, p.NBlocks)
	for _, s := range live {
		for _, b := range s.blocks {
			holders[b]++
		}
		check(t, s)
	}
	free := map[int32]bool{}
	for _, b := range p.free {
		if free[b] {
			t.Fatalf("block %d is on the free list twice", b)
		}
		free[b] = true
	}
	lru := 0
	for b := p.cached.head; b >= 0; b = p.cached.next[b] {
		if free[b] {
			t.Fatalf("block %d is both free and cached", b)
		}
		free[b] = true
		lru++
	}
	if lru != p.cached.n {
		t.Fatalf("LRU list has %d blocks, count says %d", lru, p.cached.n)
	}
	if p.Windowed() {
		verifySlots(t, p, live)
	}
	for b := range p.meta {
		if p.meta[b].ref != holders[b] {
			t.Fatalf("block %d: reference count %d, held by %d sequences", b, p.meta[b].ref, holders[b])
		}
		if (holders[b] == 0) != free[int32(b)] {
			t.Fatalf("block %d: held by %d, free or cached %v (leaked or freed twice)", b, holders[b], free[int32(b)])
		}
	}
}

// verifySlots checks the window slots: each held as often as sequences
// hold it (a sequence holds the slots of its blocks from slideFrom on),
// attached to the block that names it, on exactly one of the free list,
// the LRU list (attached, held by none) or held; slot 0 never used.
func verifySlots(t *testing.T, p *Pool, live []*Seq) {
	t.Helper()
	w := &p.slots
	holders := make([]int32, len(w.ref))
	for _, s := range live {
		for i := s.slideFrom; i < len(s.blocks); i++ {
			sl := p.meta[s.blocks[i]].slot
			if sl <= 0 {
				t.Fatalf("block %d (index %d of a sequence) holds no window slot", s.blocks[i], i)
			}
			holders[sl]++
		}
	}
	seen := map[int32]string{}
	for _, sl := range w.free {
		if seen[sl] != "" || w.block[sl] != -1 || sl == 0 {
			t.Fatalf("slot %d free twice, or free and attached to block %d", sl, w.block[sl])
		}
		seen[sl] = "free"
	}
	n := 0
	for sl := w.cached.head; sl >= 0; sl = w.cached.next[sl] {
		if seen[sl] != "" || w.ref[sl] != 0 || w.block[sl] < 0 {
			t.Fatalf("slot %d on the LRU list: also %q, held %d, block %d", sl, seen[sl], w.ref[sl], w.block[sl])
		}
		seen[sl] = "lru"
		n++
	}
	if n != w.cached.n {
		t.Fatalf("slot LRU has %d, count says %d", n, w.cached.n)
	}
	for sl := 1; sl < len(w.ref); sl++ {
		if w.ref[sl] != holders[sl] {
			t.Fatalf("slot %d: held %d times, by %d sequences", sl, w.ref[sl], holders[sl])
		}
		if holders[sl] > 0 && seen[int32(sl)] != "" {
			t.Fatalf("slot %d held and %s", sl, seen[int32(sl)])
		}
		if holders[sl] == 0 && seen[int32(sl)] == "" {
			t.Fatalf("slot %d leaked: held by none, neither free nor cached", sl)
		}
		if b := w.block[sl]; b >= 0 && p.meta[b].slot != int32(sl) {
			t.Fatalf("slot %d names block %d, which names slot %d", sl, b, p.meta[b].slot)
		}
	}
}

// TestReuseAndCopyOnWrite: a second sequence with the same prefix reuses
// its full blocks (never the last token), a fork writing into a shared
// partial block copies it first, and cached blocks are evicted least
// recently used first.
func TestReuseAndCopyOnWrite(t *testing.T) {
	p, _ := NewPool(1, 2, 8)
	toks := make([]int32, 3*BlockSize+5)
	for i := range toks {
		toks[i] = int32(i)
	}
	a := p.NewSeq()
	if err := extend(a, toks); err != nil {
		t.Fatal(err)
	}
	b := p.NewSeq()
	if got := b.Reuse(toks); got != 3*BlockSize {
		t.Fatalf("reused %d positions, want %d", got, 3*BlockSize)
	}
	d := p.NewSeq()
	if got := d.Reuse(toks[:3*BlockSize]); got != 2*BlockSize {
		t.Fatalf("a prompt of exactly 3 blocks reused %d positions, want %d (its last token is computed)", got, 2*BlockSize)
	}
	d.Free()
	b.Free()
	// Fork a (partial last block shared), then both write: each copies or
	// keeps its own, and neither sees the other's token.
	f := a.Fork()
	tail := a.blocks[3]
	if err := extend(f, []int32{500}); err != nil {
		t.Fatal(err)
	}
	if err := extend(a, []int32{600}); err != nil {
		t.Fatal(err)
	}
	if f.blocks[3] == tail || a.blocks[3] != tail {
		t.Fatalf("copy on write: fork's block %d, original's %d (was %d)", f.blocks[3], a.blocks[3], tail)
	}
	check(t, a)
	check(t, f)
	if f.blocks[0] != a.blocks[0] {
		t.Fatal("full prompt blocks are not shared after a fork")
	}
	// LRU: free a and f; the first block to go is the one released first,
	// the prefix's last (sequences release their blocks last first).
	a.Free()
	f.Free()
	if p.Cached() != 3 || p.Used() != 0 {
		t.Fatalf("after free: %d cached, %d used", p.Cached(), p.Used())
	}
	c := p.NewSeq()
	if err := c.Reserve(6 * BlockSize); err != nil { // 5 free + 1 eviction
		t.Fatal(err)
	}
	if got := p.NewSeq().Reuse(toks); got != 2*BlockSize {
		t.Fatalf("reused %d positions after one eviction, want %d (the third block went)", got, 2*BlockSize)
	}
	if err := c.Reserve(9 * BlockSize); !errors.Is(err, ErrFull) {
		t.Fatalf("reserving past the pool: %v, want ErrFull", err)
	}
	if len(c.blocks) != 6 {
		t.Fatalf("a failed Reserve changed the table: %d blocks", len(c.blocks))
	}
}

// TestSlotStore: Slot, KRow and Store address the layout of the package
// comment (keys transposed within a block, values as rows), through a
// block table that is not in pool order, in every layer.
func TestSlotStore(t *testing.T) {
	const nLayers, kvd = 2, 3
	p, err := NewPool(nLayers, kvd, 8)
	if err != nil {
		t.Fatal(err)
	}
	other, s := p.NewSeq(), p.NewSeq()
	for i := range 3 { // interleave the two tables: s gets blocks 1, 3, 5
		if err := other.Reserve(BlockSize); err != nil {
			t.Fatal(err)
		}
		other.Commit(make([]int32, BlockSize))
		if err := s.Reserve(BlockSize - 5*i); err != nil {
			t.Fatal(err)
		}
		s.Commit(make([]int32, BlockSize-5*i))
	}
	for pos := range s.Len() {
		b, slot := int(s.Blocks()[pos/BlockSize]), pos%BlockSize
		at := s.Slot(pos)
		if want := (Slot{K: b*BlockSize*kvd + slot, V: (b*BlockSize + slot) * kvd}); at != want || s.Row(pos) != want.V {
			t.Fatalf("position %d: slot %+v, row %d, want %+v", pos, at, s.Row(pos), want)
		}
		if k := KRow(s.Blocks()[pos/BlockSize], kvd, 2) + slot; k != at.K+2*BlockSize {
			t.Fatalf("position %d: KRow gives element 2 at %d, want %d", pos, k, at.K+2*BlockSize)
		}
		for l := range nLayers {
			k := []float32{float32(pos), 0.5, float32(-l)}
			v := []float32{float32(l), float32(pos) + 0.25, 2}
			p.Store(l, at, k, v)
		}
	}
	for pos := range s.Len() {
		at := s.Slot(pos)
		for l := range nLayers {
			for e, want := range []float32{float32(pos), 0.5, float32(-l)} {
				if got := quant.F16ToF32(p.K[l][at.K+e*BlockSize]); got != want {
					t.Fatalf("layer %d position %d: key[%d] = %v, want %v", l, pos, e, got, want)
				}
			}
			for e, want := range []float32{float32(l), float32(pos) + 0.25, 2} {
				if got := quant.F16ToF32(p.V[l][at.V+e]); got != want {
					t.Fatalf("layer %d position %d: value[%d] = %v, want %v", l, pos, e, got, want)
				}
			}
		}
	}
}

// TestFreeReleasesReserved: blocks reserved for positions not yet
// committed return to the pool on Free — a sequence preempted between
// Reserve and its forward pass (the scheduler does this) held them, with
// no tokens or with some.
func TestFreeReleasesReserved(t *testing.T) {
	for _, w := range []Window{{}, {Layers: []bool{true, false}, Size: 40, Slots: 16}} {
		t.Run(fmt.Sprintf("window%d", w.Size), func(t *testing.T) {
			p, err := NewWindowedPool(2, 3, 24, w)
			if err != nil {
				t.Fatal(err)
			}
			avail := p.Available()
			for _, committed := range []int{0, 5, BlockSize, BlockSize + 3} {
				s := p.NewSeq()
				toks := make([]int32, committed)
				if err := extend(s, toks); err != nil {
					t.Fatal(err)
				}
				if err := s.Reserve(2*BlockSize + 1); err != nil {
					t.Fatal(err)
				}
				if p.Used() == 0 {
					t.Fatalf("%d committed: nothing used after Reserve", committed)
				}
				s.Free()
				if p.Used() != 0 || p.Available() != avail {
					t.Fatalf("%d committed + 65 reserved, then Free: %d blocks used, %d available (%d before)", committed, p.Used(), p.Available(), avail)
				}
			}
		})
	}
}
