package tokenizer

import "unicode/utf8"

// Stream turns generated ids into text as they arrive, holding back the
// bytes of a UTF-8 character split across tokens until it is complete, so
// every string it returns is valid UTF-8 (invalid bytes become U+FFFD).
type Stream struct {
	v        *Vocab
	pending  []byte
	afterBOS bool
}

// NewStream starts a stream; afterBOS says the text so far is only BOS, so
// an SPM vocabulary's leading space on the first piece is dropped (as
// llama.cpp and llama2.c do).
func (v *Vocab) NewStream(afterBOS bool) *Stream {
	return &Stream{v: v, afterBOS: afterBOS && (v.Kind == SPM || v.spaceMark) && v.AddSpacePrefix}
}

// Add appends token id and returns the text that is now complete.
func (s *Stream) Add(id int32) string {
	start := len(s.pending)
	s.pending = s.v.AppendPiece(s.pending, id, false)
	if s.afterBOS && len(s.pending) > start {
		if s.pending[start] == ' ' {
			s.pending = append(s.pending[:start], s.pending[start+1:]...)
		}
		s.afterBOS = false
	}
	// Emit everything up to the last incomplete sequence at the end.
	n := completePrefix(s.pending)
	out := validString(s.pending[:n])
	s.pending = append(s.pending[:0], s.pending[n:]...)
	return out
}

// Flush returns whatever is held back (invalid bytes replaced).
func (s *Stream) Flush() string {
	out := validString(s.pending)
	s.pending = s.pending[:0]
	return out
}

// completePrefix is the length of b without a trailing incomplete (but so
// far valid) UTF-8 sequence.
func completePrefix(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < 0x80 {
			return len(b)
		}
		if c >= 0xc0 { // lead byte
			if utf8Len(c) > back && utf8.FullRune(b[len(b)-back:]) == false {
				return len(b) - back
			}
			return len(b)
		}
	}
	return len(b)
}

func validString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]rune, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		out = append(out, r)
		b = b[size:]
	}
	return string(out)
}
