package grammar

import (
	"bytes"
	"fmt"
	"slices"
)

// Index is a vocabulary laid out for mask computation: every token's bytes
// in one byte trie, stored depth-first so that a walk is a forward scan
// that jumps over a subtree as soon as its prefix is refused. Build it
// once per vocabulary; it is immutable and may be shared.
type Index struct {
	nodes  []node
	toks   []int32 // tokens ending at each node, grouped (node.tok..node.tok+node.ntok)
	eog    []int32
	pieces [][]byte
	size   int // vocabulary size
	maxLen int
}

type node struct {
	b     byte
	depth uint16 // 1 for a token's first byte
	ntok  uint16
	skip  int32 // index of the next node outside this subtree
	tok   int32
}

// NewIndex indexes a vocabulary: pieces[id] is the text token id stands
// for (nil or empty: never allowed by a grammar, e.g. control tokens);
// eog lists the end-of-generation tokens, allowed only where the grammar
// may end.
func NewIndex(pieces [][]byte, eog []int32) *Index {
	ix := &Index{pieces: pieces, size: len(pieces), eog: slices.Clone(eog)}
	isEOG := map[int32]bool{}
	for _, t := range eog {
		isEOG[t] = true
	}
	var ids []int32
	for id, p := range pieces {
		if len(p) == 0 || len(p) > 0xFFFF || isEOG[int32(id)] {
			continue
		}
		ids = append(ids, int32(id))
		ix.maxLen = max(ix.maxLen, len(p))
	}
	slices.SortStableFunc(ids, func(a, b int32) int { return bytes.Compare(pieces[a], pieces[b]) })
	var open []int32 // node index per depth-1 of the current path
	var prev []byte
	for _, id := range ids {
		p := pieces[id]
		l := 0
		for l < len(prev) && l < len(p) && prev[l] == p[l] {
			l++
		}
		for len(open) > l { // close nodes past the common prefix
			ix.nodes[open[len(open)-1]].skip = int32(len(ix.nodes))
			open = open[:len(open)-1]
		}
		for d := l; d < len(p); d++ {
			open = append(open, int32(len(ix.nodes)))
			ix.nodes = append(ix.nodes, node{b: p[d], depth: uint16(d + 1), tok: -1})
		}
		n := &ix.nodes[open[len(p)-1]]
		if n.ntok == 0 {
			n.tok = int32(len(ix.toks))
		}
		n.ntok++
		ix.toks = append(ix.toks, id)
		prev = p
	}
	for _, o := range open {
		ix.nodes[o].skip = int32(len(ix.nodes))
	}
	return ix
}

// Nodes is the number of trie nodes (the most a mask walk visits).
func (ix *Index) Nodes() int { return len(ix.nodes) }

// Size is the vocabulary size (the mask's length in bits).
func (ix *Index) Size() int { return ix.size }

// Matcher follows one generation through a grammar. Not safe for
// concurrent use. Its work and memory are bounded by the grammar's Limits:
// input that would exceed a per-step limit (MaxStacks, MaxStackDepth,
// MaxStepWork) is refused like input the grammar refuses, with a
// *LimitError from Accept and its tokens left out of masks; a call that
// runs out of MaxCallWork or MaxMemory fails as a whole (Err).
type Matcher struct {
	g     *Grammar
	m     *machine
	st    cursor
	err   error               // the start's limit, if any (see Err)
	mErr  error               // the last Mask's, if any
	masks map[cursor][]uint64 // cursor → token mask (cached)
	walk  []cursor
	// MaskCacheLimit bounds the cached masks (default 256); states past it
	// are computed again when revisited.
	MaskCacheLimit int
}

// NewMatcher starts matching at the beginning of the grammar.
func (g *Grammar) NewMatcher() *Matcher {
	mt := &Matcher{g: g, m: newMachine(g), masks: map[cursor][]uint64{}, MaskCacheLimit: 256}
	mt.st, mt.err = mt.m.initial(g.root)
	return mt
}

// Reset returns the matcher to the beginning, keeping what it has cached
// (a matcher reused for the same grammar answers faster).
func (mt *Matcher) Reset() {
	mt.rebaseIfLarge()
	mt.m.begin()
	mt.st, mt.err = mt.m.initial(mt.g.root)
	mt.mErr = nil
}

// Err reports the limit that made the matcher fail: the last Mask ran
// out of MaxCallWork or MaxMemory (its mask was empty), or the grammar's
// start exceeds a limit (nothing is then allowed). Nil otherwise.
func (mt *Matcher) Err() error {
	if mt.mErr != nil {
		return mt.mErr
	}
	return mt.err
}

// Stats reports the matcher's interned frames, stack sets, automaton
// non-ASCII transitions and cached masks.
func (mt *Matcher) Stats() (frames, sets, wide, masks int) {
	return len(mt.m.frames), len(mt.m.sets), len(mt.m.wide), len(mt.masks)
}

// Mem estimates the bytes the matcher's caches hold: the automaton's (what
// Limits.MaxMemory bounds) and the cached token masks.
func (mt *Matcher) Mem() int {
	n := mt.m.mem
	for _, mk := range mt.masks {
		n += 8*len(mk) + 64
	}
	return n
}

// Grammar returns the grammar being matched.
func (mt *Matcher) Grammar() *Grammar { return mt.g }

// Complete reports whether the input so far is a whole sentence of the
// grammar.
func (mt *Matcher) Complete() bool { return mt.m.complete(mt.st) }

