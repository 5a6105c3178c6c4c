package jinja

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// spec is a parsed format specification: Python's format-spec mini
// language ([[fill]align][sign][#][0][width][,_][.precision][type]), also
// what a %-conversion's flags amount to.
type spec struct {
	fill      string
	align     byte // 0, '<', '>', '^', '='
	sign      byte // 0, '+', '-', ' '
	alt       bool
	zero      bool
	width     int64
	grouping  byte
	prec      int64 // -1: none
	typ       byte
	percentOp bool // from %: ints print as %d does
}

func parseSpec(s string) (spec, error) {
	sp := spec{fill: " ", prec: -1}
	rest := s
	if len(rest) > 0 {
		c, size := utf8.DecodeRuneInString(rest)
		if len(rest) > size && strings.IndexByte("<>^=", rest[size]) >= 0 {
			sp.fill, sp.align = string(c), rest[size]
			rest = rest[size+1:]
		} else if strings.IndexByte("<>^=", rest[0]) >= 0 {
			sp.align = rest[0]
			rest = rest[1:]
		}
	}
	if rest != "" && strings.IndexByte("+- ", rest[0]) >= 0 {
		sp.sign, rest = rest[0], rest[1:]
	}
	if rest != "" && rest[0] == '#' {
		sp.alt, rest = true, rest[1:]
	}
	if rest != "" && rest[0] == '0' {
		sp.zero, rest = true, rest[1:]
	}
	i := 0
	for i < len(rest) && isDigit(rest[i]) {
		i++
	}
	if i > 0 {
		w, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || w > 1<<40 {
			return sp, errors.New("Too many decimal digits in format string")
		}
		sp.width = w
		rest = rest[i:]
	}
	if rest != "" && (rest[0] == ',' || rest[0] == '_') {
		sp.grouping, rest = rest[0], rest[1:]
	}
	if rest != "" && rest[0] == '.' {
		i = 1
		for i < len(rest) && isDigit(rest[i]) {
			i++
		}
		if i == 1 {
			return sp, errors.New("Format specifier missing precision")
		}
		p, err := strconv.ParseInt(rest[1:i], 10, 64)
		if err != nil || p > 1<<20 {
			return sp, errors.New("precision too big")
		}
		sp.prec = p
		rest = rest[i:]
	}
	if len(rest) > 1 {
		return sp, errors.New("Invalid format specifier")
	}
	if rest != "" {
		sp.typ = rest[0]
	}
	return sp, nil
}

// formatValue is format(v, spec).
func (r *renderer) formatValue(v any, sp spec) (string, error) {
	v = unmark(v)
	r.need(fixed(sp.width, int64(len(sp.fill)), 0))
	r.need(max(sp.prec, 0))
	switch x := v.(type) {
	case bool:
		if sp.typ == 0 || sp.typ == 's' {
			return r.align(r.str(x), sp, '<'), nil
		}
		n, _ := intVal(x)
		return r.formatInt(n, sp)
	case int64:
		return r.formatInt(x, sp)
	case float64:
		return r.formatFloat(x, sp)
	}
	if sp.typ != 0 && sp.typ != 's' {
		return "", fmt.Errorf("Unknown format code '%c' for object of type '%s'", sp.typ, typeName(v))
	}
	s := r.str(v)
	if _, isStr := v.(string); !isStr && sp == (spec{fill: " ", prec: -1}) {
		return s, nil
	}
	if _, isStr := v.(string); !isStr && v != nil {
		if _, isU := v.(Undefined); !isU && !sp.percentOp {
			if _, scalar := scalarStr(v); !scalar || sp.typ != 0 || sp.width > 0 {
				// object.__format__ refuses a non-empty spec.
				if _, isList := asSeq(v); isList || isDictLike(v) {
					return "", fmt.Errorf("unsupported format string passed to %s.__format__", typeName(v))
				}
			}
		}
	}
	if sp.sign != 0 || sp.alt {
		return "", errors.New("Sign not allowed in string format specifier")
	}
	if sp.align == '=' {
		return "", errors.New("'=' alignment not allowed in string format specifier")
	}
	if sp.prec >= 0 && int64(utf8.RuneCountInString(s)) > sp.prec {
		s = s[:runeOffsets(s, 0, sp.prec)[1]]
	}
	return r.align(s, sp, '<'), nil
}

