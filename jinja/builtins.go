package jinja

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// globals are the functions every template sees.
var globals map[string]any

func init() {
	globals = map[string]any{
		"range":           &callable{"range", fnRange},
		"namespace":       &callable{"namespace", fnNamespace},
		"dict":            &callable{"dict", fnDict},
		"raise_exception": &callable{"raise_exception", fnRaise},
		"strftime_now":    &callable{"strftime_now", fnStrftimeNow},
	}
}

func fnRange(r *renderer, args []any, kw *Dict) (any, error) {
	var n [3]int64
	n[2] = 1
	switch len(args) {
	case 1:
		v, ok := intVal(args[0])
		if !ok {
			return nil, fmt.Errorf("range() takes integers, not %s", typeName(args[0]))
		}
		n[1] = v
	case 2, 3:
		for i, a := range args {
			v, ok := intVal(a)
			if !ok {
				return nil, fmt.Errorf("range() takes integers, not %s", typeName(a))
			}
			n[i] = v
		}
	default:
		return nil, fmt.Errorf("range expected 1 to 3 arguments, got %d", len(args))
	}
	if n[2] == 0 {
		return nil, errors.New("range() arg 3 must not be zero")
	}
	count := (float64(n[1]) - float64(n[0])) / float64(n[2]) // float: no overflow
	if count > float64(r.lim.MaxRange) {
		return nil, fmt.Errorf("range() of %.0f items exceeds the limit of %d", count, r.lim.MaxRange)
	}
	out := []any{}
	for i := n[0]; (n[2] > 0 && i < n[1]) || (n[2] < 0 && i > n[1]); i += n[2] {
		out = append(out, i)
	}
	return out, nil
}

func fnNamespace(_ *renderer, args []any, kw *Dict) (any, error) {
	ns := &Namespace{d: NewDict()}
	for _, a := range args {
		if d, ok := a.(*Dict); ok {
			for _, k := range d.keys {
				ns.d.Set(k, d.vals[k])
			}
		}
	}
	for _, k := range kw.keys {
		ns.d.Set(k, kw.vals[k])
	}
	return ns, nil
}

func fnDict(_ *renderer, args []any, kw *Dict) (any, error) {
	d := NewDict()
	for _, a := range args {
		src, ok := a.(*Dict)
		if !ok {
			return nil, fmt.Errorf("dict() takes a mapping, not %s", typeName(a))
		}
		for _, k := range src.keys {
			d.Set(k, src.vals[k])
		}
	}
	for _, k := range kw.keys {
		d.Set(k, kw.vals[k])
	}
	return d, nil
}

func fnRaise(_ *renderer, args []any, _ *Dict) (any, error) {
	msg := "raise_exception"
	if len(args) > 0 {
		msg = str(args[0])
	}
	return nil, &Error{Msg: msg}
}

func fnStrftimeNow(r *renderer, args []any, _ *Dict) (any, error) {
	if len(args) != 1 {
		return nil, errors.New("strftime_now takes one format")
	}
	f, ok := args[0].(string)
	if !ok {
		return nil, errors.New("strftime_now: the format must be a string")
	}
	return strftime(r.now, f), nil
}

// method returns the bound method name of obj, or false.
func method(obj any, name string) (*callable, bool) {
	var fn func(args []any, kw *Dict) (any, error)
	switch o := obj.(type) {
	case string:
		fn = strMethod(o, name)
	case *Dict:
		switch name {
		case "items":
			fn = func([]any, *Dict) (any, error) {
				out := make([]any, 0, o.Len())
				for _, k := range o.keys {
					out = append(out, Tuple{k, o.vals[k]})
				}
				return out, nil
			}
		case "keys":
			fn = func([]any, *Dict) (any, error) { return append([]any{}, o.keys...), nil }
		case "values":
			fn = func([]any, *Dict) (any, error) {
				out := make([]any, 0, o.Len())
				for _, k := range o.keys {
					out = append(out, o.vals[k])
				}
				return out, nil
			}
		case "get":
			fn = func(args []any, _ *Dict) (any, error) {
				if len(args) < 1 || len(args) > 2 {
					return nil, fmt.Errorf("get expected 1 or 2 arguments, got %d", len(args))
				}
				if v, ok := o.Get(args[0]); ok {
					return v, nil
				}
				if len(args) == 2 {
					return args[1], nil
				}
				return nil, nil
			}
		case "update", "pop", "popitem", "setdefault", "clear":
			fn = unsafe(name, "dict")
		}
	case []any:
		switch name {
		case "index":
			fn = func(args []any, _ *Dict) (any, error) {
				for i, e := range o {
					if len(args) > 0 && equal(e, args[0]) {
						return int64(i), nil
					}
				}
				return nil, errors.New("value is not in list")
			}
		case "count":
			fn = func(args []any, _ *Dict) (any, error) {
				n := int64(0)
				for _, e := range o {
					if len(args) > 0 && equal(e, args[0]) {
						n++
					}
				}
				return n, nil
			}
		case "append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear":
			fn = unsafe(name, "list")
		}
	}
	if fn == nil {
		return nil, false
	}
	return &callable{name, func(_ *renderer, args []any, kw *Dict) (any, error) { return fn(args, kw) }}, true
}

