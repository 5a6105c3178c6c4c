package engine

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
	"unicode/utf16"

	"github.com/loom-inference/loom/jinja"
	"github.com/loom-inference/loom/tokenizer"
)

// controlSet is a vocabulary's control-token texts, indexed for matching.
type controlSet struct {
	v       *tokenizer.Vocab
	byFirst [256][]string // by first byte, longest first
	byLast  [256][]string // by last byte, longest first
	maxLen  int
}

// controls returns v's control set (cached for the last vocabulary used).
func (t *ChatTemplate) controls(v *tokenizer.Vocab) *controlSet {
	if c := t.ctl.Load(); c != nil && c.v == v {
		return c
	}
	c := &controlSet{v: v}
	for _, s := range v.ControlTexts() { // longest first
		c.byFirst[s[0]] = append(c.byFirst[s[0]], s)
		c.byLast[s[len(s)-1]] = append(c.byLast[s[len(s)-1]], s)
		c.maxLen = max(c.maxLen, len(s))
	}
	t.ctl.Store(c)
	return c
}

// at is the length of the longest control text at the start of s (0: none).
func (c *controlSet) at(s string) int {
	for _, tok := range c.byFirst[s[0]] {
		if strings.HasPrefix(s, tok) {
			return len(tok)
		}
	}
	return 0
}

// headLen is the length of the longest prefix of s that is a proper suffix
// of a control text (it would complete one after text that ends with the
// rest).
func (c *controlSet) headLen(s string) int {
	for k := min(len(s), c.maxLen-1); k > 0; k-- {
		for _, tok := range c.byLast[s[k-1]] {
			if len(tok) > k && strings.HasSuffix(tok, s[:k]) {
				return k
			}
		}
	}
	return 0
}

// tailLen is the length of the longest suffix of s that is a proper prefix
// of a control text.
func (c *controlSet) tailLen(s string) int {
	for k := min(len(s), c.maxLen-1); k > 0; k-- {
		for _, tok := range c.byFirst[s[len(s)-k]] {
			if len(tok) > k && strings.HasPrefix(tok, s[len(s)-k:]) {
				return k
			}
		}
	}
	return 0
}

// placeholderDigits is the width of a placeholder's index.
const placeholderDigits = 6

// literalizer replaces control text in request strings with placeholders
// for one render and cuts the output at them.
type literalizer struct {
	c        *controlSet
	nonce    string         // random ASCII letters, upper and lower case
	orig     []string       // placeholder i stands for orig[i]
	index    map[string]int // orig's indices: equal text, equal placeholder
	overflow bool
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
	var spans [][2]int
	for i := 0; i < len(s); {
		if n := c.at(s[i:]); n > 0 {
			spans = append(spans, [2]int{i, i + n})
			i += n
			continue
		}
		i++
	}
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
	for i := 0; i < len(spans); i++ {
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
	i, ok := l.index[orig]
	if !ok {
		i = len(l.orig)
		if i >= 1_000_000 { // placeholderDigits
			l.overflow = true
		}
		l.orig = append(l.orig, orig)
		l.index[orig] = i
	}
	return fmt.Sprintf("%s%0*d", l.nonce, placeholderDigits, i)
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

// jsonInner is s inside a JSON string as Python's json.dumps writes it.
func jsonInner(s string, ascii bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || ascii && r > 0x7e:
			if r > 0xffff {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