func isDictLike(v any) bool {
	switch v.(type) {
	case *Dict, *Namespace:
		return true
	}
	return false
}

// align pads s to the spec's width (def: the default alignment).
func (r *renderer) align(s string, sp spec, def byte) string {
	a := sp.align
	if a == 0 {
		a = def
	}
	if a == '=' {
		a = '>'
	}
	return r.pad(s, sp.width, sp.fill, a)
}

func (r *renderer) formatInt(n int64, sp spec) (string, error) {
	r.need(fixed(max(sp.prec, 0), 1, sp.width))
	var digits string
	neg := n < 0
	u := uint64(n)
	if neg {
		u = uint64(-n)
	}
	prefix := ""
	switch sp.typ {
	case 0, 'd', 'n', 'i', 'u':
		digits = strconv.FormatUint(u, 10)
	case 'b':
		digits, prefix = strconv.FormatUint(u, 2), "0b"
	case 'o':
		digits, prefix = strconv.FormatUint(u, 8), "0o"
	case 'x':
		digits, prefix = strconv.FormatUint(u, 16), "0x"
	case 'X':
		digits, prefix = strings.ToUpper(strconv.FormatUint(u, 16)), "0X"
	case 'c':
		if n < 0 || n > 0x10ffff {
			return "", errors.New("%c arg not in range(0x110000)")
		}
		return r.align(string(rune(n)), sp, '<'), nil
	case 'e', 'E', 'f', 'F', 'g', 'G', '%':
		return r.formatFloat(float64(n), sp)
	default:
		return "", fmt.Errorf("Unknown format code '%c' for object of type 'int'", sp.typ)
	}
	if !sp.alt {
		prefix = ""
	}
	if sp.percentOp && sp.alt && sp.typ == 'o' {
		prefix = "0o"
	}
	if sp.grouping != 0 {
		digits = group(digits, sp.grouping, map[bool]int{true: 4, false: 3}[sp.typ == 'b' || sp.typ == 'o' || sp.typ == 'x' || sp.typ == 'X'])
	}
	if sp.percentOp && sp.prec > int64(len(digits)) {
		digits = strings.Repeat("0", int(sp.prec)-len(digits)) + digits
	}
	return r.signed(neg, prefix+digits, prefix, sp), nil
}

// signed lays out sign, (zero) padding and digits.
func (r *renderer) signed(neg bool, body, prefix string, sp spec) string {
	sign := ""
	switch {
	case neg:
		sign = "-"
	case sp.sign == '+':
		sign = "+"
	case sp.sign == ' ':
		sign = " "
	}
	if sp.zero && sp.align == 0 || sp.align == '=' {
		fill := sp.fill
		if sp.zero && sp.align == 0 {
			fill = "0"
		}
		n := int64(utf8.RuneCountInString(sign + body))
		if sp.width > n {
			r.need(fixed(sp.width-n, int64(len(fill)), 0))
			mid := strings.Repeat(fill, int(sp.width-n))
			body = prefix + mid + strings.TrimPrefix(body, prefix)
		}
		return sign + body
	}
	return r.align(sign+body, sp, '>')
}

func group(digits string, sep byte, every int) string {
	intPart, frac, _ := strings.Cut(digits, ".")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%every == 0 {
			b.WriteByte(sep)
		}
		b.WriteRune(c)
	}
	if frac != "" || strings.Contains(digits, ".") {
		return b.String() + "." + frac
	}
	return b.String()
}

