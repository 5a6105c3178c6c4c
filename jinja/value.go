package jinja

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Values are Python's, as Jinja2 sees them:
//
//	nil        None
//	bool       bool
//	int64      int
//	float64    float
//	string     str
//	[]any      list (immutable, as in the sandbox transformers uses)
//	Tuple      tuple
//	*Dict      dict, insertion-ordered
//	Undefined  a missing name, attribute or item
//	*Namespace namespace() (the one mutable object)
//	*generator map/select/… results: lazy, iterable once
//	callable   macros, bound methods, globals
type (
	// Tuple is an immutable sequence (items() pairs, loop targets).
	Tuple []any
	// Undefined is Jinja's default undefined: prints as "", iterates as
	// empty, is false; attribute access, arithmetic and calls fail.
	Undefined struct{ Name string }
	// Namespace is the mutable attribute bag of namespace().
	Namespace struct{ d *Dict }
	// generator is a lazy result (Python's generator): iterable, but not a
	// list (tojson fails on it, as in Python).
	generator struct {
		items []any
		name  string
	}
	// callable is a function value: fn(args, kwargs).
	callable struct {
		name string
		fn   func(r *renderer, args []any, kw *Dict) (any, error)
	}
)

// Dict is an insertion-ordered mapping with string, int, bool or nil keys.
type Dict struct {
	keys []any
	vals map[any]any
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{vals: map[any]any{}} }

// Set adds or replaces key.
func (d *Dict) Set(k, v any) {
	k = normKey(k)
	if _, ok := d.vals[k]; !ok {
		d.keys = append(d.keys, k)
	}
	d.vals[k] = v
}

// Get looks key up.
func (d *Dict) Get(k any) (any, bool) {
	if !hashable(k) {
		return nil, false
	}
	v, ok := d.vals[normKey(k)]
	return v, ok
}

// Len is the number of keys.
func (d *Dict) Len() int { return len(d.keys) }

// Keys returns the keys in insertion order.
func (d *Dict) Keys() []any { return d.keys }

// normKey makes keys that Python treats as equal equal in Go: 1 == 1.0 == True.
func normKey(k any) any {
	switch x := k.(type) {
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int64(x)
		}
	}
	return k
}

func hashable(k any) bool {
	switch k.(type) {
	case nil, bool, int64, float64, string, Tuple:
		_, isT := k.(Tuple)
		return !isT
	}
	return false
}

// typeName is Python's type name of v, for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case Tuple:
		return "tuple"
	case *Dict:
		return "dict"
	case Undefined:
		return "Undefined"
	case *Namespace:
		return "Namespace"
	case *generator:
		return "generator"
	case *callable:
		return "function"
	case *loopInfo:
		return "LoopContext"
	}
	return fmt.Sprintf("%T", v)
}

// truth is Python's bool(v).
func truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case Tuple:
		return len(x) > 0
	case *Dict:
		return x.Len() > 0
	case Undefined:
		return false
	}
	return true
}

// str is Python's str(v) (Undefined prints as "").
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case Undefined:
		return ""
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case *Namespace:
		return "<Namespace>"
	case *generator:
		return "<generator object " + x.name + ">"
	case *callable:
		return "<function " + x.name + ">"
	}
	return repr(v)
}

// repr is Python's repr(v).
func repr(v any) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

// maxReprDepth bounds nesting (a namespace can hold itself).
const maxReprDepth = 200

func writeRepr(b *strings.Builder, v any, depth int) {
	if depth > maxReprDepth {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case string:
		b.WriteString(pyQuote(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloat(x))
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e, depth+1)
		}
		b.WriteByte(']')
	case Tuple:
		b.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, e, depth+1)
		}
		if len(x) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case *Dict:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, k, depth+1)
			b.WriteString(": ")
			writeRepr(b, x.vals[k], depth+1)
		}
		b.WriteByte('}')
	default:
		b.WriteString(str(v))
	}
}

