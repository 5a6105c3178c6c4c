package grammar

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// patternToGBNF converts a JSON Schema pattern (ECMA-262 subset: literals,
// escapes, '.', classes, \d \w \s and their negations, groups, '|',
// quantifiers) into a GBNF expression over the characters between a JSON
// string's quotes. Unanchored ends match anything, as JSON Schema says.
// Characters JSON must escape are produced escaped or not at all, so the
// output is always a valid JSON string whose value matches the pattern.
// Lookaround, backreferences and the like are refused.
func patternToGBNF(pat string) (string, error) {
	p := &patParser{src: pat}
	anchoredStart := strings.HasPrefix(pat, "^")
	if anchoredStart {
		p.pos = 1
	}
	body, err := p.alternation(0)
	if err != nil {
		return "", err
	}
	anchoredEnd := false
	if p.pos < len(p.src) && p.src[p.pos] == '$' && p.pos == len(p.src)-1 {
		anchoredEnd = true
		p.pos++
	}
	if p.pos != len(p.src) {
		return "", p.errf("unexpected %q", p.src[p.pos])
	}
	anyChar := "(" + classExpr(jsonSafe(fullRange())) + ")*"
	if !anchoredStart {
		body = anyChar + " (" + body + ")"
	}
	if !anchoredEnd {
		body = "(" + body + ") " + anyChar
	}
	return body, nil
}

type patParser struct {
	src string
	pos int
}

func (p *patParser) errf(format string, args ...any) error {
	src := p.src
	if len(src) > 80 {
		src = src[:80] + "…"
	}
	return fmt.Errorf("pattern %q at offset %d: %s", src, p.pos, fmt.Sprintf(format, args...))
}

// maxPatternNesting bounds group nesting (the converter recurses per
// group; the GBNF it makes nests one parenthesis per group, within Parse's
// default MaxNesting of 64).
const maxPatternNesting = 32

func (p *patParser) alternation(depth int) (string, error) {
	if depth > maxPatternNesting {
		return "", p.errf("groups nested deeper than %d", maxPatternNesting)
	}
	var alts []string
	for {
		seq, err := p.sequence(depth)
		if err != nil {
			return "", err
		}
		alts = append(alts, seq)
		if p.pos < len(p.src) && p.src[p.pos] == '|' {
			p.pos++
			continue
		}
		return strings.Join(alts, " | "), nil
	}
}

func (p *patParser) sequence(depth int) (string, error) {
	var items []string
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		if c == '|' || c == ')' || c == '$' && p.pos == len(p.src)-1 {
			break
		}
		atom, err := p.atom(depth)
		if err != nil {
			return "", err
		}
		q, err := p.quantifier()
		if err != nil {
			return "", err
		}
		atom += q // an atom is one GBNF item (literal, class or group)
		items = append(items, atom)
	}
	if len(items) == 0 {
		return `""`, nil
	}
	return strings.Join(items, " "), nil
}

func (p *patParser) quantifier() (string, error) {
	if p.pos >= len(p.src) {
		return "", nil
	}
	var q string
	switch c := p.src[p.pos]; c {
	case '*', '+', '?':
		q = string(c)
		p.pos++
	case '{':
		end := strings.IndexByte(p.src[p.pos:], '}')
		if end < 0 {
			return "", p.errf("unterminated {")
		}
		inner := p.src[p.pos+1 : p.pos+end]
		lo, hi, ok := strings.Cut(inner, ",")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if ok {
			b = -1
			if hi != "" {
				b, err2 = strconv.Atoi(hi)
			}
		}
		if err1 != nil || err2 != nil || a < 0 || ok && hi != "" && b < a {
			return "", p.errf("bad repetition {%s}", inner)
		}
		if a > 1000 || b > 1000 {
			return "", p.errf("repetition {%s} over 1000", inner)
		}
		p.pos += end + 1
		switch {
		case b < 0:
			q = fmt.Sprintf("{%d,}", a)
		case a == b:
			q = fmt.Sprintf("{%d}", a)
		default:
			q = fmt.Sprintf("{%d,%d}", a, b)
		}
	default:
		return "", nil
	}
	if p.pos < len(p.src) && p.src[p.pos] == '?' { // lazy: same language
		p.pos++
	}
	if p.pos < len(p.src) && strings.ContainsRune("*+?{", rune(p.src[p.pos])) {
		return "", p.errf("a quantifier cannot follow a quantifier")
	}
	return q, nil
}

func (p *patParser) atom(depth int) (string, error) {
	c := p.src[p.pos]
	switch c {
	case '(':
		p.pos++
		if strings.HasPrefix(p.src[p.pos:], "?:") {
			p.pos += 2
		} else if strings.HasPrefix(p.src[p.pos:], "?") {
			return "", p.errf("lookaround and named groups are not supported")
		}
		inner, err := p.alternation(depth + 1)
		if err != nil {
			return "", err
		}
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return "", p.errf("missing )")
		}
		p.pos++
		return "(" + inner + ")", nil
	case '[':
		rs, err := p.class()
		if err != nil {
			return "", err
		}
		return classExpr(jsonSafe(rs)), nil
	case '.':
		p.pos++
		return classExpr(jsonSafe(subtract(fullRange(), []rng{{'\n', '\n'}, {'\r', '\r'}}))), nil
	case '\\':
		rs, lit, err := p.escape(false)
		if err != nil {
			return "", err
		}
		if rs != nil {
			return classExpr(jsonSafe(rs)), nil
		}
		return literalExpr(lit), nil
	case '*', '+', '?', '{':
		return "", p.errf("nothing to repeat")
	case '^', '$':
		return "", p.errf("anchors are supported only at the pattern's ends")
	}
	r, n := utf8.DecodeRuneInString(p.src[p.pos:])
	p.pos += n
	return literalExpr(r), nil
}

