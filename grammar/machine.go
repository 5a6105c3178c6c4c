package grammar

import (
	"encoding/binary"
	"slices"
)

// The matcher's state is llama.cpp's set of pushdown stacks. A stack is
// a chain of frames (element position, parent frame); frames and sets of
// frames are interned, so a set is a small integer and equal sets are
// found once. On top of the sets sits a lazily built automaton: each set
// has a row of ASCII transitions and lead-byte verdicts filled on first
// use, and completed non-ASCII characters step through a memo table.
// Walking the vocabulary's byte trie against it computes a token mask.

const (
	accept  = -1 // the empty stack: the grammar may end here
	dead    = -1 // no state: the input cannot continue
	unknown = -2 // transition not computed yet
)

type frame struct {
	pos    int32 // index into machine.elems
	parent int32 // frame to resume when this rule ends (-1: none)
}

// machine holds one grammar's interned frames, sets and automaton. It is
// not safe for concurrent use: each Matcher owns one (pooled by callers
// that reuse a grammar).
type machine struct {
	elems []elem
	start []int32 // rule id → first element

	frames  []frame
	frameID map[frame]int32
	sets    [][]int32 // frame ids, sorted; accept included as -1
	setID   map[string]int32
	expMemo map[int32][]int32 // frame → its expansion (tops are terminals)

	trans  []int32          // set<<8 | byte → see row
	wide   map[uint64]int32 // set<<32 | code point interval → set (non-ASCII)
	bounds []uint32         // sorted interval starts (see newMachine)

	scratch []int32
	keyBuf  []byte
	limit   int // frames + sets beyond which the caches are rebuilt
}

func newMachine(g *Grammar) *machine {
	m := &machine{limit: 1 << 16}
	for _, r := range g.rules {
		m.start = append(m.start, int32(len(m.elems)))
		m.elems = append(m.elems, r...)
	}
	// Code points split into intervals within which every character class
	// of the grammar answers alike; non-ASCII steps are memoized per
	// interval, not per code point.
	for i, e := range m.elems {
		switch e.typ {
		case eChar, eCharNot, eCharAlt:
			hi := e.val
			if i+1 < len(m.elems) && m.elems[i+1].typ == eRngUpper {
				hi = m.elems[i+1].val
			}
			m.bounds = append(m.bounds, e.val, hi+1)
		}
	}
	slices.Sort(m.bounds)
	m.bounds = slices.Compact(m.bounds)
	m.reset()
	return m
}

func (m *machine) reset() {
	m.frames = m.frames[:0]
	m.frameID = map[frame]int32{}
	m.sets = m.sets[:0]
	m.setID = map[string]int32{}
	m.expMemo = map[int32][]int32{}
	m.trans = m.trans[:0]
	m.wide = map[uint64]int32{}
}

func (m *machine) size() int { return len(m.frames) + len(m.sets) }

func (m *machine) frame(pos, parent int32) int32 {
	f := frame{pos, parent}
	if id, ok := m.frameID[f]; ok {
		return id
	}
	id := int32(len(m.frames))
	m.frames = append(m.frames, f)
	m.frameID[f] = id
	return id
}

func (m *machine) isEnd(pos int32) bool {
	t := m.elems[pos].typ
	return t == eEnd || t == eAlt
}

// expand pushes onto out the terminal frames reached from position pos
// with continuation parent, following rule references and popping
// finished rules (llama.cpp's advance_stack).
func (m *machine) expand(pos, parent int32, out []int32) []int32 {
	e := m.elems[pos]
	switch e.typ {
	case eEnd, eAlt:
		if parent < 0 {
			return append(out, accept)
		}
		return append(out, m.expandFrame(parent)...)
	case eRef:
		cont := parent
		if !m.isEnd(pos + 1) {
			cont = m.frame(pos+1, parent)
		}
		sub := m.start[e.val]
		for {
			out = m.expand(sub, cont, out)
			for !m.isEnd(sub) {
				sub++
			}
			if m.elems[sub].typ != eAlt {
				return out
			}
			sub++
		}
	default:
		return append(out, m.frame(pos, parent))
	}
}

