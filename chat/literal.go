package chat

// Request text stays text: every string of a chat request that holds
// control-token text is rendered with per-render placeholders in its place,
// and each placeholder is tokenized as the original text. Only what the
// template itself writes can become a control token.

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/loom-inference/loom/jinja"
	"github.com/loom-inference/loom/tokenizer"
)

// controlSet is a vocabulary's control-token texts, indexed for matching:
// an Aho-Corasick automaton over the texts (to find them in request text
// in time linear in its length plus the matches) and one over the texts
// reversed (for a string's head).
type controlSet struct {
	v        *tokenizer.Vocab
	fwd, rev automaton
	maxLen   int
}

// controls returns v's control set (cached for the last vocabulary used).
func (t *Template) controls(v *tokenizer.Vocab) *controlSet {
	if c := t.ctl.Load(); c != nil && c.v == v {
		return c
	}
	c := newControlSet(v.ControlTexts())
	c.v = v
	t.ctl.Store(c)
	return c
}

// newControlSet indexes texts (the empty one is ignored).
func newControlSet(texts []string) *controlSet {
	c := &controlSet{}
	for _, s := range texts {
		if s == "" {
			continue
		}
		c.maxLen = max(c.maxLen, len(s))
		r := []byte(s)
		slices.Reverse(r)
		c.fwd.add(s)
		c.rev.add(string(r))
	}
	c.fwd.link()
	c.rev.link()
	return c
}

// automaton is an Aho-Corasick automaton; node 0 is the root.
type automaton struct{ n []acNode }

type acNode struct {
	lo    byte    // kids[i] is the child by byte lo+i (0: none)
	kids  []int32 // empty: a leaf
	fail  int32   // the longest proper suffix that is a node
	dict  int32   // the longest proper suffix that is a text (0: none)
	depth int32
	term  bool // a whole text
}

func (a *automaton) child(u int32, b byte) int32 {
	n := &a.n[u]
	if d := int(b) - int(n.lo); d >= 0 && d < len(n.kids) {
		return n.kids[d]
	}
	return 0
}

func (a *automaton) add(s string) {
	if len(a.n) == 0 {
		a.n = []acNode{{}}
	}
	u := int32(0)
	for i := 0; i < len(s); i++ {
		b := s[i]
		v := a.child(u, b)
		if v == 0 {
			v = int32(len(a.n))
			a.n = append(a.n, acNode{depth: int32(i + 1)})
			n := &a.n[u]
			switch {
			case len(n.kids) == 0:
				n.lo, n.kids = b, []int32{v}
			case b < n.lo:
				n.kids = append(make([]int32, int(n.lo)-int(b)), n.kids...)
				n.lo = b
				n.kids[0] = v
			default:
				for int(b)-int(n.lo) >= len(n.kids) {
					n.kids = append(n.kids, 0)
				}
				n.kids[int(b)-int(n.lo)] = v
			}
		}
		u = v
	}
	a.n[u].term = true
}

// link sets the fail and dict links (breadth first).
func (a *automaton) link() {
	if len(a.n) == 0 {
		a.n = []acNode{{}}
	}
	queue := []int32{0}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for i, v := range a.n[u].kids {
			if v == 0 {
				continue
			}
			b := a.n[u].lo + byte(i)
			f := int32(0)
			if u != 0 {
				f = a.step(a.n[u].fail, b)
			}
			a.n[v].fail = f
			if a.n[f].term {
				a.n[v].dict = f
			} else {
				a.n[v].dict = a.n[f].dict
			}
			queue = append(queue, v)
		}
	}
}

// step is the state after u reads b (amortized O(1) over a scan).
func (a *automaton) step(u int32, b byte) int32 {
	for {
		if v := a.child(u, b); v != 0 {
			return v
		}
		if u == 0 {
			return 0
		}
		u = a.n[u].fail
	}
}

// proper is the depth of the longest suffix of u's text that is a proper
// prefix of a text (a node with children).
func (a *automaton) proper(u int32) int {
	for u != 0 && len(a.n[u].kids) == 0 {
		u = a.n[u].fail
	}
	return int(a.n[u].depth)
}

// at is the length of the longest control text at the start of s (0: none).
func (c *controlSet) at(s string) int {
	a, n := &c.fwd, 0
	for i, u := 0, int32(0); i < len(s); i++ {
		if u = a.child(u, s[i]); u == 0 {
			break
		}
		if a.n[u].term {
			n = i + 1
		}
	}
	return n
}