// Final reports whether the input is complete and nothing can follow.
func (mt *Matcher) Final() bool { return mt.m.final(mt.st) }

// Accept advances over bytes; on a byte the grammar refuses it returns an
// error (a *LimitError when a limit refused it) and leaves the state
// unchanged.
func (mt *Matcher) Accept(b []byte) error {
	mt.rebaseIfLarge()
	mt.m.begin()
	st, i := mt.m.feedAll(mt.st, b)
	if i < len(b) {
		var le error
		if mt.m.err != nil {
			le = mt.m.err
		} else if mt.err != nil {
			le = mt.err // the start was over a limit: nothing continues it
		}
		if le != nil {
			return fmt.Errorf("grammar: byte %d (%q) of %s: %w", i, b[i], quoteShort(b), le)
		}
		return fmt.Errorf("grammar: byte %d (%q) of %s does not continue the grammar", i, b[i], quoteShort(b))
	}
	mt.st = st
	return nil
}

// quoteShort quotes b for an error message, cut to 64 bytes.
func quoteShort(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q… (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// Match reports whether s as a whole is a sentence of the grammar.
func (g *Grammar) Match(s string) bool {
	mt := g.NewMatcher()
	return mt.Accept([]byte(s)) == nil && mt.Complete()
}

// AcceptToken advances over token id's bytes (or, for an end-of-generation
// token, checks that the grammar may end).
func (mt *Matcher) AcceptToken(ix *Index, id int32) error {
	if slices.Contains(ix.eog, id) {
		if !mt.Complete() {
			return fmt.Errorf("grammar: end of generation before the grammar is complete")
		}
		return nil
	}
	if id < 0 || int(id) >= len(ix.pieces) || len(ix.pieces[id]) == 0 {
		return fmt.Errorf("grammar: token %d has no text the grammar could accept", id)
	}
	return mt.Accept(ix.pieces[id])
}

// Allows reports whether token id may come next, without computing a mask.
func (mt *Matcher) Allows(ix *Index, id int32) bool {
	if slices.Contains(ix.eog, id) {
		return mt.Complete()
	}
	if id < 0 || int(id) >= len(ix.pieces) || len(ix.pieces[id]) == 0 {
		return false
	}
	mt.rebaseIfLarge()
	mt.m.begin()
	_, i := mt.m.feedAll(mt.st, ix.pieces[id])
	return i == len(ix.pieces[id])
}

// Mask returns the tokens that may come next as a bitset over the
// vocabulary (bit id%64 of word id/64). The slice is cached and shared:
// read it, do not change it. When the walk runs out of MaxCallWork or
// MaxMemory the mask is empty and Err says why.
func (mt *Matcher) Mask(ix *Index) []uint64 {
	if m, ok := mt.masks[mt.st]; ok {
		mt.mErr = nil
		return m
	}
	mt.rebaseIfLarge()
	mask, ok := mt.walkMask(ix)
	if !ok && mt.m.err.Limit == "MaxMemory" {
		// Out of memory with old states cached: drop them and try again.
		mt.st = mt.m.rebase(mt.st)
		clear(mt.masks)
		mask, ok = mt.walkMask(ix)
	}
	if !ok {
		mt.mErr = mt.m.err
		return make([]uint64, (ix.size+63)/64)
	}
	mt.mErr = nil
	if len(mt.masks) >= mt.MaskCacheLimit {
		for k := range mt.masks { // evict one at random
			delete(mt.masks, k)
			break
		}
	}
	mt.masks[mt.st] = mask
	return mask
}

// walkMask walks the vocabulary trie from the current state; ok is false
// when the call's budget ran out.
func (mt *Matcher) walkMask(ix *Index) (mask []uint64, ok bool) {
	mask = make([]uint64, (ix.size+63)/64)
	m := mt.m
	m.begin()
	if cap(mt.walk) < ix.maxLen+1 {
		mt.walk = make([]cursor, ix.maxLen+1)
	}
	walk := mt.walk
	walk[0] = mt.st
	nodes := ix.nodes
	for i := 0; i < len(nodes); {
		n := &nodes[i]
		prev := walk[n.depth-1]
		var next cursor
		if prev.remain == 0 && n.b < 0x80 { // the common case, inline
			t := m.trans[int(prev.set)<<8|int(n.b)]
			if t == unknown {
				t = m.stepASCII(prev.set, n.b)
			}
			if t < 0 {
				if t == overBudget {
					return nil, false
				}
				i = int(n.skip)
				continue
			}
			next = cursor{set: t}
		} else {
			var ok bool
			if next, ok = m.feed(prev, n.b); !ok {
				if next.set == overBudget {
					return nil, false
				}
				i = int(n.skip)
				continue
			}
		}
		walk[n.depth] = next
		if n.ntok > 0 {
			for _, t := range ix.toks[n.tok : n.tok+int32(n.ntok)] {
				mask[t>>6] |= 1 << (t & 63)
			}
		}
		i++
	}
	if mt.Complete() {
		for _, t := range ix.eog {
			if int(t) < ix.size {
				mask[t>>6] |= 1 << (t & 63)
			}
		}
	}
	return mask, true
}

// rebaseIfLarge rebuilds the interned tables when they pass an eighth of
// MaxMemory, carrying the current state over, so memory stays bounded
// however long the generation.
func (mt *Matcher) rebaseIfLarge() {
	m := mt.m
	if m.mem <= m.lim.MaxMemory/8 && m.size() < 1<<20 {
		return
	}
	mt.st = m.rebase(mt.st)
	clear(mt.masks)
}
