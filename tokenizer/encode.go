package tokenizer

import "strings"

// fragment is a piece of input: raw text, or an already-identified special token.
type fragment struct {
	text string
	id   int32 // -1 for text
}

// partition splits text around special tokens, longest first (llama.cpp's
// tokenizer_st_partition). Control and unknown tokens are only recognised
// when parseSpecial is set; user-defined tokens always are.
func (v *Vocab) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text, -1}}
	for _, id := range v.special {
		if !parseSpecial && v.Types[id] != UserDefined {
			continue
		}
		tok := v.Tokens[id]
		var next []fragment
		for _, f := range frags {
			if f.id >= 0 || !strings.Contains(f.text, tok) {
				next = append(next, f)
				continue
			}
			rest := f.text
			for {
				i := strings.Index(rest, tok)
				if i < 0 {
					break
				}
				if i > 0 {
					next = append(next, fragment{rest[:i], -1})
				}
				next = append(next, fragment{"", id})
				rest = rest[i+len(tok):]
			}
			if rest != "" {
				next = append(next, fragment{rest, -1})
			}
		}
		frags = next
	}
	return frags
}

// ControlTexts returns the texts of the tokens that Encode recognizes only
// when parseSpecial is set, and that EncodeParts recognizes only in Special
// parts: control and unknown tokens (user-defined tokens are recognized
// either way), longest first.
func (v *Vocab) ControlTexts() []string {
	var out []string
	for _, id := range v.special {
		if v.Types[id] != UserDefined {
			out = append(out, v.Tokens[id])
		}
	}
	return out
}

// Encode tokenizes text. addSpecial adds BOS/EOS as the vocabulary asks;
// parseSpecial maps the text of control tokens to their ids.
func (v *Vocab) Encode(text string, addSpecial, parseSpecial bool) []int32 {
	return v.encode(v.partition(text, parseSpecial), addSpecial)
}

// Part is a piece of text to encode; special tokens are recognized in it
// only when Special is set.
type Part struct {
	Text    string
	Special bool
}

// EncodeParts tokenizes the concatenation of parts, recognizing control
// tokens only inside parts marked Special: a chat template's own text is
// Special, the messages' text is not, so a message that contains
// "<|im_end|>" stays text. Text on both sides of a part boundary is
// tokenized as one piece, as if it were one string.
func (v *Vocab) EncodeParts(parts []Part, addSpecial bool) []int32 {
	var frags []fragment
	for _, p := range parts {
		for _, f := range v.partition(p.Text, p.Special) {
			if n := len(frags); f.id < 0 && n > 0 && frags[n-1].id < 0 {
				frags[n-1].text += f.text
				continue
			}
			frags = append(frags, f)
		}
	}
	return v.encode(frags, addSpecial)
}

func (v *Vocab) encode(frags []fragment, addSpecial bool) []int32 {
	var out []int32
	if addSpecial && v.AddBOS && v.BOS >= 0 {
		out = append(out, v.BOS)
	}
	prevSpecial := true // SPM: a space prefix goes before the first text
	for _, f := range frags {
		if f.id >= 0 {
			out = append(out, f.id)
			prevSpecial = true
			continue
		}
		switch v.Kind {
		case SPM:
			t := f.text
			if v.AddSpacePrefix && prevSpecial {
				t = " " + t
			}
			out = v.spmEncode(escapeSpaces(t), out)
		case WPM:
			out = v.wpmEncode(f.text, out)
		default:
			out = v.bpeEncode(f.text, out)
		}
		prevSpecial = false
	}
	if addSpecial && v.AddEOS && v.EOS >= 0 {
		out = append(out, v.EOS)
	}
	return out
}

// Piece returns the bytes token id stands for. Control tokens render as
// their text only when special is set.
func (v *Vocab) Piece(id int32, special bool) []byte {
	return v.AppendPiece(nil, id, special)
}

// AppendPiece appends the bytes of token id to dst.
func (v *Vocab) AppendPiece(dst []byte, id int32, special bool) []byte {
	if id < 0 || int(id) >= len(v.Tokens) {
		return dst
	}
	t := v.Tokens[id]
	switch v.Types[id] {
	case Control, Unknown, Unused:
		if !special {
			return dst
		}
		return append(dst, t...)
	case UserDefined:
		return append(dst, t...)
	case Byte:
		if len(t) == 6 && strings.HasPrefix(t, "<0x") {
			if b, ok := parseHexByte(t[3:5]); ok {
				return append(dst, b)
			}
		}
	}
	if v.Kind == SPM || v.Kind == WPM || v.spaceMark {
		return append(dst, wpmPiece(t)...)
	}
	return byteDecode(dst, t)
}

func parseHexByte(s string) (byte, bool) {
	var b byte
	for i := 0; i < 2; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}

// Decode renders ids as text (special tokens omitted).
func (v *Vocab) Decode(ids []int32) string {
	var b []byte
	for _, id := range ids {
		b = v.AppendPiece(b, id, false)
	}
	return string(b)
}
