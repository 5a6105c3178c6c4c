package tokenizer

import (
	"container/heap"
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
	left, right int
	score       float32
	size        int
}

type bigramHeap []bigram

func (h bigramHeap) Len() int { return len(h) }
func (h bigramHeap) Less(i, j int) bool {
	if h[i].score != h[j].score {
		return h[i].score > h[j].score
	}
	return h[i].left < h[j].left
}
func (h bigramHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *bigramHeap) Push(x any)   { *h = append(*h, x.(bigram)) }
func (h *bigramHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (v *Vocab) spmEncode(text string, out []int32) []int32 {
	if text == "" {
		return out
	}
	var syms []symbol
	for off := 0; off < len(text); {
		_, size := utf8.DecodeRuneInString(text[off:])
		if n := utf8Len(text[off]); n > size && off+n <= len(text) {
			size = n // llama.cpp groups by the lead byte's length, valid or not
		}
		syms = append(syms, symbol{prev: len(syms) - 1, next: len(syms) + 1, n: size, off: off})
		off += size
	}
	syms[len(syms)-1].next = -1
	var h bigramHeap
	revMerge := map[string][2]int{}
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
		heap.Push(&h, bigram{l, r, v.score(id), len(s)})
		revMerge[s] = [2]int{l, r}
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(i-1, i)
	}
	for h.Len() > 0 {
		b := heap.Pop(&h).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		tryAdd(l.prev, b.left)
		tryAdd(b.left, l.next)
	}
	var resegment func(s string)
	resegment = func(s string) {
		if id, ok := v.ids[s]; ok {
			out = append(out, id)
			return
		}
		if p, ok := revMerge[s]; ok {
			resegment(text[syms[p[0]].off:syms[p[1]].off])
			resegment(text[syms[p[1]].off : syms[p[0]].off+len(s)])
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
