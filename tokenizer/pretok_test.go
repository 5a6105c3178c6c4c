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
