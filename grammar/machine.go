package grammar

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// The matcher's state is llama.cpp's set of pushdown stacks. A stack is
// a chain of frames (element position, parent frame); frames and sets of
// frames are interned, so a set is a small integer and equal sets are
// found once. On top of the sets sits a lazily built automaton: each set
// has a row of ASCII transitions and lead-byte verdicts filled on first
// use, and completed non-ASCII characters step through a memo table.
// Walking the vocabulary's byte trie against it computes a token mask.
//
// Every step is bounded (Limits): the stacks it produces (MaxStacks), the
// frames on one stack (MaxStackDepth), its expansion work (MaxStepWork),
// the work of the whole call (MaxCallWork) and the bytes cached
// (MaxMemory). Expansion is iterative, never recursive.

const (
	accept     = -1 // the empty stack: the grammar may end here
	dead       = -1 // no state: the input cannot continue
	unknown    = -2 // transition not computed yet
	overLimit  = -3 // the step exceeds a per-step limit: refused, and cached as such
	overBudget = -4 // the call ran out of work or memory: refused, not cached
)

type frame struct {
	pos    int32 // index into machine.elems
	parent int32 // frame to resume when this rule ends (-1: none)
}

// task is one item of expand's work list: expand position pos with
// continuation parent.
type task struct {
	pos, parent int32
}

// Estimated bytes each cached item holds (slices, map entries, rows).
const (
	frameBytes = 48
	setBytes   = 256*4 + 96 // its transition row, slice and map entry
	stackBytes = 8          // per frame id in a set (slice + map key)
	seenBytes  = 40
	wideBytes  = 32
)

// machine holds one grammar's interned frames, sets and automaton. It is
// not safe for concurrent use: each Matcher owns one (pooled by callers
// that reuse a grammar).
type machine struct {
	*flat
	lim Limits

	frames  []frame
	depth   []int32 // frame → frames on its stack (itself included)
	frameID map[frame]int32
	sets    [][]int32 // frame ids, sorted; accept included as -1
	setID   map[string]int32
	seen    map[uint64]uint32 // position<<32 | continuation → generation (step) that expanded it
	gen     uint32

	trans []int32          // set<<8 | byte → see row
	wide  map[uint64]int32 // set<<32 | code point interval → set (non-ASCII)
	// overErr keeps the limit each overLimit transition hit (set<<32 | byte,
	// or set<<32 | 1<<31 | interval), to report it when it is met again.
	overErr map[uint64]*LimitError

	scratch []int32
	work    []task
	keyBuf  []byte

	mem      int // estimated bytes cached
	stepLeft int // expansion work left in this step
	callLeft int // expansion work left in this call
	err      *LimitError
}

func newMachine(g *Grammar) *machine {
	m := &machine{flat: &g.flat, lim: g.lim}
	m.reset()
	m.begin()
	return m
}

func (m *machine) reset() {
	m.frames = m.frames[:0]
	m.depth = m.depth[:0]
	m.frameID = map[frame]int32{}
	m.sets = m.sets[:0]
	m.setID = map[string]int32{}
	m.seen = map[uint64]uint32{}
	m.trans = m.trans[:0]
	m.wide = map[uint64]int32{}
	m.overErr = map[uint64]*LimitError{}
	m.mem = 0
}

// begin starts a call (Accept, Allows, Mask…): a fresh work budget.
func (m *machine) begin() {
	m.callLeft = m.lim.MaxCallWork
	m.err = nil
}

// over stops the current step: a per-step limit (the step's result is
// cached as overLimit) or, when call is set, the call's budget.
type over struct {
	err  *LimitError
	call bool
}

func (m *machine) spend(n int) {
	m.stepLeft -= n
	m.callLeft -= n
	if m.stepLeft < 0 {
		panic(over{&LimitError{"MaxStepWork", m.lim.MaxStepWork, "one character's step of the matcher needs too much work"}, false})
	}
	if m.callLeft < 0 {
		panic(over{&LimitError{"MaxCallWork", m.lim.MaxCallWork, "one call of the matcher needs too much work"}, true})
	}
}

func (m *machine) charge(n int) {
	m.mem += n
	if m.mem > m.lim.MaxMemory {
		panic(over{&LimitError{"MaxMemory", m.lim.MaxMemory, fmt.Sprintf("the matcher's caches need over %d bytes", m.lim.MaxMemory)}, true})
	}
}

