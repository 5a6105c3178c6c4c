package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lexing follows Jinja2's lexer with the settings transformers uses:
// trim_blocks (the first newline after a block or comment tag is removed)
// and lstrip_blocks (spaces and tabs before a block or comment tag at the
// start of a line are removed), '-' markers (strip all whitespace on that
// side) and '+' markers (keep it).

type tokKind uint8

const (
	tData tokKind = iota
	tVarBegin
	tVarEnd
	tBlockBegin
	tBlockEnd
	tName
	tString
	tInt
	tFloat
	tOp
	tEOF
)

type token struct {
	kind tokKind
	val  string
	line int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of template"
	case tVarEnd:
		return "'}}'"
	case tBlockEnd:
		return "'%}'"
	case tString:
		return strconv.Quote(t.val)
	}
	return "'" + t.val + "'"
}

// Error is a template error with the line it happened on.
type Error struct {
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("jinja: line %d: %s", e.Line, e.Msg)
	}
	return "jinja: " + e.Msg
}

type lexer struct {
	src       string
	pos, line int
	toks      []token
	lineStart bool // the previous tag's match ended with a newline (or template start)
}

func lex(src string) ([]token, error) {
	lx := &lexer{src: src, line: 1, lineStart: true}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{kind: tEOF, line: lx.line})
	return lx.toks, nil
}

func (lx *lexer) fail(format string, args ...any) error {
	return &Error{Line: lx.line, Msg: fmt.Sprintf(format, args...)}
}

func (lx *lexer) emit(k tokKind, v string) { lx.toks = append(lx.toks, token{k, v, lx.line}) }

// data emits text, counting its lines.
func (lx *lexer) data(s string) {
	if s != "" {
		lx.emit(tData, s)
	}
	lx.line += strings.Count(s, "\n")
}

// isSpace is Python's str.isspace for one character (what rstrip, split
// and the lexer's \s treat as whitespace).
func isSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

