package tokenizer

import (
	"math"
	"strings"
	"unicode/utf8"
)

// SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm runs it: start
// from single characters, repeatedly merge the adjacent pair whose merged
// text is a token with the highest score (leftmost on ties), then emit each
// symbol, splitting merges that are not tokens back into their parts and
// falling back to <0xNN> byte tokens for anything else.

type symbol struct {
	prev, next int
	text       string // a slice of the input
	n          int    // byte length; 0 once merged into its left neighbour
	off        int
}

type bigram struct {
	key         uint64 // score, then leftmost: larger key pops first
	left, right int32
	size        int32
}

// newBigram packs the priority into one integer: the score's bits made
// order-preserving in the high half, the complemented left index below.
func newBigram(left, right int, score float32, size int) bigram {
	b := math.Float32bits(score)
	if b&0x80000000 != 0 {
		b = ^b
	} else {
		b |= 0x80000000
	}
	return bigram{uint64(b)<<32 | uint64(^uint32(left)), int32(left), int32(right), int32(size)}
}

// bigramHeap is a max-heap by score, then leftmost (no interface boxing:
// the queue sees one push per candidate merge).
type bigramHeap []bigram

func (h bigramHeap) less(i, j int) bool { return h[i].key > h[j].key }

func (h *bigramHeap) push(b bigram) {
	*h = append(*h, b)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *bigramHeap) pop() bigram {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && q.less(l, m) {
			m = l
		}
		if r < n && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	*h = q
	return top
}

func (v *Vocab) spmEncode(text string, out []int32) []int32 {
	if text == "" {
		return out
	}
	syms := make([]symbol, 0, len(text))
	for off := 0; off < len(text); {
		_, size := utf8.DecodeRuneInString(text[off:])
		if n := utf8Len(text[off]); n > size && off+n <= len(text) {
			size = n // llama.cpp groups by the lead byte's length, valid or not
		}
		syms = append(syms, symbol{prev: len(syms) - 1, next: len(syms) + 1, n: size, off: off})
		off += size
	}
	syms[len(syms)-1].next = -1
	h := make(bigramHeap, 0, 2*len(syms))
	sym := func(i int) string { return text[syms[i].off : syms[i].off+syms[i].n] }
	tryAdd := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		s := text[syms[l].off : syms[r].off+syms[r].n]
		id, ok := v.ids[s]
		if !ok {
			return
		}
		h.push(newBigram(l, r, v.score(id), len(s)))
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(i-1, i)
	}
	mergeAll(syms, &h, tryAdd)
	// Every merged symbol is a token (only pairs that are tokens merge), so
	// a symbol missing from the vocabulary is a single character: bytes.
	resegment := func(s string) {
		if id, ok := v.ids[s]; ok {
			out = append(out, id)
			return
		}
		for i := 0; i < len(s); i++ {
			if id := v.byteTok[s[i]]; id >= 0 {
				out = append(out, id)
			} else if v.UNK >= 0 {
				out = append(out, v.UNK)
			}
		}
	}
	for i := 0; i >= 0; i = syms[i].next {
		resegment(sym(i))
	}
	return out
}

// mergeAll pops candidate merges best first and applies each that is still
// valid (both symbols alive, adjacent and of the lengths the candidate was
// made from), offering the new neighbours to tryAdd. Shared by SPM and BPE,
// which differ only in how tryAdd ranks a pair.
func mergeAll(syms []symbol, h *bigramHeap, tryAdd func(l, r int)) {
	for len(*h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || int32(l.n+r.n) != b.size || l.next != int(b.right) {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = int(b.left)
		}
		tryAdd(l.prev, int(b.left))
		tryAdd(int(b.left), l.next)
	}
}

// utf8Len is the sequence length announced by a UTF-8 lead byte.
func utf8Len(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b>>5 == 0x6:
		return 2
	case b>>4 == 0xe:
		return 3
	case b>>3 == 0x1e:
		return 4
	}
	return 1
}

// escapeSpaces replaces ' ' with SentencePiece's '▁'.
func escapeSpaces(s string) string { return strings.ReplaceAll(s, " ", "\u2581") }
