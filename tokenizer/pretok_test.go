package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// FuzzPreTokenizers: every pre-tokenizer splits any text into non-empty
// pieces that put together give the text back, in linear work.
func FuzzPreTokenizers(f *testing.F) {
	for _, s := range []string{"Hello, y'all! 🦙 3.33", "ÉCOLE École I'M don't", "中Abc a中B ABC中文def", "  \n\n\t x\u3000y", "x//\n/ ?/\r\n", "\xff\xfe"} {
		f.Add(s)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range preTokenizers {
			if !yield(k) {
				return
			}
		}
	})
	f.Fuzz(func(t *testing.T, s string) {
		text := []rune(s)
		for _, name := range names {
			pieces := preTokenizers[name](text)
			var b strings.Builder
			for _, p := range pieces {
				if len(p) == 0 {
					t.Fatalf("%s: empty piece in %q", name, s)
				}
				b.WriteString(string(p))
			}
			if b.String() != string(text) {
				t.Fatalf("%s: %q splits into %q", name, s, pieces)
			}
		}
	})
}

// TestO200kLongRuns: long runs of each character class stay linear (the
// backtracking the scanner stands for is not repeated per token).
func TestO200kLongRuns(t *testing.T) {
	for _, s := range []string{strings.Repeat("É", 1<<16), strings.Repeat("ÉA", 1<<15), strings.Repeat("A", 1<<16) + "é",
		strings.Repeat(" ", 1<<16) + "x", strings.Repeat("!/", 1<<15), strings.Repeat("1", 1<<16)} {
		for _, p := range []preTokenizer{o200kSplit(true, 3), o200kSplit(false, 1)} {
			n := 0
			for _, w := range p([]rune(s)) {
				n += len(w)
			}
			if n != len([]rune(s)) {
				t.Fatalf("%d runes of %d", n, len([]rune(s)))
			}
		}
	}
}

// TestQwen35Marks: Qwen3.5's split keeps combining marks inside letter
// runs where Qwen2's breaks them off (llama.cpp's
// unicode_regex_split_custom_qwen35 against _qwen2).
func TestQwen35Marks(t *testing.T) {
	for _, c := range []struct {
		text          string
		qwen2, qwen35 []string
	}{
		{"e\u0301cole", []string{"e", "\u0301cole"}, []string{"e\u0301cole"}},
		{"x \u0301y", []string{"x", " \u0301", "y"}, []string{"x", " \u0301y"}},
		{"a.\u0301", []string{"a", ".\u0301"}, []string{"a", ".\u0301"}},
		{"Hi there, 42!", []string{"Hi", " there", ",", " ", "4", "2", "!"}, []string{"Hi", " there", ",", " ", "4", "2", "!"}},
	} {
		for name, want := range map[string][]string{"qwen2": c.qwen2, "qwen35": c.qwen35} {
			var got []string
			for _, p := range preTokenizers[name]([]rune(c.text)) {
				got = append(got, string(p))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %q: %q, want %q", name, c.text, got, want)
			}
		}
	}
}