// scan calls f with the control texts of s, left to right: at each
// position the longest control text there, then on past it (the spans at
// would find, stepping one byte where it finds none). Time: len(s) plus
// the matches.
func (c *controlSet) scan(s string, f func(i, n int)) {
	m := c.maxLen
	if m == 0 {
		return
	}
	a := &c.fwd
	best := make([]int32, m) // the longest text starting at i, at i%m
	next := 0                // where the next text may start
	decide := func(i int) {  // no text starting at i is still unseen
		if n := int(best[i%m]); n > 0 {
			if i >= next {
				f(i, n)
				next = i + n
			}
			best[i%m] = 0
		}
	}
	u := int32(0)
	for e := 0; e < len(s); e++ {
		u = a.step(u, s[e])
		t := u
		if !a.n[t].term {
			t = a.n[t].dict
		}
		for ; t != 0; t = a.n[t].dict {
			n := a.n[t].depth
			if k := (e + 1 - int(n)) % m; n > best[k] {
				best[k] = n
			}
		}
		if i := e - m + 1; i >= 0 {
			decide(i)
		}
	}
	for i := max(0, len(s)-m+1); i < len(s); i++ {
		decide(i)
	}
}

// headLen is the length of the longest prefix of s that is a proper suffix
// of a control text (it would complete one after text that ends with the
// rest).
func (c *controlSet) headLen(s string) int {
	u := int32(0)
	for i := min(len(s), c.maxLen-1) - 1; i >= 0; i-- {
		u = c.rev.step(u, s[i])
	}
	return c.rev.proper(u)
}

// tailLen is the length of the longest suffix of s that is a proper prefix
// of a control text.
func (c *controlSet) tailLen(s string) int {
	u := int32(0)
	for i := len(s) - min(len(s), c.maxLen-1); i < len(s); i++ {
		u = c.fwd.step(u, s[i])
	}
	return c.fwd.proper(u)
}

// placeholderDigits is the width of a placeholder's index.
const placeholderDigits = 6

// maxPlaceholders is how many places in a request's strings may hold
// control text (or part of it at a string's edge); a request with more
// is refused (see overflowError).
const maxPlaceholders = 4096

// literalizer replaces control text in request strings with placeholders
// for one render and cuts the output at them.
type literalizer struct {
	c        *controlSet
	nonce    string         // random ASCII letters, upper and lower case
	orig     []string       // placeholder i stands for orig[i]
	index    map[string]int // orig's indices: equal text, equal placeholder
	count    int            // placeholders written (occurrences)
	overflow bool           // count passed maxPlaceholders
}

func newLiteralizer(c *controlSet) (*literalizer, error) {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	for i := range b {
		b[i] = letters[int(b[i])%len(letters)]
	}
	// Both cases, so |upper and |lower both change it.
	b[0], b[1] = 'a'+b[0]%26, 'A'+b[1]%26
	return &literalizer{c: c, nonce: string(b), index: map[string]int{}}, nil
}