func (r *renderer) formatFloat(f float64, sp spec) (string, error) {
	r.need(fixed(max(sp.prec, 0), 1, sp.width))
	neg := math.Signbit(f) && !math.IsNaN(f)
	a := math.Abs(f)
	prec := int(sp.prec)
	var body string
	typ := sp.typ
	switch {
	case math.IsInf(a, 0) || math.IsNaN(a):
		body = "inf"
		if math.IsNaN(a) {
			body = "nan"
		}
		if typ == 'E' || typ == 'F' || typ == 'G' {
			body = strings.ToUpper(body)
		}
		if typ == '%' {
			body += "%"
		}
		sp.zero = false
		return r.signed(neg, body, "", sp), nil
	}
	switch typ {
	case 'f', 'F', '%':
		if prec < 0 {
			prec = 6
		}
		if typ == '%' {
			a *= 100
		}
		body = strconv.FormatFloat(a, 'f', prec, 64)
		if sp.alt && prec == 0 {
			body += "."
		}
		if typ == '%' {
			body += "%"
		}
	case 'e', 'E':
		if prec < 0 {
			prec = 6
		}
		body = strconv.FormatFloat(a, 'e', prec, 64)
		if sp.alt && prec == 0 {
			body = strings.Replace(body, "e", ".e", 1)
		}
		if typ == 'E' {
			body = strings.ToUpper(body)
		}
	case 'g', 'G', 'n', 0:
		if typ == 0 && prec < 0 {
			body = pyFloat(a)
			break
		}
		if prec < 0 {
			prec = 6
		}
		if prec == 0 {
			prec = 1
		}
		body = pyG(a, prec, sp.alt, typ == 0)
		if typ == 'G' {
			body = strings.ToUpper(body)
		}
	default:
		return "", fmt.Errorf("Unknown format code '%c' for object of type 'float'", typ)
	}
	if sp.grouping != 0 {
		mant, exp, hasExp := strings.Cut(body, "e")
		body = group(mant, sp.grouping, 3)
		if hasExp {
			body += "e" + exp
		}
	}
	return r.signed(neg, body, "", sp), nil
}

