package kvcache

import "fmt"

// Seq is one sequence's view of the pool: its block table and the tokens
// whose keys and values are stored, positions 0..Len()-1.
type Seq struct {
	pool   *Pool
	blocks []int32  // block of positions [i·B, (i+1)·B)
	tokens []int32  // token at each stored position
	hashes []uint64 // chain hash of each full, registered block (a prefix of blocks)
	freed  bool
	// shifted: the context was shifted (shift.go), so blocks it fills
	// from now on hold re-rotated keys and are not registered for reuse.
	shifted bool
	// slideFrom: the blocks before it no longer hold their window slots
	// (window.go); those from it on do.
	slideFrom int
	// salt is the chain's start (the first block's parent): sequences
	// whose keys and values differ for the same tokens (other LoRA
	// adapters) share no blocks.
	salt uint64
	// Recurrent state (state.go): the live slot, checkpoints being
	// written, and the block (+1) and slot of the latest checkpoint a
	// generation attached.
	state            int32
	pend             []ckptPending
	lastCk, lastSlot int32
}

// NewSeq starts an empty sequence.
func (p *Pool) NewSeq() *Seq { return &Seq{pool: p} }

// NewSeqSalted starts an empty sequence whose blocks are reused only by
// sequences of the same salt (0: NewSeq's): what else than the tokens
// decides their keys and values, such as the adapters applied.
func (p *Pool) NewSeqSalted(salt uint64) *Seq { return &Seq{pool: p, salt: salt} }

// Salt is the sequence's salt (NewSeqSalted).
func (s *Seq) Salt() uint64 { return s.salt }

// Len is the number of stored positions.
func (s *Seq) Len() int { return len(s.tokens) }

// Tokens are the stored positions' tokens (read-only).
func (s *Seq) Tokens() []int32 { return s.tokens }

// Blocks is the block table (read-only): position p is slot p % BlockSize of
// block Blocks()[p / BlockSize].
func (s *Seq) Blocks() []int32 { return s.blocks }

// Pool is the pool the sequence's blocks come from.
func (s *Seq) Pool() *Pool { return s.pool }

// Reuse attaches the longest run of cached full blocks that begins prompt,
// leaving at least its last token to compute (its logits are needed), and
// returns how many positions it covers. The sequence must be empty.
func (s *Seq) Reuse(prompt []int32) int {
	if len(s.tokens) != 0 || s.freed {
		return 0
	}
	parent := s.salt
	for i := 0; (i+1)*BlockSize < len(prompt); i++ {
		toks := prompt[i*BlockSize : (i+1)*BlockSize]
		b, h, ok := s.pool.lookup(parent, toks)
		if !ok {
			break
		}
		s.pool.retain(b)
		s.blocks = append(s.blocks, b)
		s.hashes = append(s.hashes, h)
		s.tokens = append(s.tokens, toks...)
		parent = h
	}
	if s.pool.Recurrent() { // resume where a state is stored
		s.resume(len(s.tokens))
	}
	if s.pool.Windowed() {
		// Resume where the sliding layers' window is still stored.
		s.slideFrom = len(s.blocks)
		n := len(s.tokens)
		for n > 0 && !s.windowStored(n) {
			n -= BlockSize
		}
		s.cut(n)
		s.rewind(n)
	}
	return len(s.tokens)
}

// PendingHashes returns the chain hashes of the full blocks of tokens (which
// extend what s holds) that s has not stored yet: the blocks its prompt
// will register, which a sequence with the same prefix can wait for.
func (s *Seq) PendingHashes(tokens []int32) []uint64 {
	var out []uint64
	parent := s.salt
	if n := len(s.hashes); n > 0 {
		parent = s.hashes[n-1]
	}
	for i := len(s.hashes); (i+1)*BlockSize <= len(tokens); i++ {
		parent = chainHash(parent, tokens[i*BlockSize:(i+1)*BlockSize])
		out = append(out, parent)
	}
	return out
}

// Need is the number of blocks Reserve(n) takes from the pool.
func (s *Seq) Need(n int) int {
	k := BlocksFor(len(s.tokens)+n) - len(s.blocks)
	if n > 0 && len(s.tokens)%BlockSize != 0 && s.sharedTail() {
		k++ // the partial last block is copied before it is written
	}
	return k
}

// sharedTail reports whether the block holding the next position is shared
// or registered, so writing into it needs a private copy.
func (s *Seq) sharedTail() bool {
	i := len(s.tokens) / BlockSize
	if i >= len(s.blocks) {
		return false
	}
	m := &s.pool.meta[s.blocks[i]]
	return m.ref > 1 || m.hashed
}

// Reserve makes positions Len()..Len()+n-1 writable: blocks are added, and a
// shared partial last block is copied (copy on write). It returns ErrFull,
// changing nothing, when the pool cannot supply them.
func (s *Seq) Reserve(n int) error {
	if s.freed {
		return fmt.Errorf("kvcache: sequence used after Free")
	}
	if n <= 0 {
		return nil
	}
	if err := s.ensureState(); err != nil {
		return err
	}
	s.slide()
	if s.Need(n) > s.pool.Available() {
		return ErrFull
	}
	if len(s.tokens)%BlockSize != 0 && s.sharedTail() {
		i := len(s.tokens) / BlockSize
		old := s.blocks[i]
		nb := s.pool.alloc()
		s.pool.copyBlock(nb, old)
		if s.pool.Windowed() && i >= s.slideFrom {
			s.pool.releaseSlot(old)
		}
		s.pool.release(old)
		s.blocks[i] = nb
	}
	for len(s.blocks) < BlocksFor(len(s.tokens)+n) {
		s.blocks = append(s.blocks, s.pool.alloc())
	}
	return nil
}

