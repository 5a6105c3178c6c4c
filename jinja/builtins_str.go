// String helpers behind the str methods and filters: rune slicing, split, pad, replace, is* predicates, case.

package jinja

import (
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// runeStart is the rune index a start argument names (0 if none).
func runeStart(args []any, s string) int64 {
	if len(args) == 0 || args[0] == nil {
		return 0
	}
	n := int64(utf8.RuneCountInString(s))
	i, _ := intVal(args[0])
	if i < 0 {
		i = max(i+n, 0)
	}
	return min(i, n)
}

// runeRange is s[start:end] for str methods' optional start and end
// arguments (rune indices, Python's clamping).
func (r *renderer) runeRange(s string, args []any) (string, error) {
	if len(args) == 0 {
		return s, nil
	}
	if len(args) > 2 {
		return "", errors.New("too many arguments")
	}
	n := int64(utf8.RuneCountInString(s))
	bound := func(v any, def int64) (int64, error) {
		if v == nil {
			return def, nil
		}
		i, ok := intVal(v)
		if !ok {
			return 0, errors.New("slice indices must be integers or None or have an __index__ method")
		}
		if i < 0 {
			i = max(i+n, 0)
		}
		return min(i, n), nil
	}
	lo, err := bound(args[0], 0)
	if err != nil {
		return "", err
	}
	hi := n
	if len(args) == 2 {
		if hi, err = bound(args[1], n); err != nil {
			return "", err
		}
	}
	if lo > hi {
		return "", nil
	}
	b := runeOffsets(s, lo, hi)
	return s[b[0]:b[1]], nil
}

// runeOffsets turns rune indices lo <= hi into byte offsets.
func runeOffsets(s string, lo, hi int64) [2]int {
	out := [2]int{len(s), len(s)}
	i := int64(0)
	for k := range s {
		if i == lo {
			out[0] = k
		}
		if i == hi {
			out[1] = k
			break
		}
		i++
	}
	return out
}

// strList makes a list of strings (the strings share the source's bytes).
func (r *renderer) strList(parts []string) []any {
	r.alloc(slotBytes * len(parts))
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out
}

// replace is str.replace, its result size checked before it is built.
func (r *renderer) replace(s, old, new string, count int64) string {
	r.scan(len(s))
	n := int64(strings.Count(s, old))
	if old == "" {
		n = int64(utf8.RuneCountInString(s)) + 1
	}
	if count >= 0 && count < n {
		n = count
	}
	r.need(fixed(n, int64(len(new)), int64(len(s))))
	if n == 0 {
		return s
	}
	out := strings.Replace(s, old, new, int(n))
	r.alloc(len(out))
	return out
}

// pad is format alignment: fill s to width runes ('<', '>', '^').
func (r *renderer) pad(s string, width int64, fill string, align byte) string {
	n := int64(utf8.RuneCountInString(s))
	if width <= n {
		return s
	}
	padN := width - n
	r.need(fixed(padN, int64(len(fill)), int64(len(s))))
	var left int64
	switch align {
	case '>':
		left = padN
	case '^':
		left = padN / 2
		if padN&width&1 == 1 { // CPython's str.center
			left++
		}
	case '=': // after the sign: handled by the caller
	}
	out := strings.Repeat(fill, int(left)) + s + strings.Repeat(fill, int(padN-left))
	r.alloc(len(out))
	return out
}

func rsplitN(s, sep string, n int) []string {
	if n < 0 {
		return strings.Split(s, sep)
	}
	var out []string
	for ; n > 0; n-- {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		out = append(out, s[i+len(sep):])
		s = s[:i]
	}
	out = append(out, s)
	slices.Reverse(out)
	return out
}

// fieldsN is str.split() without a separator: runs of whitespace, at most
// n splits (n < 0: all), from the right for rsplit.
func fieldsN(s string, n int, right bool) []string {
	f := strings.FieldsFunc(s, isSpace)
	if n < 0 || len(f) <= n {
		return f
	}
	if !right {
		rest := s
		var out []string
		for range n {
			rest = strings.TrimLeftFunc(rest, isSpace)
			i := strings.IndexFunc(rest, isSpace)
			if i < 0 {
				break
			}
			out = append(out, rest[:i])
			rest = rest[i:]
		}
		if rest = strings.TrimLeftFunc(rest, isSpace); rest != "" {
			out = append(out, rest)
		}
		return out
	}
	rest := s
	var out []string
	for range n {
		rest = strings.TrimRightFunc(rest, isSpace)
		i := strings.LastIndexFunc(rest, isSpace)
		if i < 0 {
			break
		}
		_, size := utf8.DecodeRuneInString(rest[i:])
		out = append(out, rest[i+size:])
		rest = rest[:i]
	}
	if rest = strings.TrimRightFunc(rest, isSpace); rest != "" {
		out = append(out, rest)
	}
	slices.Reverse(out)
	return out
}

// splitLines is str.splitlines: \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85,
// \u2028 and \u2029 end lines.
func splitLines(s string, keepends bool) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		c, size := utf8.DecodeRuneInString(s[i:])
		eol := 0
		switch c {
		case '\r':
			eol = 1
			if i+1 < len(s) && s[i+1] == '\n' {
				eol = 2
			}
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			eol = size
		}
		if eol == 0 {
			i += size
			continue
		}
		if keepends {
			out = append(out, s[start:i+eol])
		} else {
			out = append(out, s[start:i])
		}
		i += eol
		start = i
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func strIs(s, name string) bool {
	switch name {
	case "isascii":
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return false
			}
		}
		return true
	case "isprintable":
		for _, c := range s {
			if !printable(c) {
				return false
			}
		}
		return true
	case "isidentifier":
		for i, c := range s {
			if !(i == 0 && (c == '_' || pyIsXIDStart(c)) || i > 0 && pyIsXIDContinue(c)) {
				return false
			}
		}
		return s != ""
	case "istitle":
		cased, prev := false, false
		for _, c := range s {
			switch {
			case pyIsUpper(c) || unicode.IsTitle(c):
				if prev {
					return false
				}
				prev, cased = true, true
			case pyIsLower(c):
				if !prev {
					return false
				}
				prev, cased = true, true
			default:
				prev = false
			}
		}
		return cased
	}
	if s == "" {
		return false
	}
	cased := false
	for _, r := range s {
		switch name {
		case "isdecimal":
			if !unicode.IsDigit(r) {
				return false
			}
		case "isdigit":
			if !pyIsDigit(r) {
				return false
			}
		case "isnumeric":
			if !pyIsNumeric(r) {
				return false
			}
		case "isalpha":
			if !unicode.IsLetter(r) {
				return false
			}
		case "isspace":
			if !isSpace(r) {
				return false
			}
		case "isalnum":
			if !unicode.IsLetter(r) && !pyIsNumeric(r) {
				return false
			}
		case "isupper":
			if pyIsLower(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || pyIsUpper(r)
		case "islower":
			if pyIsUpper(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || pyIsLower(r)
		}
	}
	return cased || (name != "isupper" && name != "islower")
}