// pyG is C's %g (Python's 'g'): %e when the exponent is < -4 or >= prec,
// else %f, trailing zeros removed unless alt; none (typ 0) keeps one
// digit after the point.
func pyG(a float64, prec int, alt, none bool) string {
	e := strconv.FormatFloat(a, 'e', prec-1, 64)
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	var s string
	if exp < -4 || exp >= prec {
		if !alt {
			mant = trimZeros(mant)
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		s = fmt.Sprintf("%se%s%02d", mant, sign, exp)
	} else {
		s = strconv.FormatFloat(a, 'f', max(prec-1-exp, 0), 64)
		if !alt {
			s = trimZeros(s)
		}
		if none && !strings.Contains(s, ".") {
			s += ".0"
		}
	}
	return s
}

func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// percentFormat is Python's str % arg; esc escapes the arguments (Markup
// % arg).
func (r *renderer) percentFormat(line int, f string, arg any, esc bool) string {
	out, err := r.percent(f, arg, esc)
	if err != nil {
		r.fail(line, "%v", err)
	}
	return out
}

func (r *renderer) percent(f string, arg any, esc bool) (string, error) {
	args := []any{arg}
	if t, ok := arg.(Tuple); ok {
		args = t
	}
	mapping, _ := arg.(*Dict)
	_, isList := arg.([]any)
	r.scan(len(f))
	w := r.buf()
	k := 0
	next := func() (any, error) {
		if k >= len(args) {
			return nil, errors.New("not enough arguments for format string")
		}
		k++
		return args[k-1], nil
	}
	usedKey := false
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			j := strings.IndexByte(f[i:], '%')
			if j < 0 {
				j = len(f) - i
			}
			w.WriteString(f[i : i+j])
			i += j - 1
			continue
		}
		i++
		if i >= len(f) {
			return "", errors.New("incomplete format")
		}
		var v any
		haveV := false
		if f[i] == '(' {
			if mapping == nil {
				return "", errors.New("format requires a mapping")
			}
			depth, j := 1, i+1
			for ; j < len(f) && depth > 0; j++ {
				switch f[j] {
				case '(':
					depth++
				case ')':
					depth--
				}
			}
			if depth > 0 {
				return "", errors.New("incomplete format key")
			}
			key := f[i+1 : j-1]
			x, ok := mapping.Get(key)
			if !ok {
				return "", fmt.Errorf("KeyError: %s", shortRepr(key))
			}
			v, haveV, usedKey = x, true, true
			i = j
			if i >= len(f) {
				return "", errors.New("incomplete format")
			}
		}
		sp := spec{fill: " ", prec: -1, percentOp: true}
		for ; i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0; i++ {
			switch f[i] {
			case '-':
				sp.align = '<'
			case '+':
				sp.sign = '+'
			case ' ':
				if sp.sign == 0 {
					sp.sign = ' '
				}
			case '#':
				sp.alt = true
			case '0':
				sp.zero = true
			}
		}
		num := func() (int64, error) {
			if i < len(f) && f[i] == '*' {
				i++
				a, err := next()
				if err != nil {
					return 0, err
				}
				n, ok := intVal(a)
				if !ok {
					return 0, errors.New("* wants int")
				}
				return n, nil
			}
			j := i
			for i < len(f) && isDigit(f[i]) {
				i++
			}
			if j == i {
				return -1, nil
			}
			n, err := strconv.ParseInt(f[j:i], 10, 64)
			if err != nil || n > 1<<40 {
				return 0, errors.New("width too big")
			}
			return n, nil
		}
		wd, err := num()
		if err != nil {
			return "", err
		}
		if wd < 0 && wd != -1 {
			sp.align, wd = '<', -wd
		}
		sp.width = max(wd, 0)
		if i < len(f) && f[i] == '.' {
			i++
			p, err := num()
			if err != nil {
				return "", err
			}
			sp.prec = max(p, 0)
		}
		for i < len(f) && strings.IndexByte("hlL", f[i]) >= 0 {
			i++
		}
		if i >= len(f) {
			return "", errors.New("incomplete format")
		}
		c := f[i]
		if c == '%' {
			w.WriteByte('%')
			continue
		}
		if sp.align == '<' {
			sp.zero = false
		}
		if !haveV {
			if v, err = next(); err != nil {
				return "", err
			}
		}
		var s string
		switch c {
		case 's', 'r', 'a':
			if c == 's' {
				if esc {
					s = string(r.escape(v))
				} else {
					s = r.str(v)
				}
			} else {
				s = r.repr(v)
				if esc {
					s = string(r.escape(s))
				}
			}
			if sp.prec >= 0 && int64(utf8.RuneCountInString(s)) > sp.prec {
				s = s[:runeOffsets(s, 0, sp.prec)[1]]
			}
			sp.zero = false
			s = r.align(s, sp, '>')
		case 'd', 'i', 'u', 'o', 'x', 'X':
			n, ok := intVal(unmark(v))
			if f, isF := v.(float64); isF && (c == 'd' || c == 'i' || c == 'u') {
				if math.IsNaN(f) || math.IsInf(f, 0) {
					return "", errors.New("cannot convert float to integer")
				}
				n, ok = int64(f), true
			}
			if !ok {
				what := "a real number"
				if c == 'o' || c == 'x' || c == 'X' {
					what = "an integer"
				}
				return "", fmt.Errorf("%%%c format: %s is required, not %s", c, what, typeName(v))
			}
			t := c
			if t == 'i' || t == 'u' {
				t = 'd'
			}
			sp.typ = t
			if s, err = r.formatInt(n, sp); err != nil {
				return "", err
			}
		case 'e', 'E', 'f', 'F', 'g', 'G':
			x, ok := number(unmark(v))
			if !ok {
				return "", fmt.Errorf("must be real number, not %s", typeName(v))
			}
			sp.typ = c
			if s, err = r.formatFloat(x, sp); err != nil {
				return "", err
			}
		case 'c':
			switch x := unmark(v).(type) {
			case string:
				if utf8.RuneCountInString(x) != 1 {
					return "", errors.New("%c requires int or char")
				}
				s = x
			default:
				n, ok := intVal(x)
				if !ok || n < 0 || n > 0x10ffff {
					return "", errors.New("%c requires int or char")
				}
				s = string(rune(n))
			}
			sp.zero = false
			s = r.align(s, sp, '>')
		default:
			return "", fmt.Errorf("unsupported format character '%c' (0x%x) at index %d", c, c, i)
		}
		w.WriteString(s)
	}
	if mapping == nil && !isList && k < len(args) && !usedKey {
		return "", errors.New("not all arguments converted during string formatting")
	}
	return w.String(), nil
}

// strFormat is str.format (the sandbox's formatter: fields look items
// and attributes up as templates do).
func (r *renderer) strFormat(f string, args []any, kw *Dict) (string, error) {
	return r.formatDepth(f, args, kw, 0)
}