// pyQuote is Python's repr of a str: single quotes unless the text has a
// single quote and no double quote; escapes for \\, the quote, control and
// non-printable characters.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteByte(q)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && !printable(r):
			switch {
			case r <= 0xff:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// printable approximates Python's str.isprintable for non-ASCII runes.
func printable(r rune) bool {
	if r == utf8.RuneError || (r >= 0x80 && r < 0xa0) || r == 0xad {
		return false
	}
	switch {
	case r == 0xa0, r == 0x1680, r >= 0x2000 && r <= 0x200f, r >= 0x2028 && r <= 0x202f, r == 0x205f, r >= 0x2060 && r <= 0x206f, r == 0x3000, r == 0xfeff:
		return false
	case r >= 0xd800 && r <= 0xdfff, r >= 0xe000 && r <= 0xf8ff, r >= 0xfff0 && r <= 0xfffb:
		return false
	}
	return true
}

// pyFloat is Python's repr of a float: the shortest round-trip digits,
// scientific when the exponent is below -4 or at least 16.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	digits := strings.Replace(mant, ".", "", 1)
	var s string
	if exp < -4 || exp >= 16 {
		s = digits[:1]
		if len(digits) > 1 {
			s += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		s += fmt.Sprintf("e%s%02d", sign, exp)
	} else if exp < 0 {
		s = "0." + strings.Repeat("0", -exp-1) + digits
	} else if exp+1 >= len(digits) {
		s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	} else {
		s = digits[:exp+1] + "." + digits[exp+1:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// equal is Python's ==.
func equal(a, b any) bool {
	switch x := a.(type) {
	case Undefined:
		_, ok := b.(Undefined)
		return ok
	case nil:
		return b == nil
	case bool, int64, float64:
		fa, oka := number(a)
		fb, okb := number(b)
		return oka && okb && fa == fb
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && equalSeq(x, y)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && equalSeq(x, y)
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.keys {
			w, ok := y.Get(k)
			if !ok || !equal(x.vals[k], w) {
				return false
			}
		}
		return true
	}
	return a == b
}

func equalSeq(x, y []any) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !equal(x[i], y[i]) {
			return false
		}
	}
	return true
}

// number converts bool/int/float to float64.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// compare is Python's ordering (<0, 0, >0) for numbers, strings and
// sequences; other pairs are a TypeError.
func compare(a, b any, op string) (int, error) {
	if fa, ok := number(a); ok {
		if fb, ok := number(b); ok {
			switch {
			case fa < fb:
				return -1, nil
			case fa > fb:
				return 1, nil
			}
			return 0, nil
		}
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return strings.Compare(sa, sb), nil
		}
	}
	if la, ok := asSeq(a); ok {
		if lb, ok := asSeq(b); ok && sameSeqKind(a, b) {
			for i := 0; i < len(la) && i < len(lb); i++ {
				if !equal(la[i], lb[i]) {
					return compare(la[i], lb[i], op)
				}
			}
			return len(la) - len(lb), nil
		}
	}
	return 0, fmt.Errorf("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
}

func sameSeqKind(a, b any) bool {
	_, la := a.([]any)
	_, lb := b.([]any)
	return la == lb
}

func asSeq(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case Tuple:
		return x, true
	}
	return nil, false
}

// iterate is Python's iter(v) for a for loop or a filter.
func iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case Tuple:
		return x, nil
	case *Dict:
		return append([]any(nil), x.keys...), nil
	case string:
		var out []any
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case Undefined:
		return nil, nil
	case *generator:
		items := x.items
		x.items = nil // a generator is consumed once
		return items, nil
	}
	return nil, fmt.Errorf("'%s' object is not iterable", typeName(v))
}

// length is Python's len(v).
func length(v any) (int, error) {
	switch x := v.(type) {
	case string:
		return utf8.RuneCountInString(x), nil
	case []any:
		return len(x), nil
	case Tuple:
		return len(x), nil
	case *Dict:
		return x.Len(), nil
	case Undefined:
		return 0, nil
	}
	return 0, fmt.Errorf("object of type '%s' has no len()", typeName(v))
}

// sortedKeys returns a dict's keys sorted (for tojson sort_keys).
func sortedKeys(d *Dict) []any {
	ks := append([]any(nil), d.keys...)
	sort.SliceStable(ks, func(i, j int) bool { c, _ := compare(ks[i], ks[j], "<"); return c < 0 })
	return ks
}
