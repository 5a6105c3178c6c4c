package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// WordPiece (BERT) as llama.cpp's llm_tokenizer_wpm runs it: each code
// point replaced by the first code point of its canonical decomposition
// (llama.cpp's one-to-one NFD table: "é" becomes "e", a Hangul syllable
// its leading consonant; combining marks already in the text stay), lower
// case, control and format characters (zero-width spaces and joiners, soft
// hyphens) dropped, split on whitespace and around punctuation, ASCII
// symbols and CJK characters; then each word, prefixed with '▁' (how GGUF
// marks a word start; continuation pieces are stored without BERT's "##"),
// is matched greedily longest-first. A word with an unmatched remainder
// becomes UNK.

func isCJK(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) || (r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) || (r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) || (r >= 0x2F800 && r <= 0x2FA1F)
}

func wpmWords(text string) []string {
	words := []string{""}
	for _, r := range text {
		if r >= 0x80 {
			if d := norm.NFD.String(string(r)); d != "" {
				r, _ = utf8.DecodeRuneInString(d)
			}
		}
		if isSpace(r) {
			if words[len(words)-1] != "" {
				words = append(words, "")
			}
			continue
		}
		if r == 0 || r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
			continue
		}
		s := string(unicode.ToLower(r))
		if unicode.IsPunct(r) || (r < 0x7f && unicode.IsSymbol(r)) || isCJK(r) {
			if words[len(words)-1] != "" {
				words = append(words, "")
			}
			words[len(words)-1] = s
			words = append(words, "")
			continue
		}
		words[len(words)-1] += s
	}
	if words[len(words)-1] == "" {
		words = words[:len(words)-1]
	}
	return words
}

func (v *Vocab) wpmEncode(text string, out []int32) []int32 {
	maxLen := 0
	for _, t := range v.Tokens {
		maxLen = max(maxLen, len(t))
	}
	for _, w := range wpmWords(text) {
		word := "\u2581" + w
		start := len(out)
		ok := true
		for i := 0; i < len(word); {
			found := false
			for j := min(len(word), i+maxLen+1); j > i; j-- {
				if id, hit := v.ids[word[i:j]]; hit {
					out = append(out, id)
					i = j
					found = true
					break
				}
			}
			if !found {
				ok = false
				break
			}
		}
		if !ok {
			out = append(out[:start], v.UNK)
		}
	}
	return out
}

// wpmPiece renders a WordPiece token: word starts get their space back.
func wpmPiece(t string) string { return strings.ReplaceAll(t, "\u2581", " ") }