func (m *machine) size() int { return len(m.frames) + len(m.sets) }

func (m *machine) frame(pos, parent int32) int32 {
	f := frame{pos, parent}
	if id, ok := m.frameID[f]; ok {
		return id
	}
	d := int32(1)
	if parent >= 0 {
		d = m.depth[parent] + 1
	}
	if int(d) > m.lim.MaxStackDepth {
		panic(over{&LimitError{"MaxStackDepth", m.lim.MaxStackDepth, fmt.Sprintf("the input nests over %d rule references deep", m.lim.MaxStackDepth)}, false})
	}
	m.charge(frameBytes)
	id := int32(len(m.frames))
	m.frames = append(m.frames, f)
	m.depth = append(m.depth, d)
	m.frameID[f] = id
	return id
}

// expand appends to out the terminal frames reached from position pos
// with continuation parent, following rule references and popping
// finished rules (llama.cpp's advance_stack), with an explicit work list.
// Within one step (one generation of seen) each (position, continuation)
// is expanded once: many empty paths that end in the same continuation
// (nested optional repetitions) cost one expansion, not one each.
func (m *machine) expand(pos, parent int32, out []int32) []int32 {
	work := append(m.work[:0], task{pos, parent})
	for len(work) > 0 {
		t := work[len(work)-1]
		work = work[:len(work)-1]
		k := uint64(uint32(t.pos))<<32 | uint64(uint32(t.parent))
		if g, ok := m.seen[k]; ok && g == m.gen {
			continue
		} else if !ok {
			m.charge(seenBytes)
		}
		m.seen[k] = m.gen
		m.spend(1)
		e := m.elems[t.pos]
		switch e.typ {
		case eEnd, eAlt:
			if t.parent < 0 {
				out = append(out, accept)
				continue
			}
			fr := m.frames[t.parent]
			work = append(work, task{fr.pos, fr.parent})
		case eRef:
			cont := t.parent
			if !m.isEnd(t.pos + 1) {
				cont = m.frame(t.pos+1, t.parent)
			}
			m.spend(len(m.alts[e.val]))
			for _, sub := range m.alts[e.val] {
				work = append(work, task{sub, cont})
			}
		default:
			out = append(out, m.frame(t.pos, t.parent))
		}
	}
	m.work = work
	return out
}

// newGen starts a step: positions expanded before may be expanded again.
func (m *machine) newGen() {
	m.gen++
	if m.gen == 0 {
		clear(m.seen)
		m.gen = 1
	}
}

// intern sorts and dedups frames and returns their set id.
func (m *machine) intern(frames []int32) int32 {
	slices.Sort(frames)
	frames = slices.Compact(frames)
	if len(frames) > m.lim.MaxStacks {
		panic(over{&LimitError{"MaxStacks", m.lim.MaxStacks, fmt.Sprintf("the input reaches %d parse stacks at once (an ambiguous grammar)", len(frames))}, false})
	}
	k := m.keyBuf[:0]
	for _, f := range frames {
		k = binary.LittleEndian.AppendUint32(k, uint32(f))
	}
	m.keyBuf = k
	if id, ok := m.setID[string(k)]; ok {
		return id
	}
	m.charge(setBytes + stackBytes*len(frames))
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

// step advances set s by code point c: the next set, dead when nothing
// survives, overLimit when the step exceeds a per-step limit (both may be
// cached) or overBudget when the call's budget ran out (not to be
// cached). m.err says which limit.
func (m *machine) step(s int32, c uint32) (next int32) {
	defer func() {
		if r := recover(); r != nil {
			o, ok := r.(over)
			if !ok {
				panic(r)
			}
			m.err = o.err
			next = overLimit
			if o.call {
				next = overBudget
			}
		}
	}()
	m.stepLeft = m.lim.MaxStepWork
	m.newGen()
	out := m.scratch[:0]
	for _, f := range m.sets[s] {
		if f == accept {
			continue
		}
		fr := m.frames[f]
		ok, after := m.matchChar(fr.pos, c)
		m.spend(int(after - fr.pos)) // the class's elements
		if !ok {
			continue
		}
		m.scratch = out // keep the grown buffer even if expand panics
		out = m.expand(after, fr.parent, out)
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
// continue (m.err is then set if a limit refused it).
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
			ok, over := m.partialOK(c.set, c.partial, c.remain)
			if over {
				return cursor{set: overBudget}, false
			}
			return c, ok
		}
		s := m.stepWide(c.set, c.partial)
		return cursor{set: s}, s >= 0
	}
	if b < 0x80 {
		t := m.row(c.set)[b]
		if t == unknown {
			t = m.stepASCII(c.set, b)
		} else if t == overLimit {
			m.err = m.overErr[uint64(c.set)<<32|uint64(b)]
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
		ok, over := m.partialOK(c.set, uint32(b)&uint32(0xFF>>(n+1)), n-1)
		if over {
			return cursor{set: overBudget}, false
		}
		t = dead
		if ok {
			t = aliveLead
		}
		m.row(c.set)[b] = t
	}
	return cursor{set: c.set, partial: uint32(b) & uint32(0xFF>>(n+1)), remain: n - 1}, t == aliveLead
}

// stepASCII computes and caches set s's transition on ASCII byte b.
func (m *machine) stepASCII(s int32, b byte) int32 {
	t := m.step(s, uint32(b))
	switch t {
	case overBudget:
		return t // not cached: another call may have the budget
	case overLimit:
		m.overErr[uint64(s)<<32|uint64(b)] = m.err
	}
	m.row(s)[b] = t
	return t
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
		if t == overLimit {
			m.err = m.overErr[k|1<<31]
		}
		return t
	}
	t := m.step(s, cp)
	switch t {
	case overBudget:
		return t
	case overLimit:
		m.overErr[k|1<<31] = m.err
	}
	m.wide[k] = t
	m.mem += wideBytes
	return t
}

