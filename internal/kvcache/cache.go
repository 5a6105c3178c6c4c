// Package kvcache stores the keys and values of past positions in F16
// (llama.cpp's default cache type, which the references use) or another
// type (Types: BF16, F32, Q8_0, Q4_0), in fixed-size
// blocks of positions handed out from one pool: a sequence holds a table of
// blocks, so many sequences share one memory budget, nothing is reserved
// per sequence for the whole context, and blocks holding the same tokens
// (a shared system prompt, a forked prompt) are stored once.
//
// Layout, per layer and block b (BlockSize = B positions, KVDim = kvd):
//
//	K[l][b·B·kvd + e·B + s]   element e of the key at slot s (transposed
//	                          within the block: the scores of one query
//	                          against B positions are contiguous loads)
//	V[l][(b·B + s)·kvd + e]   element e of the value at slot s
//
// in uint16 words (F16 bits). A key of another type is a row like the
// value, K[l][(b·B + s)·KWords …] — except Q8_0 keys, which a block holds
// in columns, K[l][b·B·KWords …] (kernels.PutQ8Col) — and a value of
// another type takes VWords words per position: ggml's blocks of that type
// along the row.
//
// The attention kernels follow a sequence's logical positions through the
// block table, so a paged sequence sums in exactly the order a contiguous
// cache would (see kernels.MixF16).
package kvcache

import (
	"errors"
	"fmt"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/kernels"
)

// BlockSize is the number of positions in a block. 32 is llama.cpp's padding
// of the cache view (a sequence's attention then never reads a block it does
// not hold) and two of the attention kernels' 16-column tiles; small enough
// that a shared prefix is reused to within 31 tokens.
const BlockSize = 32

// ErrFull is returned when the pool has no free or evictable block left.
var ErrFull = errors.New("kvcache: no free blocks")

// block is a pool entry's bookkeeping.
type block struct {
	ref    int32 // sequences holding the block
	hashed bool  // registered in the prefix index (full and immutable)
	hash   uint64
	parent uint64 // hash of the block before it (the sequence's salt for the first)
	tokens [BlockSize]int32
	slot   int32 // the window slot holding its sliding layers (0: none; window.go)
	ckpt   int32 // the state slot holding the recurrent state after it (0: none; state.go)
}

// Pool is the memory of every sequence's cache. It is not safe for
// concurrent use: one scheduler (or one caller) owns it.
type Pool struct {
	NLayers, KVDim, NBlocks int
	K, V                    [][]uint16 // [layer][NBlocks·BlockSize·KWords or VWords] words
	// Types of the keys and values, and the words one position's key and
	// value take (KVDim for F16).
	Types          Types
	KWords, VWords int

	meta   []block
	free   []int32 // blocks with ref 0 and no hash
	cached lru     // blocks with ref 0 and a hash, least recently released first (evicted first)
	byHash map[uint64]int32

	kRow []uint16 // Store's scratch: a key converted to F16 before its column scatter

	// Private keeps every block to its sequence: nothing is registered
	// for prefix reuse (a bidirectional model's keys and values depend on
	// the tokens after them, so no other sequence may reuse them).
	Private bool

	win   Window    // sliding-window layers (window.go)
	slots slotState // their slots

	// S holds the recurrent layers' states (state.go):
	// [layer][slot·Elems[layer] + e], F32; nil for the other layers.
	S   [][]float32
	rec stateSlots
}

// NewPool allocates a pool of nBlocks blocks. The memory is committed by the
// OS only as blocks are first written.
func NewPool(nLayers, kvDim, nBlocks int) (*Pool, error) {
	return NewWindowedPool(nLayers, kvDim, nBlocks, Window{})
}

// NewWindowedPool is NewPool for a model with sliding-window layers: those
// of w.Layers keep only their window, in w.Slots slots of their own
// (window.go); w.Slots = 0 keeps every position of every layer.
func NewWindowedPool(nLayers, kvDim, nBlocks int, w Window) (*Pool, error) {
	return NewTypedPool(nLayers, kvDim, nBlocks, w, DefaultTypes)
}