// escape reads \X; it returns a class for \d \w \s (and negations) or a
// single character.
func (p *patParser) escape(inClass bool) ([]rng, rune, error) {
	if p.pos+1 >= len(p.src) {
		return nil, 0, p.errf("trailing backslash")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	digit := []rng{{'0', '9'}}
	word := []rng{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}
	space := []rng{{'\t', '\r'}, {' ', ' '}}
	switch c {
	case 'd':
		return digit, 0, nil
	case 'w':
		return word, 0, nil
	case 's':
		return space, 0, nil
	case 'D', 'W', 'S':
		if inClass {
			return nil, 0, p.errf(`\%c inside a class is not supported`, c)
		}
		m := map[byte][]rng{'D': digit, 'W': word, 'S': space}
		return subtract(fullRange(), m[c]), 0, nil
	case 'n':
		return nil, '\n', nil
	case 'r':
		return nil, '\r', nil
	case 't':
		return nil, '\t', nil
	case 'f':
		return nil, '\f', nil
	case 'v':
		return nil, '\v', nil
	case 'u':
		if p.pos+4 <= len(p.src) {
			if v, err := strconv.ParseUint(p.src[p.pos:p.pos+4], 16, 32); err == nil {
				p.pos += 4
				return nil, rune(v), nil
			}
		}
		return nil, 0, p.errf(`bad \u escape`)
	case 'x':
		if p.pos+2 <= len(p.src) {
			if v, err := strconv.ParseUint(p.src[p.pos:p.pos+2], 16, 32); err == nil {
				p.pos += 2
				return nil, rune(v), nil
			}
		}
		return nil, 0, p.errf(`bad \x escape`)
	}
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
		return nil, 0, p.errf(`escape \%c is not supported`, c)
	}
	return nil, rune(c), nil
}

func (p *patParser) class() ([]rng, error) {
	p.pos++ // [
	negate := false
	if p.pos < len(p.src) && p.src[p.pos] == '^' {
		negate = true
		p.pos++
	}
	var rs []rng
	first := true
	for {
		if p.pos >= len(p.src) {
			return nil, p.errf("unterminated class")
		}
		c := p.src[p.pos]
		if c == ']' && !first {
			p.pos++
			break
		}
		first = false
		var lo rune
		if c == '\\' {
			set, r, err := p.escape(true)
			if err != nil {
				return nil, err
			}
			if set != nil {
				rs = append(rs, set...)
				continue
			}
			lo = r
		} else {
			r, n := utf8.DecodeRuneInString(p.src[p.pos:])
			p.pos += n
			lo = r
		}
		hi := lo
		if p.pos+1 < len(p.src) && p.src[p.pos] == '-' && p.src[p.pos+1] != ']' {
			p.pos++
			if p.src[p.pos] == '\\' {
				set, r, err := p.escape(true)
				if err != nil || set != nil {
					return nil, p.errf("bad range end")
				}
				hi = r
			} else {
				r, n := utf8.DecodeRuneInString(p.src[p.pos:])
				p.pos += n
				hi = r
			}
			if hi < lo {
				return nil, p.errf("range out of order")
			}
		}
		rs = append(rs, rng{lo, hi})
	}
	rs = normalize(rs)
	if negate {
		rs = subtract(fullRange(), rs)
	}
	return rs, nil
}

type rng struct{ lo, hi rune }

func fullRange() []rng { return []rng{{0, utf8.MaxRune}} }

func normalize(rs []rng) []rng {
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo < rs[j].lo })
	var out []rng
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

func subtract(a, b []rng) []rng {
	a, b = normalize(append([]rng(nil), a...)), normalize(append([]rng(nil), b...))
	var out []rng
	for _, r := range a {
		lo := r.lo
		for _, x := range b {
			if x.hi < lo || x.lo > r.hi {
				continue
			}
			if x.lo > lo {
				out = append(out, rng{lo, x.lo - 1})
			}
			lo = x.hi + 1
		}
		if lo <= r.hi {
			out = append(out, rng{lo, r.hi})
		}
	}
	return out
}

// jsonSafe removes what may not appear raw inside a JSON string.
func jsonSafe(rs []rng) []rng {
	return subtract(rs, []rng{{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}})
}

func classExpr(rs []rng) string {
	if len(rs) == 0 {
		return "[^\\x00-\\U0010FFFF]" // matches nothing
	}
	var b strings.Builder
	b.WriteByte('[')
	for _, r := range rs {
		b.WriteString(classRune(r.lo))
		if r.hi != r.lo {
			b.WriteByte('-')
			b.WriteString(classRune(r.hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func classRune(r rune) string {
	if r > 0xFFFF {
		return fmt.Sprintf(`\U%08X`, r)
	}
	if r < 0x20 || r == 0x7F || r >= 0xD800 && r <= 0xDFFF || r > 0x7E && r < 0xA0 {
		return fmt.Sprintf(`\u%04X`, r)
	}
	return classChar(r)
}

// literalExpr matches the JSON spelling of one character of the value.
func literalExpr(r rune) string {
	switch r {
	case '"':
		return `"\\\""`
	case '\\':
		return `"\\\\"`
	case '\n':
		return `"\\n"`
	case '\r':
		return `"\\r"`
	case '\t':
		return `"\\t"`
	}
	if r < 0x20 || r == 0x7F {
		return fmt.Sprintf(`"\\u%04x"`, r)
	}
	return formatLiteral(string(r))
}
