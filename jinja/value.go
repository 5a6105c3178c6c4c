package jinja

import (
	"fmt"
	"math"
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
//	markup     Markup (escape, safe): a str that is not escaped again
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
	// markup is markupsafe's Markup: text already escaped.
	markup string
	// callable is a function value: fn(args, kwargs).
	callable struct {
		name string
		fn   func(r *renderer, args []any, kw *Dict) (any, error)
	}
)

// Dict is an insertion-ordered mapping with string, int, float, bool or
// nil keys. keys holds the keys as first given; vals is keyed by normKey.
type Dict struct {
	keys []any
	vals map[any]any
}

// NewDict returns an empty dict.
func NewDict() *Dict { return &Dict{vals: map[any]any{}} }

// Set adds or replaces key.
func (d *Dict) Set(k, v any) {
	n := normKey(k)
	if _, ok := d.vals[n]; !ok {
		d.keys = append(d.keys, unmark(k))
	}
	d.vals[n] = v
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

// val is the value of a key from d.keys.
func (d *Dict) val(k any) any { return d.vals[normKey(k)] }

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
	case markup:
		return string(x)
	}
	return k
}

func hashable(k any) bool {
	switch k.(type) {
	case nil, bool, int64, float64, string, markup:
		return true
	}
	return false
}

// unmark turns a Markup into its str (most operations see Markup as the
// str it is).
func unmark(v any) any {
	if m, ok := v.(markup); ok {
		return string(m)
	}
	return v
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
	case markup:
		return "Markup"
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
	case *cycler:
		return "Cycler"
	case *joiner:
		return "Joiner"
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
	case markup:
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

// scalarStr is Python's str(v) for the values whose text is short and
// needs no budget (every value but containers and namespaces).
func scalarStr(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case markup:
		return string(x), true
	case Undefined:
		return "", true
	case nil:
		return "None", true
	case bool:
		if x {
			return "True", true
		}
		return "False", true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return pyFloat(x), true
	case *generator:
		return "<generator object " + x.name + ">", true
	case *callable:
		return "<function " + x.name + ">", true
	case *loopInfo:
		return "<LoopContext>", true
	case *cycler:
		return "<Cycler>", true
	case *joiner:
		return "<Joiner>", true
	}
	return "", false
}

// str is Python's str(v) (Undefined prints as ""), the text of
// containers charged to the budget.
func (r *renderer) str(v any) string {
	if s, ok := scalarStr(v); ok {
		return s
	}
	w := r.buf()
	r.writeRepr(w, v, 0, nil)
	return w.String()
}

// repr is Python's repr(v).
func (r *renderer) repr(v any) string {
	w := r.buf()
	r.writeRepr(w, v, 0, nil)
	return w.String()
}

// shortRepr is repr for error messages: scalars, clipped.
func shortRepr(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = pyQuote(x)
	case markup:
		s = pyQuote(string(x))
	default:
		if t, ok := scalarStr(v); ok {
			s = t
		} else {
			s = "<" + typeName(v) + ">"
		}
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// writeRepr writes repr(v); open holds the dicts being written (Python
// prints a dict inside itself as {...}).
func (r *renderer) writeRepr(w *sbuf, v any, depth int, open []*Dict) {
	if depth > maxValueDepth {
		r.exceed("MaxNesting", maxValueDepth)
	}
	r.step(1)
	switch x := v.(type) {
	case string:
		r.scan(len(x))
		writeQuoted(w, x)
	case markup:
		w.WriteString("Markup(")
		writeQuoted(w, string(x))
		w.WriteByte(')')
	case []any:
		w.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.WriteString(", ")
			}
			r.writeRepr(w, e, depth+1, open)
		}
		w.WriteByte(']')
	case Tuple:
		w.WriteByte('(')
		for i, e := range x {
			if i > 0 {
				w.WriteString(", ")
			}
			r.writeRepr(w, e, depth+1, open)
		}
		if len(x) == 1 {
			w.WriteByte(',')
		}
		w.WriteByte(')')
	case *Dict:
		for _, d := range open {
			if d == x {
				w.WriteString("{...}")
				return
			}
		}
		open = append(open, x)
		w.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				w.WriteString(", ")
			}
			r.writeRepr(w, k, depth+1, open)
			w.WriteString(": ")
			r.writeRepr(w, x.val(k), depth+1, open)
		}
		w.WriteByte('}')
	case *Namespace:
		w.WriteString("<Namespace ")
		r.writeRepr(w, x.d, depth+1, open)
		w.WriteByte('>')
	default:
		s, _ := scalarStr(v)
		w.WriteString(s)
	}
}