// NewTypedPool is NewWindowedPool with keys and values of types t (their
// blocks must divide every layer's head width: Types.Check, which the
// caller runs per layer; here the row).
func NewTypedPool(nLayers, kvDim, nBlocks int, w Window, t Types) (*Pool, error) {
	if nLayers <= 0 || kvDim <= 0 || nBlocks <= 0 {
		return nil, fmt.Errorf("kvcache: pool of %d blocks, %d layers, %d KV dims", nBlocks, nLayers, kvDim)
	}
	if err := t.Check(kvDim); err != nil {
		return nil, err
	}
	kw, vw := words(t.K, kvDim), words(t.V, kvDim)
	per := nBlocks * BlockSize * max(kw, vw)
	if per > 1<<31-1 || w.Slots >= nBlocks && w.Slots > 0 {
		return nil, fmt.Errorf("kvcache: %d blocks (%d window slots) of %d KV dims exceed a layer's 2³¹-element limit or the blocks", nBlocks, w.Slots, kvDim)
	}
	if w.Slots > 0 && (len(w.Layers) != nLayers || w.Size <= 0) || w.NoKV != nil && len(w.NoKV) != nLayers {
		return nil, fmt.Errorf("kvcache: window of %d positions over %d of %d layers (%d without KV)", w.Size, len(w.Layers), nLayers, len(w.NoKV))
	}
	if w.Slots <= 0 {
		w = Window{NoKV: w.NoKV}
	}
	p := &Pool{NLayers: nLayers, KVDim: kvDim, NBlocks: nBlocks, cached: newLRU(nBlocks),
		meta: make([]block, nBlocks), byHash: map[uint64]int32{}, win: w,
		Types: t, KWords: kw, VWords: vw}
	if w.Slots > 0 {
		p.slots.init(w.Slots)
	}
	for l := range nLayers {
		n := nBlocks
		switch {
		case p.noKV(l):
			n = 0
		case p.Sliding(l):
			n = w.Slots + 1
		}
		p.K = append(p.K, make([]uint16, n*BlockSize*kw))
		p.V = append(p.V, make([]uint16, n*BlockSize*vw))
		hugepage.Advise(p.K[l])
		hugepage.Advise(p.V[l])
	}
	p.free = make([]int32, nBlocks)
	for i := range p.free {
		p.free[i] = int32(nBlocks - 1 - i) // pop order 0, 1, 2, …
	}
	return p, nil
}

// KRow is where, in a layer's K array, block b's keys for element e begin:
// BlockSize contiguous values, one per slot (element e+j's are j·BlockSize
// further on). kvDim is the pool's KVDim.
func KRow(b int32, kvDim, e int) int { return (int(b)*kvDim + e) * BlockSize }

// Store writes one position's key k and value v of layer l at slot at
// (from Seq.Slot), converted to the pool's types; an F16 key goes down its
// block's column, anything else along its row. They hold KVDim elements,
// or fewer for a layer narrower than the widest (the first len(k) of the
// row).
func (p *Pool) Store(l int, at Slot, k, v []float32) {
	kvd := len(k)
	if p.Sliding(l) {
		at.K, at.V = at.SK, at.SV
	}
	storeRow(p.Types.V, p.V[l][at.V:], v[:kvd])
	if !Transposed(p.Types.K) {
		p.storeKey(l, at.K, k)
		return
	}
	// The key goes down a column: converted in a row first (vectorized),
	// then scattered.
	if len(p.kRow) < kvd {
		p.kRow = make([]uint16, kvd)
	}
	kernels.F32ToF16s(p.kRow[:kvd], k)
	ks := p.K[l][at.K:]
	for e, h := range p.kRow[:kvd] {
		ks[e*BlockSize] = h
	}
}

// storeKey writes k as the key at word at of layer l's K array, a row or
// (Q8_0) a slot of its column block: quantized in a row first.
func (p *Pool) storeKey(l, at int, k []float32) {
	if !Columns(p.Types.K) {
		storeRow(p.Types.K, p.K[l][at:], k)
		return
	}
	row := p.keyRow(words(p.Types.K, len(k)))
	storeRow(p.Types.K, row, k)
	blk, i := colBlock(p.K[l], at, p.KWords)
	kernels.PutQ8Col(blk, i, Bytes(row))
}

// keyRow is Store's scratch row of n words (a key before its column
// scatter, or one gathered from its columns).
func (p *Pool) keyRow(n int) []uint16 {
	if len(p.kRow) < n {
		p.kRow = make([]uint16, max(n, p.KWords))
	}
	return p.kRow[:n]
}

// BlocksFor is the number of blocks that hold n positions.
func BlocksFor(n int) int { return (n + BlockSize - 1) / BlockSize }

// BytesPerToken is the cache memory one position takes over all layers
// that keep every position (the sliding layers' take WindowBytes per
// sequence instead, when the pool keeps only their window).
func (p *Pool) BytesPerToken() int { return p.fullLayers() * (p.KWords + p.VWords) * 2 }

// noKV reports whether layer l stores nothing of its own.
func (p *Pool) noKV(l int) bool { return p.win.NoKV != nil && p.win.NoKV[l] }

// fullLayers counts the layers that keep every position.
func (p *Pool) fullLayers() int {
	n := 0
	for l := range p.NLayers {
		if !p.noKV(l) && !p.Sliding(l) {
			n++
		}
	}
	return n
}

// WindowBytes is the most memory the sliding layers take for one
// sequence: its window, Slack and a ubatch of n tokens, in whole slots.
func (p *Pool) WindowBytes(n int) int64 {
	if !p.Windowed() {
		return 0
	}
	return int64(BlocksFor(p.win.Size+Slack+n)+1) * BlockSize * int64(p.slidingLayers()*(p.KWords+p.VWords)*2)
}

func (p *Pool) slidingLayers() int {
	n := 0
	for l := range p.NLayers {
		if p.Sliding(l) && !p.noKV(l) {
			n++
		}
	}
	return n
}

// Bytes is the memory of the K and V arrays and the recurrent states.
func (p *Pool) Bytes() int64 {
	var n int64
	for l := range p.NLayers {
		n += 2 * int64(len(p.K[l])+len(p.V[l]))
	}
	for _, st := range p.S {
		n += 4 * int64(len(st))
	}
	return n
}

