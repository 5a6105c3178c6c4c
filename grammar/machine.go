package grammar

import (
	"encoding/binary"
	"errors"
	"slices"
)

// The matcher's state is llama.cpp's set of pushdown stacks. A stack is
// a chain of frames (element position, parent frame); frames and sets of
// frames are interned, so a set is a small integer and equal sets are
// found once. On top of the sets sits a lazily built byte automaton: a
// state is (set, pending bytes of an unfinished UTF-8 character), and its
// 256 transitions are filled on first use. Walking the vocabulary's byte
// trie against this automaton is what computes a token mask.

const (
	accept  = -1 // the empty stack: the grammar may end here
	dead    = -1 // no state: the input cannot continue
	unknown = -2 // transition not computed yet
)

type frame struct {
	pos    int32 // index into machine.elems
	parent int32 // frame to resume when this rule ends (-1: none)
}

type dstate struct {
	set     int32
	partial uint32 // value of the pending bytes
	remain  int8   // continuation bytes still expected
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

	states  []dstate
	stateID map[dstate]int32
	trans   []int32 // state*256 + byte → state, dead or unknown

	scratch []int32
	keyBuf  []byte
	limit   int // frames + states beyond which the caches are rebuilt
}

// ErrTooComplex is returned when following the grammar would need more
// memory than the matcher allows.
var ErrTooComplex = errors.New("grammar: the input's parse state grew past the matcher's limit")

func newMachine(g *Grammar) *machine {
	m := &machine{limit: 1 << 20}
	for _, r := range g.rules {
		m.start = append(m.start, int32(len(m.elems)))
		m.elems = append(m.elems, r...)
	}
	m.reset()
	return m
}

func (m *machine) reset() {
	m.frames = m.frames[:0]
	m.frameID = map[frame]int32{}
	m.sets = m.sets[:0]
	m.setID = map[string]int32{}
	m.expMemo = map[int32][]int32{}
	m.states = m.states[:0]
	m.stateID = map[dstate]int32{}
	m.trans = m.trans[:0]
}

func (m *machine) size() int { return len(m.frames) + len(m.states) }

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

func (m *machine) state(d dstate) int32 {
	if id, ok := m.stateID[d]; ok {
		return id
	}
	id := int32(len(m.states))
	m.states = append(m.states, d)
	m.stateID[d] = id
	for i := 0; i < 256; i++ {
		m.trans = append(m.trans, unknown)
	}
	return id
}

var utf8Len = [16]int8{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 3, 4}

// next returns the automaton state after byte b from state st (or dead).
func (m *machine) next(st int32, b byte) int32 {
	t := m.trans[int(st)<<8|int(b)]
	if t != unknown {
		return t
	}
	t = m.computeNext(st, b)
	m.trans[int(st)<<8|int(b)] = t
	return t
}

func (m *machine) computeNext(st int32, b byte) int32 {
	d := m.states[st]
	var value uint32
	var remain int8
	if d.remain > 0 {
		if b>>6 != 2 {
			return dead
		}
		value, remain = d.partial<<6|uint32(b&0x3F), d.remain-1
	} else {
		n := utf8Len[b>>4]
		if n == 0 || b == 0 {
			return dead
		}
		value, remain = uint32(b)&uint32(0xFF>>(n+1)), n-1
		if n == 1 {
			value = uint32(b)
		}
	}
	if remain == 0 {
		s := m.step(d.set, value)
		if s < 0 {
			return dead
		}
		return m.state(dstate{set: s})
	}
	for _, f := range m.sets[d.set] {
		if f != accept && m.matchPartial(m.frames[f].pos, value, remain) {
			return m.state(dstate{set: d.set, partial: value, remain: remain})
		}
	}
	return dead
}

// initial returns the automaton state before any input.
func (m *machine) initial(root int) int32 {
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
	return m.state(dstate{set: m.intern(out)})
}

// complete reports whether the input so far is a whole sentence.
func (m *machine) complete(st int32) bool {
	d := m.states[st]
	return d.remain == 0 && slices.Contains(m.sets[d.set], accept)
}

// final reports whether nothing but the end can follow.
func (m *machine) final(st int32) bool {
	d := m.states[st]
	s := m.sets[d.set]
	return d.remain == 0 && len(s) == 1 && s[0] == accept
}