// pyQuote is Python's repr of a str.
func pyQuote(s string) string {
	var w sbuf
	writeQuoted(&w, s)
	return w.String()
}

// writeQuoted writes Python's repr of a str: single quotes unless the
// text has a single quote and no double quote; escapes for \\, the quote,
// control and non-printable characters.
func writeQuoted(b *sbuf, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
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
			fmt.Fprintf(b, `\x%02x`, r)
		case r >= 0x80 && !printable(r):
			switch {
			case r <= 0xff:
				fmt.Fprintf(b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				fmt.Fprintf(b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
}

// printable is Python's str.isprintable for one character.
func printable(r rune) bool { return pyIsPrintable(r) }

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

// equal is Python's ==, charged a step per value visited.
func (r *renderer) equal(a, b any) bool { return r.eq(a, b, 0) }

func (r *renderer) eq(a, b any, depth int) bool {
	if depth > maxValueDepth {
		r.exceed("MaxNesting", maxValueDepth)
	}
	r.step(1)
	a, b = unmark(a), unmark(b)
	switch x := a.(type) {
	case Undefined:
		_, ok := b.(Undefined)
		return ok
	case nil:
		return b == nil
	case bool, int64, float64:
		if ia, ok := intVal(a); ok {
			if ib, ok := intVal(b); ok {
				return ia == ib
			}
		}
		fa, oka := number(a)
		fb, okb := number(b)
		return oka && okb && fa == fb
	case string:
		y, ok := b.(string)
		if ok && len(x) == len(y) {
			r.scan(len(x))
		}
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && r.eqSeq(x, y, depth)
	case Tuple:
		y, ok := b.(Tuple)
		return ok && r.eqSeq(x, y, depth)
	case *Dict:
		y, ok := b.(*Dict)
		if !ok || x.Len() != y.Len() {
			return false
		}
		if x == y {
			return true
		}
		for _, k := range x.keys {
			w, ok := y.Get(k)
			if !ok || !r.eq(x.val(k), w, depth+1) {
				return false
			}
		}
		return true
	case *Namespace, *generator, *callable, *loopInfo, *cycler, *joiner:
		return a == b
	}
	return false
}

func (r *renderer) eqSeq(x, y []any, depth int) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if !r.eq(x[i], y[i], depth+1) {
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
func (r *renderer) compare(a, b any, op string) (int, error) { return r.cmp(a, b, op, 0) }

func (r *renderer) cmp(a, b any, op string, depth int) (int, error) {
	if depth > maxValueDepth {
		r.exceed("MaxNesting", maxValueDepth)
	}
	r.step(1)
	a, b = unmark(a), unmark(b)
	if ia, ok := intVal(a); ok {
		if ib, ok := intVal(b); ok {
			switch {
			case ia < ib:
				return -1, nil
			case ia > ib:
				return 1, nil
			}
			return 0, nil
		}
	}
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
			r.scan(min(len(sa), len(sb)))
			return strings.Compare(sa, sb), nil
		}
	}
	if la, ok := asSeq(a); ok {
		if lb, ok := asSeq(b); ok && sameSeqKind(a, b) {
			for i := 0; i < len(la) && i < len(lb); i++ {
				if !r.eq(la[i], lb[i], depth+1) {
					return r.cmp(la[i], lb[i], op, depth+1)
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

// iterate is Python's iter(v) for a for loop or a filter; what it copies
// is charged (the items themselves are visited, and charged, by the
// caller).
func (r *renderer) iterate(v any) ([]any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case Tuple:
		return x, nil
	case *Dict:
		r.alloc(slotBytes * x.Len())
		return append([]any(nil), x.keys...), nil
	case string, markup:
		s, _ := scalarStr(x)
		n := utf8.RuneCountInString(s)
		r.scan(len(s))
		r.alloc(slotBytes * n)
		out := make([]any, 0, n)
		for i := 0; i < len(s); {
			_, size := utf8.DecodeRuneInString(s[i:])
			out = append(out, s[i:i+size])
			i += size
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
func (r *renderer) length(v any) (int, error) {
	switch x := v.(type) {
	case string:
		r.scan(len(x))
		return utf8.RuneCountInString(x), nil
	case markup:
		r.scan(len(x))
		return utf8.RuneCountInString(string(x)), nil
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
func (r *renderer) sortedKeys(d *Dict) ([]any, error) {
	ks := append([]any(nil), d.keys...)
	return ks, r.sortAny(ks, false, func(k any) any { return k })
}