// expandFrame is expand for an interned continuation frame, memoized.
func (m *machine) expandFrame(f int32) []int32 {
	if r, ok := m.expMemo[f]; ok {
		return r
	}
	fr := m.frames[f]
	r := m.expand(fr.pos, fr.parent, nil)
	m.expMemo[f] = r
	return r
}

// intern sorts and dedups frames and returns their set id.
func (m *machine) intern(frames []int32) int32 {
	slices.Sort(frames)
	frames = slices.Compact(frames)
	k := m.keyBuf[:0]
	for _, f := range frames {
		k = binary.LittleEndian.AppendUint32(k, uint32(f))
	}
	m.keyBuf = k
	if id, ok := m.setID[string(k)]; ok {
		return id
	}
	id := int32(len(m.sets))
	m.sets = append(m.sets, slices.Clone(frames))
	m.setID[string(k)] = id
	m.row(id) // every set has its row, so walks can index trans directly
	return id
}

// matchChar tests code point c against the class at pos and returns the
// position after the class (llama_grammar_match_char).
func (m *machine) matchChar(pos int32, c uint32) (bool, int32) {
	first := m.elems[pos].typ
	positive := first == eChar || first == eCharAny
	found := false
	for {
		e := m.elems[pos]
		if m.elems[pos+1].typ == eRngUpper {
			found = found || e.val <= c && c <= m.elems[pos+1].val
			pos += 2
		} else if e.typ == eCharAny {
			found = true
			pos++
		} else {
			found = found || e.val == c
			pos++
		}
		if m.elems[pos].typ != eCharAlt {
			break
		}
	}
	return found == positive, pos
}

// matchPartial tests whether some code point beginning with the pending
// bytes could match the class at pos (llama_grammar_match_partial_char).
func (m *machine) matchPartial(pos int32, value uint32, remain int8) bool {
	if remain < 0 || remain == 1 && value < 2 {
		return false
	}
	low := value << (uint(remain) * 6)
	high := low | (1<<(uint(remain)*6) - 1)
	if low == 0 {
		if remain == 2 {
			low = 1 << 11
		} else if remain == 3 {
			low = 1 << 16
		}
	}
	first := m.elems[pos].typ
	positive := first == eChar || first == eCharAny
	for {
		e := m.elems[pos]
		if m.elems[pos+1].typ == eRngUpper {
			if e.val <= high && low <= m.elems[pos+1].val {
				return positive
			}
			pos += 2
		} else if e.typ == eCharAny {
			return true
		} else {
			if low <= e.val && e.val <= high {
				return positive
			}
			pos++
		}
		if m.elems[pos].typ != eCharAlt {
			break
		}
	}
	return !positive
}

// step advances set s by code point c; -1 when nothing survives.
func (m *machine) step(s int32, c uint32) int32 {
	out := m.scratch[:0]
	for _, f := range m.sets[s] {
		if f == accept {
			continue
		}
		fr := m.frames[f]
		ok, next := m.matchChar(fr.pos, c)
		if !ok {
			continue
		}
		out = m.expand(next, fr.parent, out)
	}
	m.scratch = out
	if len(out) == 0 {
		return dead
	}
	return m.intern(out)
}

// cursor is a position in the input: a stack set and the pending bytes of
// an unfinished UTF-8 character.
type cursor struct {
	set     int32
	partial uint32 // value of the pending bytes
	remain  int8   // continuation bytes still expected
}

// row returns set s's transition row, created on first use. Entry b < 0x80
// is the set after ASCII byte b; entry b ≥ 0xC0 says whether some
// character with lead byte b can match (aliveLead) or not (dead).
func (m *machine) row(s int32) []int32 {
	for int(s) >= len(m.trans)>>8 {
		if len(m.trans)+256 > cap(m.trans) { // grow by doubling, not per row
			t := make([]int32, len(m.trans), max(2*cap(m.trans), 64<<10))
			copy(t, m.trans)
			m.trans = t
		}
		n := len(m.trans)
		m.trans = m.trans[:n+256]
		for i := n; i < n+256; i++ {
			m.trans[i] = unknown
		}
	}
	return m.trans[int(s)<<8 : int(s)<<8+256]
}