// unsafe is what the immutable sandbox answers to mutating methods.
func unsafe(name, typ string) func([]any, *Dict) (any, error) {
	return func([]any, *Dict) (any, error) {
		return nil, fmt.Errorf("access to attribute '%s' of '%s' object is unsafe", name, typ)
	}
}

func strArg(args []any, i int, name string) (string, bool, error) {
	if i >= len(args) || args[i] == nil {
		return "", false, nil
	}
	s, ok := args[i].(string)
	if !ok {
		return "", false, fmt.Errorf("%s arg must be None or str, not %s", name, typeName(args[i]))
	}
	return s, true, nil
}

func strMethod(s, name string) func(args []any, kw *Dict) (any, error) {
	strip := func(f func(string, string) string, g func(string, func(rune) bool) string) func([]any, *Dict) (any, error) {
		return func(args []any, _ *Dict) (any, error) {
			chars, ok, err := strArg(args, 0, name)
			if err != nil {
				return nil, err
			}
			if ok {
				return f(s, chars), nil
			}
			return g(s, unicode.IsSpace), nil
		}
	}
	switch name {
	case "strip":
		return strip(strings.Trim, strings.TrimFunc)
	case "lstrip":
		return strip(strings.TrimLeft, strings.TrimLeftFunc)
	case "rstrip":
		return strip(strings.TrimRight, strings.TrimRightFunc)
	case "upper":
		return func([]any, *Dict) (any, error) { return strings.ToUpper(s), nil }
	case "lower":
		return func([]any, *Dict) (any, error) { return strings.ToLower(s), nil }
	case "title":
		return func([]any, *Dict) (any, error) { return title(s), nil }
	case "capitalize":
		return func([]any, *Dict) (any, error) { return capitalize(s), nil }
	case "startswith", "endswith":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) != 1 {
				return nil, fmt.Errorf("%s takes one argument", name)
			}
			var prefixes []any
			if t, ok := args[0].(Tuple); ok {
				prefixes = t
			} else {
				prefixes = []any{args[0]}
			}
			for _, p := range prefixes {
				ps, ok := p.(string)
				if !ok {
					return nil, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(p))
				}
				if (name == "startswith" && strings.HasPrefix(s, ps)) || (name == "endswith" && strings.HasSuffix(s, ps)) {
					return true, nil
				}
			}
			return false, nil
		}
	case "split", "rsplit":
		return func(args []any, kw *Dict) (any, error) {
			sep, hasSep, err := strArg(args, 0, "sep")
			if err != nil {
				return nil, err
			}
			maxsplit := int64(-1)
			if len(args) > 1 {
				maxsplit, _ = intVal(args[1])
			}
			if v, ok := kw.Get("maxsplit"); ok {
				maxsplit, _ = intVal(v)
			}
			var parts []string
			switch {
			case hasSep && sep == "":
				return nil, errors.New("empty separator")
			case hasSep && name == "split" && maxsplit < 0:
				parts = strings.Split(s, sep)
			case hasSep && name == "split":
				parts = strings.SplitN(s, sep, int(maxsplit+1))
			case hasSep:
				parts = rsplitN(s, sep, int(maxsplit))
			default:
				parts = fieldsN(s, int(maxsplit), name == "rsplit")
			}
			out := make([]any, len(parts))
			for i, p := range parts {
				out[i] = p
			}
			return out, nil
		}
	case "splitlines":
		return func([]any, *Dict) (any, error) {
			out := []any{}
			for _, l := range strings.FieldsFunc(strings.ReplaceAll(s, "\r\n", "\n"), func(r rune) bool { return r == '\n' || r == '\r' }) {
				out = append(out, l)
			}
			return out, nil
		}
	case "replace":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) < 2 {
				return nil, errors.New("replace takes at least 2 arguments")
			}
			o, ok1 := args[0].(string)
			n, ok2 := args[1].(string)
			if !ok1 || !ok2 {
				return nil, errors.New("replace arguments must be str")
			}
			count := int64(-1)
			if len(args) > 2 {
				count, _ = intVal(args[2])
			}
			return strings.Replace(s, o, n, int(count)), nil
		}
	case "find", "rfind", "count", "index":
		return func(args []any, _ *Dict) (any, error) {
			sub, ok, err := strArg(args, 0, name)
			if err != nil || !ok {
				return nil, fmt.Errorf("%s takes a string", name)
			}
			switch name {
			case "count":
				if sub == "" {
					return int64(len([]rune(s)) + 1), nil
				}
				return int64(strings.Count(s, sub)), nil
			case "rfind":
				return runeIndex(s, strings.LastIndex(s, sub)), nil
			}
			i := strings.Index(s, sub)
			if i < 0 && name == "index" {
				return nil, errors.New("substring not found")
			}
			return runeIndex(s, i), nil
		}
	case "join":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) != 1 {
				return nil, errors.New("join takes one argument")
			}
			items, err := iterate(args[0])
			if err != nil {
				return nil, err
			}
			parts := make([]string, len(items))
			for i, it := range items {
				p, ok := it.(string)
				if !ok {
					return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
				}
				parts[i] = p
			}
			return strings.Join(parts, s), nil
		}
	case "format":
		return func(args []any, kw *Dict) (any, error) { return pyFormat(s, args, kw) }
	case "isdigit", "isalpha", "isspace", "isalnum", "isupper", "islower":
		return func([]any, *Dict) (any, error) { return strIs(s, name), nil }
	}
	return nil
}

