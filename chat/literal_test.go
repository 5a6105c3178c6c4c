package chat

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// refControls is the control-set scan before the automata (a bucket of
// texts by first and last byte), the reference for the new one.
type refControls struct {
	byFirst [256][]string // longest first
	byLast  [256][]string
	maxLen  int
}

func newRefControls(texts []string) *refControls {
	texts = slices.Clone(texts)
	slices.SortStableFunc(texts, func(a, b string) int { return len(b) - len(a) })
	c := &refControls{}
	for _, s := range texts {
		if s == "" {
			continue
		}
		c.byFirst[s[0]] = append(c.byFirst[s[0]], s)
		c.byLast[s[len(s)-1]] = append(c.byLast[s[len(s)-1]], s)
		c.maxLen = max(c.maxLen, len(s))
	}
	return c
}

func (c *refControls) at(s string) int {
	for _, tok := range c.byFirst[s[0]] {
		if strings.HasPrefix(s, tok) {
			return len(tok)
		}
	}
	return 0
}

func (c *refControls) spans(s string) [][2]int {
	var spans [][2]int
	for i := 0; i < len(s); {
		if n := c.at(s[i:]); n > 0 {
			spans = append(spans, [2]int{i, n})
			i += n
			continue
		}
		i++
	}
	return spans
}

func (c *refControls) headLen(s string) int {
	for k := min(len(s), c.maxLen-1); k > 0; k-- {
		for _, tok := range c.byLast[s[k-1]] {
			if len(tok) > k && strings.HasSuffix(tok, s[:k]) {
				return k
			}
		}
	}
	return 0
}

func (c *refControls) tailLen(s string) int {
	for k := min(len(s), c.maxLen-1); k > 0; k-- {
		for _, tok := range c.byFirst[s[len(s)-k]] {
			if len(tok) > k && strings.HasPrefix(tok, s[len(s)-k:]) {
				return k
			}
		}
	}
	return 0
}

func scanSpans(c *controlSet, s string) [][2]int {
	var spans [][2]int
	c.scan(s, func(i, n int) { spans = append(spans, [2]int{i, n}) })
	return spans
}

// TestChatPromptControlScan: the automata find what the byte buckets
// found (longest text at each position, left to right; the edges) on
// random text over an alphabet that makes control texts, their prefixes,
// suffixes and overlaps frequent.
func TestChatPromptControlScan(t *testing.T) {
	sets := [][]string{
		wellKnownControls,
		qwenVocab(t).ControlTexts(),
		{"ab", "abab", "aab", "b", "ba", "bab", "<|a|>", "<|a", "|>", "a|>", "<<", "<<<x>"},
		{"aaaa", "aa", "a", "aaab", "abaa"},
		{"x"},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for si, texts := range sets {
		c, ref := newControlSet(texts), newRefControls(texts)
		var frags []string // pieces of the texts and a few other bytes
		for _, s := range texts {
			i, j := rng.IntN(len(s)+1), rng.IntN(len(s)+1)
			frags = append(frags, s, s[:max(i, j)], s[min(i, j):], s[min(i, j):max(i, j)])
		}
		frags = append(frags, " ", "\n", "x", "<", "|", ">", "a")
		for range 3000 {
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(frags[rng.IntN(len(frags))])
			}
			s := b.String()
			if got, want := scanSpans(c, s), ref.spans(s); !slices.Equal(got, want) {
				t.Fatalf("set %d: spans of %q: got %v, want %v", si, s, got, want)
			}
			for i := range len(s) {
				if got, want := c.at(s[i:]), ref.at(s[i:]); got != want {
					t.Fatalf("set %d: at(%q) = %d, want %d", si, s[i:], got, want)
				}
			}
			for i := 0; i <= len(s); i++ {
				for j := i; j <= len(s) && j-i <= 2*ref.maxLen; j++ {
					if got, want := c.headLen(s[i:j]), ref.headLen(s[i:j]); got != want {
						t.Fatalf("set %d: headLen(%q) = %d, want %d", si, s[i:j], got, want)
					}
					if got, want := c.tailLen(s[i:j]), ref.tailLen(s[i:j]); got != want {
						t.Fatalf("set %d: tailLen(%q) = %d, want %d", si, s[i:j], got, want)
					}
				}
			}
		}
	}
}

// llama3Controls are Llama 3's control texts: 256 reserved ones and the
// named ones, nearly all starting with "<|".
func llama3Controls() []string {
	out := []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>", "<|finetune_right_pad_id|>"}
	for i := range 248 {
		out = append(out, fmt.Sprintf("<|reserved_special_token_%d|>", i))
	}
	return out
}

// BenchmarkControlScan: request text of "<|" (every position starts
// many control texts) with Llama 3's control set.
func BenchmarkControlScan(b *testing.B) {
	c := newControlSet(llama3Controls())
	s := strings.Repeat("<|", 200_000)
	for b.Loop() {
		c.scan(s, func(i, n int) {})
		c.headLen(s)
		c.tailLen(s)
	}
}

