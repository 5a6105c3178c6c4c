package kvcache

import (
	"errors"
	"fmt"

	"github.com/loom-inference/loom/internal/kernels"
)

// Context shift (llama.cpp's --context-shift): a sequence that filled its
// context drops positions [keep, keep+d) and the positions after them move
// d back. The caller re-rotates the moved keys (their RoPE angle depends
// on the position: Pool.Key and Pool.SetKey read and write them).

// ErrNoShift is returned for a pool whose sequences cannot shift: a
// recurrent state or a sliding window's slots do not move with positions.
var ErrNoShift = errors.New("kvcache: a model with recurrent layers or a kept-apart sliding window cannot shift its context")

// Shift drops positions [keep, keep+d) and moves the ones after them to
// keep on, in every layer's K and V. The blocks from keep's on become the
// sequence's own (a shared or registered one is copied or withdrawn from
// the prefix index first) and are never registered again: their keys are
// re-rotated, not computed for those positions. It returns ErrFull,
// changing nothing, when the copies need more blocks than are free.
func (s *Seq) Shift(keep, d int) error {
	p := s.pool
	n := len(s.tokens)
	switch {
	case p.Recurrent() || p.Windowed():
		return ErrNoShift
	case keep < 0 || d <= 0 || keep+d > n:
		return fmt.Errorf("kvcache: shift of %d positions after %d in a sequence of %d", d, keep, n)
	}
	first, last := keep/BlockSize, BlocksFor(n-d)
	copies := 0
	for i := first; i < last; i++ {
		if p.meta[s.blocks[i]].ref > 1 {
			copies++
		}
	}
	if copies > p.Available() {
		return ErrFull
	}
	for i := first; i < last; i++ {
		b := s.blocks[i]
		switch m := &p.meta[b]; {
		case m.ref > 1:
			nb := p.alloc()
			p.copyBlock(nb, b)
			p.release(b)
			s.blocks[i] = nb
		case m.hashed:
			p.unhash(b)
		}
	}
	for l := range p.NLayers {
		if p.noKV(l) {
			continue
		}
		for q := keep; q < n-d; q++ {
			p.moveRow(l, s.blocks, q, q+d)
		}
	}
	s.tokens = append(s.tokens[:keep], s.tokens[keep+d:]...)
	s.hashes = s.hashes[:min(len(s.hashes), first)]
	for i := len(s.blocks) - 1; i >= last; i-- {
		p.release(s.blocks[i])
	}
	s.blocks = s.blocks[:last]
	s.shifted = true
	return nil
}

// moveRow copies position src's key and value of layer l to position dst
// of the same sequence (blocks is its table).
func (p *Pool) moveRow(l int, blocks []int32, dst, src int) {
	db, ds := blocks[dst/BlockSize], dst%BlockSize
	sb, ss := blocks[src/BlockSize], src%BlockSize
	vd, vs := (int(db)*BlockSize+ds)*p.VWords, (int(sb)*BlockSize+ss)*p.VWords
	copy(p.V[l][vd:vd+p.VWords], p.V[l][vs:vs+p.VWords])
	kd, ks := p.kAt(db, ds), p.kAt(sb, ss)
	if Columns(p.Types.K) {
		row := Bytes(p.keyRow(p.KWords))
		src, i := colBlock(p.K[l], ks, p.KWords)
		kernels.GetQ8Col(row, src, i)
		dst, j := colBlock(p.K[l], kd, p.KWords)
		kernels.PutQ8Col(dst, j, row)
		return
	}
	if !Transposed(p.Types.K) {
		copy(p.K[l][kd:kd+p.KWords], p.K[l][ks:ks+p.KWords])
		return
	}
	k := p.K[l]
	for e := range p.KVDim {
		k[kd+e*BlockSize] = k[ks+e*BlockSize]
	}
}

// Key reads the key of layer l at slot at into k ([len(k)] elements, as
// stored: F16, BF16 or dequantized).
func (p *Pool) Key(l int, at Slot, k []float32) {
	if Transposed(p.Types.K) {
		ks := p.K[l][at.K:]
		for e := range k {
			k[e] = f16(ks[e*BlockSize])
		}
		return
	}
	n := words(p.Types.K, len(k))
	row := Bytes(p.K[l][at.K : at.K+n])
	if Columns(p.Types.K) {
		row = Bytes(p.keyRow(n))
		blk, i := colBlock(p.K[l], at.K, p.KWords)
		kernels.GetQ8Col(row, blk, i)
	}
	if err := dequantRow(p.Types.K, k, row); err != nil {
		panic(err) // types were checked when the pool was made
	}
}

// SetKey stores k as the key of layer l at slot at (converted as Store
// converts it).
func (p *Pool) SetKey(l int, at Slot, k []float32) {
	if !Transposed(p.Types.K) {
		p.storeKey(l, at.K, k)
		return
	}
	if len(p.kRow) < len(k) {
		p.kRow = make([]uint16, len(k))
	}
	storeRow(p.Types.K, p.kRow, k)
	ks := p.K[l][at.K:]
	for e, h := range p.kRow[:len(k)] {
		ks[e*BlockSize] = h
	}
}
