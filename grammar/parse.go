// Package grammar constrains generation to a formal language: llama.cpp's
// GBNF grammars, and JSON Schemas converted to GBNF with llama.cpp's
// json-schema-to-grammar semantics. A Grammar is parsed once; a Matcher
// follows one generation through it and, given a vocabulary Index, says at
// each step which tokens may come next.
//
// The matching semantics are llama.cpp's (b4748): a set of pushdown stacks
// advanced one code point at a time, repetitions rewritten into
// right-recursive helper rules, left recursion refused.
//
// Grammars, schemas and input are untrusted: parsing, conversion and
// matching bound their depth, size and work explicitly (Limits and the
// schema constants) and never recurse on input-controlled depth; what
// exceeds a bound is refused with a *LimitError (errors.Is ErrLimit).
package grammar

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// elemType is one grammar element kind, as llama.cpp's llama_gretype.
type elemType uint8

const (
	eEnd      elemType = iota // end of a rule
	eAlt                      // start of the next alternative
	eRef                      // reference to rule val
	eChar                     // a code point (the first of a class)
	eCharNot                  // the first of a negated class
	eRngUpper                 // upper bound of the range begun by the previous element
	eCharAlt                  // another code point of the class
	eCharAny                  // any code point ('.')
)

type elem struct {
	typ elemType
	val uint32
}

// Grammar is a parsed GBNF grammar: rules of alternatives of element
// sequences, flattened as llama.cpp lays them out. Immutable.
type Grammar struct {
	rules [][]elem // rule id → elements (alternatives split by eAlt, ended by eEnd)
	names []string // rule id → name
	root  int
	text  string
	lim   Limits
	flat  // the rules laid out for matching (analyze.go)
}

// Text returns the grammar's source.
func (g *Grammar) Text() string { return g.text }

// Rules returns the number of rules (generated helper rules included).
func (g *Grammar) Rules() int { return len(g.rules) }