func runeIndex(s string, i int) int64 {
	if i < 0 {
		return -1
	}
	return int64(len([]rune(s[:i])))
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
		out = append([]string{s[i+len(sep):]}, out...)
		s = s[:i]
	}
	return append([]string{s}, out...)
}

// fieldsN is str.split() without a separator: runs of whitespace, at most
// n splits (n < 0: all), from the right for rsplit.
func fieldsN(s string, n int, right bool) []string {
	f := strings.FieldsFunc(s, unicode.IsSpace)
	if n < 0 || len(f) <= n+1 {
		return f
	}
	if !right {
		// Keep the remainder after n fields as it stands, left-trimmed.
		rest := s
		var out []string
		for range n {
			rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
			i := strings.IndexFunc(rest, unicode.IsSpace)
			out = append(out, rest[:i])
			rest = rest[i:]
		}
		return append(out, strings.TrimLeftFunc(rest, unicode.IsSpace))
	}
	rest := s
	var out []string
	for range n {
		rest = strings.TrimRightFunc(rest, unicode.IsSpace)
		i := strings.LastIndexFunc(rest, unicode.IsSpace)
		out = append([]string{rest[i+1:]}, out...)
		rest = rest[:i+1]
	}
	return append([]string{strings.TrimRightFunc(rest, unicode.IsSpace)}, out...)
}

func strIs(s, name string) bool {
	if s == "" {
		return false
	}
	cased := false
	for _, r := range s {
		switch name {
		case "isdigit":
			if !unicode.IsDigit(r) {
				return false
			}
		case "isalpha":
			if !unicode.IsLetter(r) {
				return false
			}
		case "isspace":
			if !unicode.IsSpace(r) {
				return false
			}
		case "isalnum":
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return false
			}
		case "isupper":
			if unicode.IsLower(r) {
				return false
			}
			cased = cased || unicode.IsUpper(r)
		case "islower":
			if unicode.IsUpper(r) {
				return false
			}
			cased = cased || unicode.IsLower(r)
		}
	}
	return cased || (name != "isupper" && name != "islower")
}