// isSpace is whitespace as |trim and Python's str.strip() see it.
func isSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// text returns s with its control text (and a partial one at either edge)
// replaced by placeholders.
func (l *literalizer) text(s string) string {
	c := l.c
	if s == "" || c.maxLen == 0 {
		return s
	}
	if l.overflow { // refused anyway: spare the work
		return s
	}
	var spans [][2]int
	c.scan(s, func(i, n int) { spans = append(spans, [2]int{i, i + n}) })
	// The text before the first and after the last control text: its edges,
	// as given and as trimmed.
	head, tail := len(s), 0
	if len(spans) > 0 {
		head, tail = spans[0][0], spans[len(spans)-1][1]
	}
	for _, i := range []int{0, head - len(strings.TrimLeftFunc(s[:head], isSpace))} {
		if k := c.headLen(s[i:head]); k > 0 {
			spans = append(spans, [2]int{i, i + k})
		}
	}
	for _, j := range []int{len(s), tail + len(strings.TrimRightFunc(s[tail:], isSpace))} {
		if k := c.tailLen(s[tail:j]); k > 0 {
			spans = append(spans, [2]int{j - k, j})
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	var b strings.Builder
	at := 0
	for i := 0; i < len(spans) && !l.overflow; i++ {
		lo, hi := spans[i][0], spans[i][1]
		for i+1 < len(spans) && spans[i+1][0] < hi { // overlapping edges
			i++
			hi = max(hi, spans[i][1])
		}
		b.WriteString(s[at:lo])
		b.WriteString(l.placeholder(s[lo:hi]))
		at = hi
	}
	b.WriteString(s[at:])
	return b.String()
}

// placeholder stands for orig; the same text gets the same placeholder,
// so the template's comparisons (a property name "in" the required list)
// come out as they do for the original text.
func (l *literalizer) placeholder(orig string) string {
	if l.count++; l.count > maxPlaceholders { // also keeps i within placeholderDigits
		l.overflow = true
	}
	i, ok := l.index[orig]
	if !ok {
		i = len(l.orig)
		l.orig = append(l.orig, orig)
		l.index[orig] = i
	}
	return fmt.Sprintf("%s%0*d", l.nonce, placeholderDigits, i)
}

// overflowError is the error for a request refused for holding control
// text in more than maxPlaceholders places (nil if it is not).
func (l *literalizer) overflowError() error {
	if !l.overflow {
		return nil
	}
	return fmt.Errorf("engine: the request holds control-token text (or part of it at a string's edge) in more than %d places; remove that text from the request", maxPlaceholders)
}

// value replaces the strings in a template value (a copy is made where
// anything changes; dict keys too).
func (l *literalizer) value(v any) any {
	switch x := v.(type) {
	case string:
		return l.text(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = l.value(e)
		}
		return out
	case jinja.Tuple:
		out := make(jinja.Tuple, len(x))
		for i, e := range x {
			out[i] = l.value(e)
		}
		return out
	case *jinja.Dict:
		out := jinja.NewDict()
		for _, k := range x.Keys() {
			e, _ := x.Get(k)
			if s, ok := k.(string); ok {
				k = l.text(s)
			}
			out.Set(k, l.value(e))
		}
		return out
	}
	return v
}

// piece is a piece of the placeholder render: the template's text, or a
// placeholder (ph >= 0).
type piece struct {
	text string
	ph   int
}

// split cuts a render at the placeholders (a mangled one stays in the
// template's text, which then matches no plain render).
func (l *literalizer) split(out string) []piece {
	var ps []piece
	special := 0 // start of the pending template text
	for i := 0; ; {
		k := strings.Index(out[i:], l.nonce)
		if k < 0 {
			break
		}
		at := i + k
		j := at + len(l.nonce)
		n, ok := 0, j+placeholderDigits <= len(out)
		for d := j; ok && d < j+placeholderDigits; d++ {
			ok = out[d] >= '0' && out[d] <= '9'
			n = n*10 + int(out[d]-'0')
		}
		if !ok || n >= len(l.orig) {
			i = j
			continue
		}
		if at > special {
			ps = append(ps, piece{out[special:at], -1})
		}
		ps = append(ps, piece{"", n})
		i = j + placeholderDigits
		special = i
	}
	if special < len(out) {
		ps = append(ps, piece{out[special:], -1})
	}
	return ps
}

// match lays the pieces over the plain render: the template's text must
// be there verbatim, in order, and each placeholder must stand for its
// original text, or for that text as an escaping filter writes it (|e,
// Markup concatenation, tojson with ensure_ascii) — the template escaped
// the placeholder too, which escaping leaves as it is. The parts are the
// template's text (Special) and the original's text (not Special), so
// only the template's text can hold control tokens, exactly those of the
// placeholder render, and the tokens spell the plain render.
func (l *literalizer) match(ps []piece, plain string) ([]tokenizer.Part, bool) {
	// A depth-first search in piece order, trying a placeholder's encodings
	// in order, remembering where it failed; iterative, with a frame per
	// piece laid so far (the template's text offers one way on, so only
	// placeholders branch).
	choice := make([]string, len(ps))
	failed := map[[2]int]bool{}
	encs := map[int][]string{}
	type frame struct{ at, alt int } // alt: the next alternative to try
	stack := []frame{{0, 0}}         // stack[k]: piece k, laid at at
	for {
		k := len(stack) - 1
		if k < 0 {
			return nil, false
		}
		f := stack[k]
		if k == len(ps) {
			if f.at == len(plain) {
				break
			}
			stack = stack[:k]
			continue
		}
		if f.alt == 0 && failed[[2]int{k, f.at}] {
			stack = stack[:k]
			continue
		}
		var alts []string
		if p := ps[k]; p.ph < 0 {
			alts = []string{p.text}
		} else {
			if encs[p.ph] == nil {
				encs[p.ph] = encodings(l.orig[p.ph])
			}
			alts = encs[p.ph]
		}
		for f.alt < len(alts) && !strings.HasPrefix(plain[f.at:], alts[f.alt]) {
			f.alt++
		}
		if f.alt == len(alts) {
			failed[[2]int{k, f.at}] = true
			stack = stack[:k]
			continue
		}
		choice[k] = alts[f.alt]
		stack[k].alt = f.alt + 1
		stack = append(stack, frame{f.at + len(alts[f.alt]), 0})
	}
	parts := make([]tokenizer.Part, len(ps))
	for k, p := range ps {
		if p.ph < 0 {
			parts[k] = tokenizer.Part{Text: p.text, Special: true}
		} else {
			parts[k] = tokenizer.Part{Text: choice[k]}
		}
	}
	return parts, true
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// encodings are s as it is and as the escaping filters write it: HTML
// (markupsafe), JSON string contents (json.dumps, ASCII-only or not), and
// HTML of those.
func encodings(s string) []string {
	out := []string{s}
	add := func(e string) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	for _, e := range []string{jsonInner(s, false), jsonInner(s, true)} {
		add(e)
	}
	for _, e := range slices.Clone(out) {
		add(htmlEscaper.Replace(e))
	}
	return out
}

// jsonInner is s inside a JSON string as the template's tojson writes it.
func jsonInner(s string, ascii bool) string {
	q := jinja.JSONQuote(s, ascii)
	return q[1 : len(q)-1]
}