// SyntaxError locates a parse error.
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("grammar: line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

type parser struct {
	src     string
	lim     Limits
	ids     map[string]int
	rules   [][]elem
	names   []string
	defined []bool
	refPos  []int // where each rule was first referenced (for errors)
	nelems  int
	depth   int
}

// Parse parses GBNF text with default limits.
func Parse(src string) (*Grammar, error) { return ParseLimits(src, Limits{}) }

// ParseLimits parses GBNF text. Errors name the line and column.
func ParseLimits(src string, lim Limits) (g *Grammar, err error) {
	lim = lim.withDefaults()
	if len(src) > lim.MaxBytes {
		return nil, &LimitError{"MaxBytes", lim.MaxBytes, fmt.Sprintf("the grammar's %d bytes are too many", len(src))}
	}
	p := &parser{src: src, lim: lim, ids: map[string]int{}}
	defer func() {
		if r := recover(); r != nil {
			switch e := r.(type) {
			case *SyntaxError:
				g, err = nil, e
			case *LimitError:
				g, err = nil, e
			default:
				panic(r)
			}
		}
	}()
	pos := p.space(0, true)
	for pos < len(src) {
		pos = p.rule(pos)
	}
	for id, ok := range p.defined {
		if !ok {
			p.fail(p.refPos[id], "undefined rule %q", p.names[id])
		}
	}
	root, ok := p.ids["root"]
	if !ok {
		return nil, fmt.Errorf("grammar: no 'root' rule")
	}
	g = &Grammar{rules: p.rules, names: p.names, root: root, text: src, lim: lim}
	if err := g.analyze(); err != nil {
		return nil, err
	}
	// The start must be within the run-time limits too (a matcher made
	// anyway would allow nothing).
	if _, err := newMachine(g).initial(g.root); err != nil {
		return nil, err
	}
	return g, nil
}

func (p *parser) lineCol(pos int) (line, col int) {
	line, col = 1, 1
	for _, r := range p.src[:min(pos, len(p.src))] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func (p *parser) fail(pos int, format string, args ...any) {
	line, col := p.lineCol(pos)
	panic(&SyntaxError{Line: line, Col: col, Msg: clip(fmt.Sprintf(format, args...), 300)})
}

// failLimit stops the parse with a *LimitError located at pos.
func (p *parser) failLimit(pos int, limit string, value int, format string, args ...any) {
	line, col := p.lineCol(pos)
	panic(&LimitError{limit, value, fmt.Sprintf("line %d, column %d: %s", line, col, fmt.Sprintf(format, args...))})
}

func (p *parser) symbol(name string, pos int) int {
	if id, ok := p.ids[name]; ok {
		return id
	}
	id := len(p.rules)
	p.ids[name] = id
	p.rules = append(p.rules, nil)
	p.names = append(p.names, name)
	p.defined = append(p.defined, false)
	p.refPos = append(p.refPos, pos)
	return id
}

// helper makes a fresh rule named after base, as llama.cpp's generate_symbol_id.
func (p *parser) helper(base string) int {
	name := base + "_" + strconv.Itoa(len(p.rules))
	for {
		if _, ok := p.ids[name]; !ok {
			break
		}
		name += "_"
	}
	id := p.symbol(name, 0)
	p.defined[id] = true
	return id
}

func (p *parser) add(id int, r []elem) {
	p.nelems += len(r)
	if p.nelems > p.lim.MaxElements {
		p.failLimit(0, "MaxElements", p.lim.MaxElements, "the grammar expands to over %d elements", p.lim.MaxElements)
	}
	p.rules[id] = r
	p.defined[id] = true
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// space skips blanks and # comments; newlines only when nl.
func (p *parser) space(pos int, nl bool) int {
	for pos < len(p.src) {
		c := p.src[pos]
		switch {
		case c == ' ' || c == '\t':
			pos++
		case c == '#':
			for pos < len(p.src) && p.src[pos] != '\r' && p.src[pos] != '\n' {
				pos++
			}
		case nl && (c == '\r' || c == '\n'):
			pos++
		default:
			return pos
		}
	}
	return pos
}

func (p *parser) name(pos int) (string, int) {
	end := pos
	for end < len(p.src) && isWord(p.src[end]) {
		end++
	}
	if end == pos {
		p.fail(pos, "expecting a name")
	}
	return p.src[pos:end], end
}

func (p *parser) rule(pos int) int {
	name, end := p.name(pos)
	pos = p.space(end, false)
	id := p.symbol(name, end)
	if p.defined[id] && p.rules[id] != nil {
		p.fail(end-len(name), "rule %q defined twice", name)
	}
	if !strings.HasPrefix(p.src[pos:], "::=") {
		p.fail(pos, "expecting ::=")
	}
	pos = p.space(pos+3, true)
	p.defined[id] = true
	var r []elem
	r, pos = p.alternates(pos, name, false)
	p.add(id, append(r, elem{eEnd, 0}))
	if pos < len(p.src) {
		switch p.src[pos] {
		case '\r':
			pos++
			if pos < len(p.src) && p.src[pos] == '\n' {
				pos++
			}
		case '\n':
			pos++
		default:
			p.fail(pos, "expecting a newline or the end, found %q", p.src[pos])
		}
	}
	return p.space(pos, true)
}

// alternates parses seq ('|' seq)*; the result has no trailing eEnd.
func (p *parser) alternates(pos int, ruleName string, nested bool) ([]elem, int) {
	var out []elem
	out, pos = p.sequence(pos, ruleName, out, nested)
	for pos < len(p.src) && p.src[pos] == '|' {
		out = append(out, elem{eAlt, 0})
		pos = p.space(pos+1, true)
		out, pos = p.sequence(pos, ruleName, out, nested)
	}
	return out, pos
}

func (p *parser) sequence(pos int, ruleName string, out []elem, nested bool) ([]elem, int) {
	lastStart := len(out)
	for pos < len(p.src) {
		c := p.src[pos]
		switch {
		case c == '"':
			pos++
			lastStart = len(out)
			for pos < len(p.src) && p.src[pos] != '"' {
				var r rune
				r, pos = p.char(pos)
				out = append(out, elem{eChar, uint32(r)})
			}
			if pos >= len(p.src) {
				p.fail(pos, "unexpected end of input in a string")
			}
			pos = p.space(pos+1, nested)
		case c == '[':
			pos++
			lastStart = len(out)
			first := eChar
			if pos < len(p.src) && p.src[pos] == '^' {
				first = eCharNot
				pos++
			}
			typ := first
			for pos < len(p.src) && p.src[pos] != ']' {
				var r rune
				r, pos = p.char(pos)
				out = append(out, elem{typ, uint32(r)})
				typ = eCharAlt
				if pos+1 < len(p.src) && p.src[pos] == '-' && p.src[pos+1] != ']' {
					var hi rune
					hi, pos = p.char(pos + 1)
					out = append(out, elem{eRngUpper, uint32(hi)})
				}
			}
			if pos >= len(p.src) {
				p.fail(pos, "unexpected end of input in a character class")
			}
			if len(out) == lastStart {
				// llama.cpp accepts "[]" and "[^]" as a class with no members.
				out = append(out, elem{first, 0xFFFFFFFF})
			}
			pos = p.space(pos+1, nested)
		case isWord(c):
			name, end := p.name(pos)
			id := p.symbol(name, pos)
			lastStart = len(out)
			out = append(out, elem{eRef, uint32(id)})
			pos = p.space(end, nested)
		case c == '(':
			p.depth++
			if p.depth > p.lim.MaxNesting {
				p.failLimit(pos, "MaxNesting", p.lim.MaxNesting, "parentheses nested deeper than %d", p.lim.MaxNesting)
			}
			pos = p.space(pos+1, true)
			id := p.helper(ruleName)
			var sub []elem
			sub, pos = p.alternates(pos, ruleName, true)
			p.add(id, append(sub, elem{eEnd, 0}))
			lastStart = len(out)
			out = append(out, elem{eRef, uint32(id)})
			if pos >= len(p.src) || p.src[pos] != ')' {
				p.fail(pos, "expecting ')'")
			}
			p.depth--
			pos = p.space(pos+1, nested)
		case c == '.':
			lastStart = len(out)
			out = append(out, elem{eCharAny, 0})
			pos = p.space(pos+1, nested)
		case c == '*' || c == '+' || c == '?':
			lo, hi := 0, -1
			if c == '+' {
				lo = 1
			} else if c == '?' {
				hi = 1
			}
			out = p.repeat(out, lastStart, lo, hi, ruleName, pos)
			pos = p.space(pos+1, nested)
		case c == '{':
			at := pos
			pos = p.space(pos+1, nested)
			lo, hi := 0, -1
			var ok bool
			lo, pos, ok = p.int(pos)
			if !ok {
				p.fail(pos, "expecting an integer")
			}
			pos = p.space(pos, nested)
			switch {
			case pos < len(p.src) && p.src[pos] == '}':
				hi = lo
			case pos < len(p.src) && p.src[pos] == ',':
				pos = p.space(pos+1, nested)
				if n, np, ok := p.int(pos); ok {
					hi, pos = n, np
					if hi < lo {
						p.fail(at, "repetition {%d,%d}: the maximum is below the minimum", lo, hi)
					}
				}
				pos = p.space(pos, nested)
			}
			if pos >= len(p.src) || p.src[pos] != '}' {
				p.fail(pos, "expecting ',' or '}'")
			}
			if lo > p.lim.MaxRepeat || hi > p.lim.MaxRepeat {
				p.failLimit(at, "MaxRepeat", p.lim.MaxRepeat, "repetition bound over the limit of %d", p.lim.MaxRepeat)
			}
			out = p.repeat(out, lastStart, lo, hi, ruleName, at)
			pos = p.space(pos+1, nested)
		default:
			return out, pos
		}
	}
	return out, pos
}

func (p *parser) int(pos int) (int, int, bool) {
	end := pos
	for end < len(p.src) && p.src[end] >= '0' && p.src[end] <= '9' {
		end++
	}
	if end == pos {
		return 0, pos, false
	}
	n, err := strconv.Atoi(p.src[pos:end])
	if err != nil || n > 1<<30 {
		p.fail(pos, "repetition bound %s is too large", p.src[pos:end])
	}
	return n, end, true
}

// repeat rewrites the symbol at out[lastStart:] as llama.cpp does:
// S{m,n} → S…S (m times) then n-m nested optional helpers
// (S'(k) ::= S S'(k-1) | ); S{m,} → S…S S' with S' ::= S S' | .
func (p *parser) repeat(out []elem, lastStart, lo, hi int, ruleName string, at int) []elem {
	if lastStart == len(out) {
		p.fail(at, "expecting an item before a repetition")
	}
	prev := append([]elem(nil), out[lastStart:]...)
	if hi < 0 {
		hi = -1
	}
	cost := len(prev) * max(lo, 1)
	if hi > 0 {
		cost = len(prev) * hi * 2
	}
	if p.nelems+len(out)+cost > p.lim.MaxElements {
		p.failLimit(at, "MaxElements", p.lim.MaxElements, "the grammar expands to over %d elements", p.lim.MaxElements)
	}
	if lo == 0 {
		out = out[:lastStart]
	} else {
		for i := 1; i < lo; i++ {
			out = append(out, prev...)
		}
	}
	nOpt := 1
	if hi >= 0 {
		nOpt = hi - lo
	}
	last := 0
	for i := 0; i < nOpt; i++ {
		id := p.helper(ruleName)
		rec := append([]elem(nil), prev...)
		if i > 0 || hi < 0 {
			ref := last
			if hi < 0 {
				ref = id
			}
			rec = append(rec, elem{eRef, uint32(ref)})
		}
		rec = append(rec, elem{eAlt, 0}, elem{eEnd, 0})
		p.add(id, rec)
		last = id
	}
	if nOpt > 0 {
		out = append(out, elem{eRef, uint32(last)})
	}
	return out
}

// char decodes one (possibly escaped) character of a literal or class.
// The escapes are exactly llama.cpp's (b4748 parse_char): \x, \u and \U
// with exactly 2, 4 and 8 hex digits, \t \r \n, and \\ \" \[ \]; any
// other escape (\- \/ \^ \a …) is an error there, so it is one here.
func (p *parser) char(pos int) (rune, int) {
	if p.src[pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[pos:])
		return r, pos + n
	}
	if pos+1 >= len(p.src) {
		p.fail(pos, "unexpected end of input after '\\'")
	}
	switch c := p.src[pos+1]; c {
	case 'x', 'u', 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		var v uint32
		for i := 0; i < n; i++ {
			d, ok := byte(0), false
			if pos+2+i < len(p.src) {
				d, ok = hexVal(p.src[pos+2+i])
			}
			if !ok {
				p.fail(pos, "expecting %d hex digits after \\%c", n, c)
			}
			v = v<<4 | uint32(d)
		}
		return rune(v), pos + 2 + n
	case '"', '[', ']', '\\':
		return rune(c), pos + 2
	case 't':
		return '\t', pos + 2
	case 'r':
		return '\r', pos + 2
	case 'n':
		return '\n', pos + 2
	default:
		r, _ := utf8.DecodeRuneInString(p.src[pos+1:])
		p.fail(pos, "unknown escape \\%c (llama.cpp knows \\x \\u \\U \\t \\r \\n \\\\ \\\" \\[ \\])", r)
	}
	return 0, pos
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