func title(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prevCased = unicode.IsLetter(r)
	}
	return b.String()
}

func capitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToUpper(r)) + strings.ToLower(s[i+len(string(r)):])
	}
	return s
}

// pyFormat is str.format for {}, {0}, {name} and {name!r} fields.
func pyFormat(f string, args []any, kw *Dict) (any, error) {
	var b strings.Builder
	auto := 0
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '}' {
			if i+1 < len(f) && f[i+1] == '}' {
				i++
			}
			b.WriteByte('}')
			continue
		}
		if c != '{' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(f) && f[i+1] == '{' {
			b.WriteByte('{')
			i++
			continue
		}
		j := strings.IndexByte(f[i:], '}')
		if j < 0 {
			return nil, errors.New("single '{' encountered in format string")
		}
		field := f[i+1 : i+j]
		i += j
		conv := ""
		if k := strings.IndexByte(field, '!'); k >= 0 {
			field, conv = field[:k], field[k+1:]
		}
		if k := strings.IndexByte(field, ':'); k >= 0 {
			field = field[:k] // format specs are not supported: plain str()
		}
		var v any
		switch {
		case field == "":
			if auto >= len(args) {
				return nil, errors.New("Replacement index out of range for positional args tuple")
			}
			v = args[auto]
			auto++
		default:
			if n, err := strconv.Atoi(field); err == nil {
				if n >= len(args) {
					return nil, errors.New("Replacement index out of range for positional args tuple")
				}
				v = args[n]
			} else if x, ok := kw.Get(field); ok {
				v = x
			} else {
				return nil, fmt.Errorf("KeyError: '%s'", field)
			}
		}
		if conv == "r" {
			b.WriteString(repr(v))
		} else {
			b.WriteString(str(v))
		}
	}
	return b.String(), nil
}

// getattr is Jinja's attribute lookup: a method or attribute of the
// value first, then an item of that name.
func (r *renderer) getattr(line int, obj any, name string) any {
	switch o := obj.(type) {
	case Undefined:
		r.undefinedCheck(line, o)
	case *Namespace:
		if v, ok := o.d.Get(name); ok {
			return v
		}
		return Undefined{Name: name}
	case *loopInfo:
		return r.loopAttr(line, o, name)
	}
	if m, ok := method(obj, name); ok {
		return m
	}
	if d, ok := obj.(*Dict); ok {
		if v, ok := d.Get(name); ok {
			return v
		}
	}
	return Undefined{Name: name}
}

func (r *renderer) loopAttr(line int, l *loopInfo, name string) any {
	n := len(l.items)
	switch name {
	case "index":
		return int64(l.i + 1)
	case "index0":
		return int64(l.i)
	case "revindex":
		return int64(n - l.i)
	case "revindex0":
		return int64(n - l.i - 1)
	case "first":
		return l.i == 0
	case "last":
		return l.i == n-1
	case "length":
		return int64(n)
	case "depth":
		return int64(l.depth0 + 1)
	case "depth0":
		return int64(l.depth0)
	case "previtem":
		if l.i == 0 {
			return Undefined{Name: "previtem"}
		}
		return l.items[l.i-1]
	case "nextitem":
		if l.i == n-1 {
			return Undefined{Name: "nextitem"}
		}
		return l.items[l.i+1]
	case "cycle":
		return &callable{"cycle", func(_ *renderer, args []any, _ *Dict) (any, error) {
			if len(args) == 0 {
				return nil, errors.New("no items for cycling given")
			}
			return args[l.i%len(args)], nil
		}}
	case "changed":
		return &callable{"changed", func(_ *renderer, args []any, _ *Dict) (any, error) {
			v := Tuple(args)
			if l.lastOK && equal(l.last, v) {
				return false, nil
			}
			l.last, l.lastOK = v, true
			return true, nil
		}}
	}
	r.fail(line, "'LoopContext' has no attribute '%s'", name)
	return nil
}

func absInt(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func roundHalfEven(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.RoundToEven(x*p) / p
}

func sortAny(items []any, reverse bool, key func(any) any) error {
	var err error
	slices.SortStableFunc(items, func(a, b any) int {
		c, e := compare(key(a), key(b), "<")
		if e != nil && err == nil {
			err = e
		}
		if reverse {
			return -c
		}
		return c
	})
	return err
}