func (lx *lexer) run() error {
	for lx.pos < len(lx.src) {
		rest := lx.src[lx.pos:]
		i := nextTag(rest)
		if i < 0 {
			lx.data(rest)
			return nil
		}
		text := rest[:i]
		open := rest[i : i+2]
		mod := byte(0)
		if i+2 < len(rest) && (rest[i+2] == '-' || rest[i+2] == '+') {
			mod = rest[i+2]
		}
		switch {
		case mod == '-':
			text = strings.TrimRightFunc(text, isSpace)
		case mod != '+' && open != "{{":
			l := strings.LastIndexByte(text, '\n') + 1
			if (l > 0 || lx.lineStart) && strings.TrimLeftFunc(text[l:], isSpace) == "" {
				text = text[:l]
			}
		}
		lx.data(text)
		lx.line += strings.Count(rest[len(text):i], "\n")
		lx.pos += i + 2
		if mod != 0 {
			lx.pos++
		}
		var err error
		switch open {
		case "{#":
			err = lx.comment()
		case "{{":
			lx.emit(tVarBegin, "{{")
			err = lx.expr(tVarEnd)
		default:
			if lx.isRaw() {
				err = lx.raw()
			} else {
				lx.emit(tBlockBegin, "{%")
				err = lx.expr(tBlockEnd)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// nextTag finds the next "{{", "{%" or "{#".
func nextTag(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '{' && (s[i+1] == '{' || s[i+1] == '%' || s[i+1] == '#') {
			return i
		}
	}
	return -1
}

// tagEnd consumes what follows a block or comment end: with '-' all
// whitespace, else (trim_blocks) one newline unless '+' marked it.
func (lx *lexer) tagEnd(mod byte, block bool) {
	start := lx.pos
	switch {
	case mod == '-':
		rest := lx.src[lx.pos:]
		lx.pos += len(rest) - len(strings.TrimLeftFunc(rest, isSpace))
	case mod != '+' && block && strings.HasPrefix(lx.src[lx.pos:], "\n"):
		lx.pos++
	}
	consumed := lx.src[start:lx.pos]
	lx.line += strings.Count(consumed, "\n")
	lx.lineStart = strings.HasSuffix(consumed, "\n")
}

func (lx *lexer) comment() error {
	j := strings.Index(lx.src[lx.pos:], "#}")
	if j < 0 {
		return lx.fail("unclosed comment")
	}
	body := lx.src[lx.pos : lx.pos+j]
	lx.line += strings.Count(body, "\n")
	mod := byte(0)
	if strings.HasSuffix(body, "-") || strings.HasSuffix(body, "+") {
		mod = body[len(body)-1]
	}
	lx.pos += j + 2
	lx.tagEnd(mod, true)
	return nil
}

// isRaw reports whether the block tag at pos is {% raw %}.
func (lx *lexer) isRaw() bool {
	s := strings.TrimLeft(lx.src[lx.pos:], " \t\n\r")
	if !strings.HasPrefix(s, "raw") {
		return false
	}
	s = strings.TrimLeft(s[3:], " \t\n\r")
	return strings.HasPrefix(s, "%}") || strings.HasPrefix(s, "-%}") || strings.HasPrefix(s, "+%}")
}

func (lx *lexer) raw() error {
	end := strings.Index(lx.src[lx.pos:], "%}")
	head := lx.src[lx.pos : lx.pos+end]
	mod := byte(0)
	if strings.HasSuffix(head, "-") || strings.HasSuffix(head, "+") {
		mod = head[len(head)-1]
	}
	lx.pos += end + 2
	lx.tagEnd(mod, false) // Jinja2's raw-begin rule has no trim_blocks newline
	// Find {% endraw %} (with optional markers and spaces).
	for k := lx.pos; ; {
		j := strings.Index(lx.src[k:], "{%")
		if j < 0 {
			return lx.fail("missing {%% endraw %%}")
		}
		k += j
		t := lx.src[k+2:]
		m := byte(0)
		if strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+") {
			m, t = t[0], t[1:]
		}
		t2 := strings.TrimLeft(t, " \t\n\r")
		if !strings.HasPrefix(t2, "endraw") {
			k += 2
			continue
		}
		t3 := strings.TrimLeft(t2[6:], " \t\n\r")
		endMod := byte(0)
		if strings.HasPrefix(t3, "-") || strings.HasPrefix(t3, "+") {
			endMod, t3 = t3[0], t3[1:]
		}
		if !strings.HasPrefix(t3, "%}") {
			k += 2
			continue
		}
		body := lx.src[lx.pos:k]
		if m == '-' {
			body = strings.TrimRightFunc(body, isSpace)
		}
		lx.data(body)
		lx.pos = len(lx.src) - len(t3) + 2
		lx.tagEnd(endMod, true)
		return nil
	}
}

// ops are the operators, longest first.
var ops = []string{"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"}

// expr lexes the inside of a {{ }} or {% %} up to its end.
func (lx *lexer) expr(end tokKind) error {
	var stack []byte
	closer := "}}"
	if end == tBlockEnd {
		closer = "%}"
	}
	for {
		if lx.pos >= len(lx.src) {
			return lx.fail("unclosed tag")
		}
		c := lx.src[lx.pos]
		rest := lx.src[lx.pos:]
		if c == '\n' {
			lx.line++
		}
		if c < utf8.RuneSelf && isSpace(rune(c)) {
			lx.pos++
			continue
		}
		if r, size := utf8.DecodeRuneInString(rest); r != utf8.RuneError && isSpace(r) {
			lx.pos += size
			continue
		}
		if len(stack) == 0 && (c == closer[0] || c == '-' || c == '+') {
			var mod byte
			tail := rest
			if c == '-' || (c == '+' && end == tBlockEnd) {
				mod, tail = c, rest[1:]
			}
			if strings.HasPrefix(tail, closer) {
				lx.emit(end, closer)
				lx.pos += len(rest) - len(tail) + 2
				lx.tagEnd(mod, end == tBlockEnd)
				return nil
			}
		}
		switch {
		case c == '_' || c < utf8.RuneSelf && unicode.IsLetter(rune(c)):
			j := 1
			for j < len(rest) && (rest[j] == '_' || rest[j] < utf8.RuneSelf && (unicode.IsLetter(rune(rest[j])) || unicode.IsDigit(rune(rest[j])))) {
				j++
			}
			lx.emit(tName, rest[:j])
			lx.pos += j
		case c >= '0' && c <= '9':
			j, isFloat := scanNumber(rest)
			v := strings.ReplaceAll(rest[:j], "_", "")
			if isFloat {
				lx.emit(tFloat, v)
			} else {
				lx.emit(tInt, v)
			}
			lx.pos += j
		case c == '\'' || c == '"':
			s, n, err := unquote(rest)
			if err != nil {
				return lx.fail("%v", err)
			}
			lx.emit(tString, s)
			lx.line += strings.Count(rest[:n], "\n")
			lx.pos += n
		default:
			op := ""
			for _, o := range ops {
				if strings.HasPrefix(rest, o) {
					op = o
					break
				}
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(rest)
				return lx.fail("unexpected character %q", r)
			}
			switch op {
			case "(", "[", "{":
				stack = append(stack, map[byte]byte{'(': ')', '[': ']', '{': '}'}[op[0]])
			case ")", "]", "}":
				if len(stack) == 0 || stack[len(stack)-1] != op[0] {
					return lx.fail("unexpected '%s'", op)
				}
				stack = stack[:len(stack)-1]
			}
			lx.emit(tOp, op)
			lx.pos += len(op)
		}
	}
}

func scanNumber(s string) (int, bool) {
	j := 0
	digits := func() {
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '_' && j > 0) {
			j++
		}
	}
	digits()
	isFloat := false
	if j+1 < len(s) && s[j] == '.' && s[j+1] >= '0' && s[j+1] <= '9' {
		isFloat = true
		j++
		digits()
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			isFloat = true
			j = k
			digits()
		}
	}
	return j, isFloat
}

// unquote reads a string literal with Python's escapes (Jinja decodes
// them with "unicode-escape").
func unquote(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == q {
			return b.String(), i + 1, nil
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case '\n':
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 32)
			b.WriteRune(rune(v))
			i = j - 1
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n >= len(s) {
				return "", 0, fmt.Errorf("truncated \\%c escape", e)
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil || v > unicode.MaxRune {
				return "", 0, fmt.Errorf("bad \\%c escape", e)
			}
			b.WriteRune(rune(v))
			i += n
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return "", 0, fmt.Errorf("unclosed string literal")
}