// Commit records that the forward pass stored tokens at positions
// Len()..Len()+len(tokens)-1 (reserved before), and registers the blocks
// that became full for reuse by later sequences.
func (s *Seq) Commit(tokens []int32) {
	s.tokens = append(s.tokens, tokens...)
	for !s.shifted && (len(s.hashes)+1)*BlockSize <= len(s.tokens) {
		i := len(s.hashes)
		parent := s.salt
		if i > 0 {
			parent = s.hashes[i-1]
		}
		toks := s.tokens[i*BlockSize : (i+1)*BlockSize]
		h := chainHash(parent, toks)
		s.pool.register(s.blocks[i], parent, h, toks)
		s.hashes = append(s.hashes, h)
	}
	if len(s.pend) > 0 {
		s.attachPending(len(tokens) == 1)
	}
}

// Fork returns a new sequence sharing every block of s (the partial last
// one too: whichever writes into it first copies it).
func (s *Seq) Fork() *Seq {
	f := &Seq{pool: s.pool,
		blocks:    append([]int32(nil), s.blocks...),
		tokens:    append([]int32(nil), s.tokens...),
		hashes:    append([]uint64(nil), s.hashes...),
		slideFrom: s.slideFrom, salt: s.salt}
	for i, b := range f.blocks {
		s.pool.retain(b)
		if s.pool.Windowed() && i >= s.slideFrom {
			s.pool.retainSlot(b)
		}
	}
	s.forkState(f)
	return f
}

// Truncate drops positions from n on, returning whole blocks past it. With
// sliding-window layers it may keep fewer: as many as leave the window of
// the next position stored (window.go); Len() says how many.
func (s *Seq) Truncate(n int) {
	if n >= len(s.tokens) {
		return
	}
	n = max(n, 0)
	if s.pool.Recurrent() { // back to a stored state
		s.resume(n)
		return
	}
	if s.pool.Windowed() {
		for n > 0 && !s.windowStored(n) {
			n = (n - 1) / BlockSize * BlockSize // the block boundary before
		}
	}
	s.cut(n)
	if s.pool.Windowed() {
		s.rewind(n)
	}
}

// cut drops positions from n on, and the blocks reserved past them.
func (s *Seq) cut(n int) {
	n = min(n, len(s.tokens))
	if n == len(s.tokens) && BlocksFor(n) >= len(s.blocks) {
		return
	}
	s.tokens = s.tokens[:n]
	s.hashes = s.hashes[:min(len(s.hashes), n/BlockSize)]
	keep := BlocksFor(n)
	// Last block first: the LRU then evicts a prefix's deepest blocks
	// before its first ones, which every longer prefix needs.
	for i := len(s.blocks) - 1; i >= keep; i-- {
		if s.pool.Windowed() && i >= s.slideFrom {
			s.pool.releaseSlot(s.blocks[i])
		}
		s.pool.release(s.blocks[i])
	}
	s.blocks = s.blocks[:keep]
	s.slideFrom = min(s.slideFrom, keep)
}

// Free returns every block to the pool; full registered blocks stay cached
// for reuse until evicted. The sequence is unusable afterwards.
func (s *Seq) Free() {
	if s.freed {
		return
	}
	if s.pool.Recurrent() {
		s.dropPending()
		s.cut(0)
		s.freeStates()
	} else {
		// cut, not Truncate: blocks reserved for positions not yet
		// committed go back too (a sequence preempted between Reserve and
		// its forward pass holds nothing else).
		s.cut(0)
		if s.pool.Windowed() {
			s.rewind(0)
		}
	}
	s.freed = true
}

// Slot locates one position in a layer's K and V arrays (word indices;
// the same in every layer that keeps every position; SK and SV in the
// sliding layers' arrays of a windowed pool), in the layout of the package
// comment:
//
//	K[l][K + e·BlockSize]   element e of an F16 key (transposed within its block)
//	K[l][K − K%BlockSize …] the column block holding a Q8_0 key (slot K%BlockSize)
//	K[l][K …]               the key's row (another type)
//	V[l][V …]               the value's row
type Slot struct{ K, V, SK, SV int }

// Slot is where position p lives: block b = Blocks()[p/BlockSize], slot
// i = p%BlockSize, K = b·BlockSize·KVDim + i (F16) or (b·BlockSize +
// i)·KWords, V = (b·BlockSize + i)·VWords (and likewise with the block's
// window slot for SK and SV). The position must be reserved.
func (s *Seq) Slot(p int) Slot {
	b, i := s.blocks[p/BlockSize], p%BlockSize
	at := Slot{K: s.pool.kAt(b, i), V: (int(b)*BlockSize + i) * s.pool.VWords}
	if s.pool.Windowed() {
		w := s.WindowSlot(p / BlockSize)
		at.SK, at.SV = s.pool.kAt(w, i), (int(w)*BlockSize+i)*s.pool.VWords
	}
	return at
}

// kAt is where slot i of block b's key starts in a layer's K array: for
// keys laid out per block (F16, Q8_0) the block's start plus i, so that
// the slot is the word index modulo BlockSize.
func (p *Pool) kAt(b int32, i int) int {
	if inBlock(p.Types.K) {
		return int(b)*BlockSize*p.KWords + i
	}
	return (int(b)*BlockSize + i) * p.KWords
}

// WindowRow is the start of position p's V row in a sliding layer's V
// array: the zero slot's row for a position the sequence has let go.
func (s *Seq) WindowRow(p int) int {
	return (int(s.WindowSlot(p/BlockSize))*BlockSize + p%BlockSize) * s.pool.VWords
}

// Row is the start of position p's V row in a layer's V array (elements):
// Slot(p).V.
func (s *Seq) Row(p int) int { return s.Slot(p).V }