const aliveLead = 0

var utf8Len = [16]int8{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4}

// feed advances cursor c by one byte; ok is false when the input cannot
// continue.
func (m *machine) feed(c cursor, b byte) (cursor, bool) {
	if c.remain > 0 {
		if b>>6 != 2 {
			return c, false
		}
		// Well-formed UTF-8 only (no overlong forms, surrogates or code
		// points past U+10FFFF): the second byte's range depends on the
		// lead. llama.cpp lets these through; they decode to U+FFFD.
		switch {
		case c.remain == 2 && c.partial == 0x0: // E0
			if b < 0xA0 {
				return c, false
			}
		case c.remain == 2 && c.partial == 0xD: // ED
			if b > 0x9F {
				return c, false
			}
		case c.remain == 3 && c.partial == 0x0: // F0
			if b < 0x90 {
				return c, false
			}
		case c.remain == 3 && c.partial == 0x4: // F4
			if b > 0x8F {
				return c, false
			}
		}
		c.partial, c.remain = c.partial<<6|uint32(b&0x3F), c.remain-1
		if c.remain > 0 {
			return c, m.partialOK(c.set, c.partial, c.remain)
		}
		s := m.stepWide(c.set, c.partial)
		return cursor{set: s}, s >= 0
	}
	if b < 0x80 {
		r := m.row(c.set)
		t := r[b]
		if t == unknown {
			t = m.step(c.set, uint32(b))
			m.row(c.set)[b] = t
		}
		return cursor{set: t}, t >= 0
	}
	n := utf8Len[b>>4]
	if n == 0 || b == 0xC0 || b == 0xC1 || b >= 0xF5 {
		return c, false
	}
	r := m.row(c.set)
	t := r[b]
	if t == unknown {
		t = dead
		if m.partialOK(c.set, uint32(b)&uint32(0xFF>>(n+1)), n-1) {
			t = aliveLead
		}
		m.row(c.set)[b] = t
	}
	return cursor{set: c.set, partial: uint32(b) & uint32(0xFF>>(n+1)), remain: n - 1}, t == aliveLead
}

// feedAll advances c over b; it returns the cursor and how many bytes
// were taken (len(b) when all continue the grammar).
func (m *machine) feedAll(c cursor, b []byte) (cursor, int) {
	for i, x := range b {
		next, ok := m.feed(c, x)
		if !ok {
			return c, i
		}
		c = next
	}
	return c, len(b)
}

// stepWide advances set s by a non-ASCII code point, memoized.
func (m *machine) stepWide(s int32, cp uint32) int32 {
	cls, _ := slices.BinarySearch(m.bounds, cp+1) // boundaries ≤ cp
	k := uint64(s)<<32 | uint64(cls)
	if t, ok := m.wide[k]; ok {
		return t
	}
	t := m.step(s, cp)
	m.wide[k] = t
	return t
}

func (m *machine) partialOK(s int32, value uint32, remain int8) bool {
	for _, f := range m.sets[s] {
		if f != accept && m.matchPartial(m.frames[f].pos, value, remain) {
			return true
		}
	}
	return false
}

// initial returns the cursor before any input.
func (m *machine) initial(root int) cursor {
	var out []int32
	for sub := m.start[root]; ; sub++ {
		out = m.expand(sub, -1, out)
		for !m.isEnd(sub) {
			sub++
		}
		if m.elems[sub].typ != eAlt {
			break
		}
	}
	return cursor{set: m.intern(out)}
}

// complete reports whether the input so far is a whole sentence.
func (m *machine) complete(c cursor) bool {
	return c.remain == 0 && slices.Contains(m.sets[c.set], accept)
}

// final reports whether nothing but the end can follow.
func (m *machine) final(c cursor) bool {
	s := m.sets[c.set]
	return c.remain == 0 && len(s) == 1 && s[0] == accept
}