func (r *renderer) formatDepth(f string, args []any, kw *Dict, depth int) (string, error) {
	if depth > 2 {
		return "", errors.New("Max string recursion exceeded")
	}
	r.scan(len(f))
	w := r.buf()
	auto, manual := 0, false
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '}' {
			if i+1 < len(f) && f[i+1] == '}' {
				i++
				w.WriteByte('}')
				continue
			}
			return "", errors.New("Single '}' encountered in format string")
		}
		if c != '{' {
			w.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '{' {
			w.WriteByte('{')
			i++
			continue
		}
		// The field runs to the matching '}' (nested {} in the spec).
		level, j := 1, i+1
		for ; j < len(f) && level > 0; j++ {
			switch f[j] {
			case '{':
				level++
			case '}':
				level--
			}
		}
		if level > 0 {
			return "", errors.New("expected '}' before end of string")
		}
		field := f[i+1 : j-1]
		i = j - 1
		specText := ""
		conv := byte(0)
		name := field
		if k := strings.IndexAny(field, "!:"); k >= 0 {
			// '!' or ':' after the name (a '[' key may hold either).
			if b := strings.IndexByte(field, '['); b < 0 || b > k {
				name = field[:k]
				rest := field[k:]
				if rest[0] == '!' {
					if len(rest) < 2 || (len(rest) > 2 && rest[2] != ':') {
						return "", errors.New("expected ':' after conversion specifier")
					}
					conv = rest[1]
					rest = rest[2:]
				}
				specText = strings.TrimPrefix(rest, ":")
			}
		}
		// The first part of the name: an index or a keyword.
		end := strings.IndexAny(name, ".[")
		if end < 0 {
			end = len(name)
		}
		first := name[:end]
		var v any
		switch {
		case first == "":
			if manual {
				return "", errors.New("cannot switch from manual field specification to automatic field numbering")
			}
			if auto >= len(args) {
				return "", fmt.Errorf("Replacement index %d out of range for positional args tuple", auto)
			}
			v = args[auto]
			auto++
		case strings.Trim(first, "0123456789") == "":
			if auto > 0 {
				return "", errors.New("cannot switch from automatic field numbering to manual field specification")
			}
			manual = true
			n, err := strconv.Atoi(first)
			if err != nil || n >= len(args) {
				return "", fmt.Errorf("Replacement index %s out of range for positional args tuple", first)
			}
			v = args[n]
		default:
			x, ok := kw.Get(first)
			if !ok {
				return "", fmt.Errorf("KeyError: %s", shortRepr(first))
			}
			v = x
		}
		for rest := name[end:]; rest != ""; {
			r.step(1)
			if rest[0] == '.' {
				k := strings.IndexAny(rest[1:], ".[")
				if k < 0 {
					k = len(rest) - 1
				}
				attr := rest[1 : 1+k]
				if attr == "" {
					return "", errors.New("Empty attribute in format string")
				}
				if out, ok := r.attrOnly(0, v, attr); ok {
					v = out
				} else {
					return "", fmt.Errorf("'%s' object has no attribute %s", typeName(v), shortRepr(attr))
				}
				rest = rest[1+k:]
				continue
			}
			k := strings.IndexByte(rest, ']')
			if k < 0 {
				return "", errors.New("Missing ']' in format string")
			}
			key := rest[1:k]
			var kv any = key
			if n, err := strconv.ParseInt(key, 10, 64); err == nil && strings.Trim(key, "0123456789") == "" {
				kv = n
			}
			out := r.getitem(0, v, kv)
			if _, u := out.(Undefined); u {
				return "", fmt.Errorf("KeyError: %s", shortRepr(kv))
			}
			v = out
			rest = rest[k+1:]
		}
		switch conv {
		case 0:
		case 'r', 'a':
			v = r.repr(v)
		case 's':
			v = r.str(v)
		default:
			return "", fmt.Errorf("Unknown conversion specifier %c", conv)
		}
		if strings.Contains(specText, "{") {
			s, err := r.formatDepth(specText, args[min(auto, len(args)):], kw, depth+1)
			if err != nil {
				return "", err
			}
			specText = s
		}
		sp, err := parseSpec(specText)
		if err != nil {
			return "", err
		}
		s, err := r.formatValue(v, sp)
		if err != nil {
			return "", err
		}
		w.WriteString(s)
	}
	return w.String(), nil
}
