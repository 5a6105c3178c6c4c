package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// byteVocab is a tiny SPM vocabulary with byte tokens.
func byteVocab(t *testing.T) *Vocab {
	v := &Vocab{Kind: SPM, BOS: 1, EOS: 2, UNK: 0, EOT: -1, PAD: -1, AddBOS: true, AddSpacePrefix: true}
	v.Tokens = []string{"<unk>", "<s>", "</s>", "\u2581a", "b", "\u2581"}
	v.Types = []TokenType{Unknown, Control, Control, Normal, Normal, Normal}
	for b := range 256 {
		v.Tokens = append(v.Tokens, "<0x"+strings.ToUpper(string("0123456789abcdef"[b>>4])+string("0123456789abcdef"[b&15]))+">")
		v.Types = append(v.Types, Byte)
	}
	v.Scores = make([]float32, len(v.Tokens))
	if err := v.init(); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestStreamUTF8(t *testing.T) {
	v := byteVocab(t)
	ids := v.Encode("a☕b", false, false) // ▁a, then ☕ as three byte tokens, b
	if len(ids) != 5 {
		t.Fatalf("ids %v", ids)
	}
	s := v.NewStream(false)
	var parts []string
	for _, id := range ids {
		parts = append(parts, s.Add(id))
	}
	parts = append(parts, s.Flush())
	if got := strings.Join(parts, ""); got != " a☕b" {
		t.Fatalf("text %q", got)
	}
	if parts[1] != "" || parts[2] != "" || parts[3] != "☕" {
		t.Fatalf("partial character emitted early: %q", parts)
	}
	// An invalid byte sequence never yields invalid UTF-8.
	s = v.NewStream(false)
	out := s.Add(v.byteTok[0xE2]) + s.Add(v.byteTok['x']) + s.Flush()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 %q", out)
	}
}

func TestStreamAfterBOS(t *testing.T) {
	v := byteVocab(t)
	s := v.NewStream(true)
	if got := s.Add(3); got != "a" {
		t.Fatalf("first piece after BOS %q, want the space dropped", got)
	}
}

func FuzzEncodeDecode(f *testing.F) {
	f.Add("hello world")
	f.Add("\xff\xfe\xe2\x98")
	f.Fuzz(func(t *testing.T, s string) {
		v := byteVocab(t)
		ids := v.Encode(s, true, true)
		st := v.NewStream(true)
		var out strings.Builder
		for _, id := range ids {
			piece := st.Add(id)
			if !utf8.ValidString(piece) {
				t.Fatalf("stream emitted invalid UTF-8 %q", piece)
			}
			out.WriteString(piece)
		}
		out.WriteString(st.Flush())
		if utf8.ValidString(s) && !strings.Contains(s, "<") && out.String() != s {
			t.Fatalf("round trip %q -> %q", s, out.String())
		}
	})
}

// FuzzRealVocabs: arbitrary bytes (invalid UTF-8 included) through a real
// SPM and a real byte-level BPE vocabulary: no panic, streaming output is
// valid UTF-8, and valid input round-trips.
func FuzzRealVocabs(f *testing.F) {
	f.Add("Hello, y'all! 🦙 3.33")
	f.Add("\xe2\x98")
	f.Add("   \n\t<s></s><|endoftext|>")
	vocabs := realVocabs(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, v := range vocabs {
			ids := v.Encode(s, false, true)
			st := v.NewStream(true)
			var out strings.Builder
			for _, id := range ids {
				p := st.Add(id)
				if !utf8.ValidString(p) {
					t.Fatalf("invalid UTF-8 %q", p)
				}
				out.WriteString(p)
			}
			out.WriteString(st.Flush())
			if utf8.ValidString(s) && !strings.Contains(s, "<") && out.String() != s {
				t.Fatalf("%s: %q -> %q", v.Kind, s, out.String())
			}
		}
	})
}