// Available is the number of blocks that can be handed out now: free ones
// and cached ones no sequence holds (evicted on demand).
func (p *Pool) Available() int {
	n := len(p.free) + p.cached.n
	if p.Windowed() { // every new block takes a window slot too
		n = min(n, p.slots.available())
	}
	return n
}

// Used is the number of blocks held by at least one sequence.
func (p *Pool) Used() int { return p.NBlocks - len(p.free) - p.cached.n }

// Cached is the number of blocks no sequence holds that keep their tokens
// for reuse.
func (p *Pool) Cached() int { return p.cached.n }

// Refs returns the reference count of every block (for tests and metrics).
func (p *Pool) Refs() []int32 {
	r := make([]int32, p.NBlocks)
	for i := range p.meta {
		r[i] = p.meta[i].ref
	}
	return r
}

// DropCached returns every cached block no sequence holds to the free list.
func (p *Pool) DropCached() {
	for p.cached.head >= 0 {
		b := p.cached.head
		p.cached.remove(b)
		p.unhash(b)
		p.detachSlot(b)
		p.detachCkpt(b)
		p.free = append(p.free, b)
	}
	for w := &p.slots; p.Windowed() && w.cached.head >= 0; {
		p.detachSlot(w.block[w.cached.head])
	}
}

// alloc takes a free block, evicting the least recently used cached one if
// none is free. The caller has checked Available.
func (p *Pool) alloc() int32 {
	var b int32
	if n := len(p.free); n > 0 {
		b = p.free[n-1]
		p.free = p.free[:n-1]
	} else {
		b = p.cached.head
		p.cached.remove(b)
		p.unhash(b)
		p.detachSlot(b)
		p.detachCkpt(b)
	}
	p.meta[b].ref = 1
	if p.Windowed() {
		p.attachSlot(b)
	}
	return b
}

func (p *Pool) retain(b int32) {
	m := &p.meta[b]
	if m.ref == 0 && m.hashed {
		p.cached.remove(b)
	}
	m.ref++
}

func (p *Pool) release(b int32) {
	m := &p.meta[b]
	if m.ref <= 0 {
		panic(fmt.Sprintf("kvcache: block %d released with reference count %d", b, m.ref))
	}
	m.ref--
	if m.ref > 0 {
		return
	}
	if m.hashed {
		p.cached.push(b)
	} else {
		p.detachSlot(b)
		p.free = append(p.free, b)
	}
}

func (p *Pool) unhash(b int32) {
	m := &p.meta[b]
	if m.hashed && p.byHash[m.hash] == b {
		delete(p.byHash, m.hash)
	}
	m.hashed = false
}

// copyBlock copies every layer's K and V of block src into dst (the
// sliding layers' from slot to slot).
func (p *Pool) copyBlock(dst, src int32) {
	if p.Windowed() {
		p.copySlot(p.meta[dst].slot, p.meta[src].slot)
	}
	for l := range p.NLayers {
		if p.Sliding(l) || p.noKV(l) {
			continue
		}
		p.copyLayerBlock(l, dst, src)
	}
}

// copyLayerBlock copies layer l's K and V of block (or window slot) src
// into dst.
func (p *Pool) copyLayerBlock(l int, dst, src int32) {
	k, v := BlockSize*p.KWords, BlockSize*p.VWords
	copy(p.K[l][int(dst)*k:int(dst+1)*k], p.K[l][int(src)*k:int(src+1)*k])
	copy(p.V[l][int(dst)*v:int(dst+1)*v], p.V[l][int(src)*v:int(src+1)*v])
}

// chainHash identifies a full block by its tokens and everything before it
// (parent is the previous block's hash). Lookups compare the stored tokens
// and parent too, so a hash collision can only cost a miss, never a wrong
// reuse.
func chainHash(parent uint64, tokens []int32) uint64 {
	h := parent ^ 0x9e3779b97f4a7c15
	for _, t := range tokens {
		h ^= uint64(uint32(t))
		h *= 0x100000001b3
		h ^= h >> 29
	}
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 32
	if h == 0 {
		h = 1
	}
	return h
}

// lookup finds a cached block holding tokens after parent.
func (p *Pool) lookup(parent uint64, tokens []int32) (int32, uint64, bool) {
	h := chainHash(parent, tokens)
	b, ok := p.byHash[h]
	if !ok {
		return 0, h, false
	}
	m := &p.meta[b]
	if m.parent != parent || [BlockSize]int32(tokens) != m.tokens {
		return 0, h, false
	}
	return b, h, true
}

// register records full block b (holding tokens after parent) in the prefix
// index, unless an identical block is already there.
func (p *Pool) register(b int32, parent, h uint64, tokens []int32) {
	if _, ok := p.byHash[h]; ok || p.Private {
		return
	}
	m := &p.meta[b]
	m.hashed, m.hash, m.parent = true, h, parent
	m.tokens = [BlockSize]int32(tokens)
	p.byHash[h] = b
}