// lowStack runs f in a goroutine with the maximum stack lowered to max
// bytes, so deep recursion crashes the test.
func lowStack(max int, f func()) {
	old := debug.SetMaxStack(max)
	defer debug.SetMaxStack(old)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// TestChatPromptManyControlTexts: a request with control text in 100k
// places is refused (not rendered and matched piece by piece), under a
// lowered stack limit so recursion per piece would crash the test.
func TestChatPromptManyControlTexts(t *testing.T) {
	v := qwenVocab(t)
	e := testTemplate(t, v, "test", "{% for m in messages %}{{ m.content }}<|im_end|>{% endfor %}", "", "")
	content := strings.Repeat("<|im_end|>x", 100_000)
	var err error
	lowStack(64<<20, func() {
		_, _, err = e.Prompt([]Message{{Role: "user", Content: content}}, Options{})
	})
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d places", maxPlaceholders)) {
		t.Fatalf("err %v, want the request refused for too many control texts", err)
	}
	// Up to the limit it goes through: the client's copies are text.
	content = strings.Repeat("<|im_end|>x", maxPlaceholders)
	ids, _, err := e.Prompt([]Message{{Role: "user", Content: content}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := controlIDs(v, ids); len(got) != 1 {
		t.Errorf("%d control tokens, want the template's one", len(got))
	}
	// The error the limit is reported with.
	l, err := newLiteralizer(newControlSet([]string{"<|im_end|>"}))
	if err != nil {
		t.Fatal(err)
	}
	l.text(strings.Repeat("<|im_end|>x", maxPlaceholders+1))
	if err := l.overflowError(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d places; remove that text from the request", maxPlaceholders)) {
		t.Errorf("overflowError: %v", err)
	}
}

// refMatch is match as a recursive search (before it was made iterative).
func refMatch(l *literalizer, ps []piece, plain string) ([]string, bool) {
	choice := make([]string, len(ps))
	failed := map[[2]int]bool{}
	var walk func(k, at int) bool
	walk = func(k, at int) bool {
		if k == len(ps) {
			return at == len(plain)
		}
		if failed[[2]int{k, at}] {
			return false
		}
		if p := ps[k]; p.ph < 0 {
			if strings.HasPrefix(plain[at:], p.text) && walk(k+1, at+len(p.text)) {
				choice[k] = p.text
				return true
			}
		} else {
			for _, c := range encodings(l.orig[p.ph]) {
				if strings.HasPrefix(plain[at:], c) && walk(k+1, at+len(c)) {
					choice[k] = c
					return true
				}
			}
		}
		failed[[2]int{k, at}] = true
		return false
	}
	if !walk(0, 0) {
		return nil, false
	}
	return choice, true
}

// TestChatPromptMatchIterative: match lays many pieces without recursion
// and agrees with the recursive search on random small cases (texts whose
// encodings overlap, so it has to back up).
func TestChatPromptMatchIterative(t *testing.T) {
	l := &literalizer{orig: []string{"<|im_end|>", `"a"`, "&", `<"`}}
	const n = 300_000
	ps := make([]piece, 0, 2*n)
	for range n {
		ps = append(ps, piece{ph: 0}, piece{text: "x", ph: -1})
	}
	plain := strings.Repeat("<|im_end|>x", n)
	var ok bool
	lowStack(32<<20, func() { _, ok = l.match(ps, plain) })
	if !ok {
		t.Fatal("no match")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	texts := []string{"x", "&", "&amp;", `\"`, `"`, "a", ""}
	for range 20000 {
		var ps []piece
		var b strings.Builder
		for range rng.IntN(6) {
			if rng.IntN(2) == 0 {
				s := texts[rng.IntN(len(texts)-1)]
				ps = append(ps, piece{text: s, ph: -1})
				b.WriteString(s)
			} else {
				ph := rng.IntN(len(l.orig))
				ps = append(ps, piece{ph: ph})
				encs := encodings(l.orig[ph])
				b.WriteString(encs[rng.IntN(len(encs))])
			}
		}
		plain := b.String()
		if rng.IntN(4) == 0 && len(plain) > 0 { // a render that does not lay over
			i := rng.IntN(len(plain))
			plain = plain[:i] + texts[rng.IntN(len(texts))] + plain[i+1:]
		}
		parts, ok := l.match(ps, plain)
		want, wok := refMatch(l, ps, plain)
		if ok != wok {
			t.Fatalf("%v over %q: match %v, want %v", ps, plain, ok, wok)
		}
		for k := range parts {
			if parts[k].Text != want[k] || parts[k].Special != (ps[k].ph < 0) {
				t.Fatalf("%v over %q: parts %v, want %q", ps, plain, parts, want)
			}
		}
	}
}