// partialOK reports whether some stack of set s can match a character
// beginning with the pending bytes; over is set when the call's work
// budget ran out first (m.err then says so).
func (m *machine) partialOK(s int32, value uint32, remain int8) (ok, over bool) {
	set := m.sets[s]
	if m.callLeft -= len(set); m.callLeft < 0 {
		m.err = &LimitError{"MaxCallWork", m.lim.MaxCallWork, "one call of the matcher needs too much work"}
		return false, true
	}
	for _, f := range set {
		if f != accept && m.matchPartial(m.frames[f].pos, value, remain) {
			return true, false
		}
	}
	return false, false
}

// initial returns the cursor before any input; on a limit, a cursor on
// the empty set (nothing can follow) and the error.
func (m *machine) initial(root int) (c cursor, err error) {
	defer func() {
		if r := recover(); r != nil {
			o, ok := r.(over)
			if !ok {
				panic(r)
			}
			c, err = cursor{set: m.internSafe(nil)}, o.err
		}
	}()
	m.stepLeft = m.lim.MaxStepWork
	m.newGen()
	var out []int32
	for _, sub := range m.alts[root] {
		out = m.expand(sub, -1, out)
	}
	return cursor{set: m.intern(out)}, nil
}

// internSafe interns a set the machine already held (no limits checked).
func (m *machine) internSafe(frames []int32) int32 {
	lim := m.lim
	m.lim.MaxStacks, m.lim.MaxMemory = math.MaxInt, math.MaxInt
	defer func() { m.lim = lim }()
	return m.intern(frames)
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

// rebase rebuilds the interned tables, keeping only what cursor c needs
// (the frames reachable from its stacks, copied in id order, so parents
// before children), and returns c in the new tables.
func (m *machine) rebase(c cursor) cursor {
	old := m.sets[c.set]
	keep := map[int32]int32{} // old frame → new
	var reach []int32
	for _, f := range old {
		for ; f >= 0; f = m.frames[f].parent {
			if _, ok := keep[f]; ok {
				break
			}
			keep[f] = -1
			reach = append(reach, f)
		}
	}
	slices.Sort(reach)
	frames := make([]frame, len(reach))
	for i, f := range reach {
		frames[i] = m.frames[f]
	}
	m.reset()
	lim := m.lim
	m.lim.MaxMemory, m.lim.MaxStackDepth = math.MaxInt, 1<<30
	for i, fr := range frames {
		if fr.parent >= 0 {
			fr.parent = keep[fr.parent]
		}
		keep[reach[i]] = m.frame(fr.pos, fr.parent)
	}
	set := make([]int32, len(old))
	for i, f := range old {
		set[i] = accept
		if f >= 0 {
			set[i] = keep[f]
		}
	}
	c.set = m.intern(set)
	m.lim = lim
	return c
}
