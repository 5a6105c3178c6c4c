package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Byte-level BPE as llama.cpp's llm_tokenizer_bpe runs it: pre-tokenize,
// map each word's bytes to the byte-level alphabet, then repeatedly merge the
// adjacent pair with the lowest merge rank (leftmost on ties).

func (v *Vocab) bpeEncode(text string, out []int32) []int32 {
	if v.normalize != nil {
		text = v.normalize(text)
	}
	pre := v.pre
	if pre == nil {
		pre = preFor(v.Pre)
	}
	for _, w := range pre([]rune(text)) {
		if v.rawBPE {
			out = v.bpeWord(string(w), out)
		} else {
			out = v.bpeWord(byteEncode(string(w)), out)
		}
	}
	return out
}

func (v *Vocab) bpeWord(word string, out []int32) []int32 {
	if v.IgnoreMerges || (v.gemma4 && strings.Trim(word, "\n") == "") {
		// gemma4: a run of newlines that is a token is that token
		if id, ok := v.ids[word]; ok {
			return append(out, id)
		}
	}
	var syms []symbol
	for off := 0; off < len(word); {
		_, size := utf8.DecodeRuneInString(word[off:])
		syms = append(syms, symbol{prev: len(syms) - 1, next: len(syms) + 1, n: size, off: off})
		off += size
	}
	if len(syms) == 0 {
		return out
	}
	syms[len(syms)-1].next = -1
	var h bigramHeap
	text := func(i int) string { return word[syms[i].off : syms[i].off+syms[i].n] }
	tryAdd := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		rank, ok := v.Merges[text(l)+" "+text(r)]
		if !ok {
			return
		}
		h.push(newBigram(l, r, -float32(rank), syms[l].n+syms[r].n))
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(i-1, i)
	}
	mergeAll(syms, &h, tryAdd)
	for i := 0; i >= 0; i = syms[i].next {
		s := text(i)
		if id, ok := v.ids[s]; ok {
			out = append(out, id)
			continue
		}
		// Not a token: one token per byte.
		if v.rawBPE {
			for i := 0; i < len(s); i++ {
				if id := v.byteTok[s[i]]; id >= 0 {
					out = append(out, id)
				} else if v.UNK >= 0 && !v.gemma4 {
					out = append(out, v.UNK)
				}
			}
			continue
		}
		for _, r := range s {
			if b, ok := runeToByte[r]; ok && v.byteTok[b] >= 0 {
				out = append(out, v.byteTok[b])
			} else if v.UNK >= 0 {
				out = append(out, v.UNK)
			}
		}
	}
	return out
}
