// Method calls on values (str, dict, list, cycler) and attribute lookup.

package jinja

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// method returns the bound method name of obj, or false. Methods run
// with the render's budget.
func (r *renderer) method(obj any, name string) (*callable, bool) {
	var fn func(args []any, kw *Dict) (any, error)
	switch o := obj.(type) {
	case string:
		fn = r.strMethod(o, name)
	case markup:
		fn = r.strMethod(string(o), name)
	case *Dict:
		switch name {
		case "items":
			fn = func([]any, *Dict) (any, error) {
				r.alloc((slotBytes + 2*slotBytes) * o.Len())
				out := make([]any, 0, o.Len())
				for _, k := range o.keys {
					out = append(out, Tuple{k, o.val(k)})
				}
				return out, nil
			}
		case "keys":
			fn = func([]any, *Dict) (any, error) {
				r.alloc(slotBytes * o.Len())
				return append([]any{}, o.keys...), nil
			}
		case "values":
			fn = func([]any, *Dict) (any, error) {
				r.alloc(slotBytes * o.Len())
				out := make([]any, 0, o.Len())
				for _, k := range o.keys {
					out = append(out, o.val(k))
				}
				return out, nil
			}
		case "get":
			fn = func(args []any, _ *Dict) (any, error) {
				if len(args) < 1 || len(args) > 2 {
					return nil, fmt.Errorf("get expected 1 or 2 arguments, got %d", len(args))
				}
				if !hashable(args[0]) {
					return nil, fmt.Errorf("unhashable type: '%s'", typeName(args[0]))
				}
				if v, ok := o.Get(args[0]); ok {
					return v, nil
				}
				if len(args) == 2 {
					return args[1], nil
				}
				return nil, nil
			}
		case "copy":
			fn = func([]any, *Dict) (any, error) { return r.dictFrom("dict", []any{o}, NewDict()) }
		case "update", "pop", "popitem", "setdefault", "clear":
			fn = unsafe(name, "dict")
		}
	case []any, Tuple:
		l, _ := asSeq(o)
		switch name {
		case "index":
			fn = func(args []any, _ *Dict) (any, error) {
				if len(args) == 0 {
					return nil, errors.New("index expected at least 1 argument, got 0")
				}
				for i, e := range l {
					if r.equal(e, args[0]) {
						return int64(i), nil
					}
				}
				return nil, fmt.Errorf("%s is not in %s", shortRepr(args[0]), typeName(o))
			}
		case "count":
			fn = func(args []any, _ *Dict) (any, error) {
				if len(args) != 1 {
					return nil, fmt.Errorf("count() takes exactly one argument (%d given)", len(args))
				}
				n := int64(0)
				for _, e := range l {
					if r.equal(e, args[0]) {
						n++
					}
				}
				return n, nil
			}
		case "copy":
			if _, isList := o.([]any); isList {
				fn = func([]any, *Dict) (any, error) {
					r.alloc(slotBytes * len(l))
					return append([]any{}, l...), nil
				}
			}
		case "append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear":
			if _, isList := o.([]any); isList {
				fn = unsafe(name, "list")
			}
		}
	case *cycler:
		if v, ok := o.attr(name); ok {
			c, _ := v.(*callable)
			return c, c != nil
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

// strArg is argument i as a str (absent or None: ok false).
func strArg(args []any, i int, name string) (string, bool, error) {
	if i >= len(args) || args[i] == nil {
		return "", false, nil
	}
	s, ok := unmark(args[i]).(string)
	if !ok {
		return "", false, fmt.Errorf("%s arg must be None or str, not %s", name, typeName(args[i]))
	}
	return s, true, nil
}

// strMethod is str.name bound to s. Results are charged; scans too.
func (r *renderer) strMethod(s, name string) func(args []any, kw *Dict) (any, error) {
	ret := func(out string) (any, error) {
		r.alloc(len(out))
		return out, nil
	}
	strip := func(cut func(string, string) string, cutf func(string, func(rune) bool) string) func([]any, *Dict) (any, error) {
		return func(args []any, _ *Dict) (any, error) {
			r.scan(len(s))
			chars, ok, err := strArg(args, 0, name)
			if err != nil {
				return nil, err
			}
			if ok {
				return cut(s, chars), nil
			}
			return cutf(s, isSpace), nil
		}
	}
	simple := func(f func(string) string) func([]any, *Dict) (any, error) {
		return func([]any, *Dict) (any, error) {
			r.scan(len(s))
			return ret(f(s))
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
		return simple(pyUpper)
	case "lower":
		return simple(pyLower)
	case "casefold":
		return simple(pyCasefold)
	case "title":
		return simple(title)
	case "capitalize":
		return simple(capitalize)
	case "swapcase":
		return simple(pySwapcase)
	case "startswith", "endswith":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) < 1 || len(args) > 3 {
				return nil, fmt.Errorf("%s takes 1 to 3 arguments", name)
			}
			sub, err := r.runeRange(s, args[1:])
			if err != nil {
				return nil, err
			}
			var prefixes []any
			if t, ok := args[0].(Tuple); ok {
				prefixes = t
			} else {
				prefixes = []any{args[0]}
			}
			for _, p := range prefixes {
				ps, ok := unmark(p).(string)
				if !ok {
					return nil, fmt.Errorf("%s first arg must be str or a tuple of str, not %s", name, typeName(p))
				}
				r.scan(len(ps))
				if (name == "startswith" && strings.HasPrefix(sub, ps)) || (name == "endswith" && strings.HasSuffix(sub, ps)) {
					return true, nil
				}
			}
			return false, nil
		}
	case "split", "rsplit":
		return func(args []any, kw *Dict) (any, error) {
			r.scan(len(s))
			sepV := kwArg(args, kw, 0, "sep", nil)
			sep, hasSep, err := strArg([]any{sepV}, 0, "sep")
			if err != nil {
				return nil, err
			}
			maxsplit := int64(-1)
			if v := kwArg(args, kw, 1, "maxsplit", nil); v != nil {
				var ok bool
				if maxsplit, ok = intVal(v); !ok {
					return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(v))
				}
			}
			var parts []string
			switch {
			case hasSep && sep == "":
				return nil, errors.New("empty separator")
			case hasSep && name == "split" && maxsplit < 0:
				parts = strings.Split(s, sep)
			case hasSep && name == "split":
				parts = strings.SplitN(s, sep, int(min(maxsplit, int64(len(s)))+1))
			case hasSep:
				parts = rsplitN(s, sep, int(min(maxsplit, int64(len(s)))))
			default:
				parts = fieldsN(s, int(min(maxsplit, int64(len(s)))), name == "rsplit")
			}
			return r.strList(parts), nil
		}
	case "splitlines":
		return func(args []any, kw *Dict) (any, error) {
			r.scan(len(s))
			return r.strList(splitLines(s, truth(kwArg(args, kw, 0, "keepends", false)))), nil
		}
	case "partition", "rpartition":
		return func(args []any, _ *Dict) (any, error) {
			sep, ok, err := strArg(args, 0, name)
			if err != nil || !ok {
				return nil, fmt.Errorf("%s() argument must be str", name)
			}
			if sep == "" {
				return nil, errors.New("empty separator")
			}
			r.scan(len(s))
			r.alloc(3 * slotBytes)
			i := strings.Index(s, sep)
			if name == "rpartition" {
				i = strings.LastIndex(s, sep)
			}
			if i < 0 {
				if name == "rpartition" {
					return Tuple{"", "", s}, nil
				}
				return Tuple{s, "", ""}, nil
			}
			return Tuple{s[:i], sep, s[i+len(sep):]}, nil
		}
	case "removeprefix", "removesuffix":
		return func(args []any, _ *Dict) (any, error) {
			a, ok, err := strArg(args, 0, name)
			if err != nil || !ok {
				return nil, fmt.Errorf("%s() argument must be str", name)
			}
			if name == "removeprefix" {
				return strings.TrimPrefix(s, a), nil
			}
			return strings.TrimSuffix(s, a), nil
		}
	case "replace":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) < 2 || len(args) > 3 {
				return nil, fmt.Errorf("replace expected 2 or 3 arguments, got %d", len(args))
			}
			o, ok1 := unmark(args[0]).(string)
			n, ok2 := unmark(args[1]).(string)
			if !ok1 || !ok2 {
				return nil, errors.New("replace() arguments must be str")
			}
			count := int64(-1)
			if len(args) > 2 {
				var ok bool
				if count, ok = intVal(args[2]); !ok {
					return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(args[2]))
				}
			}
			return r.replace(s, o, n, count), nil
		}
	case "find", "rfind", "index", "rindex", "count":
		return func(args []any, _ *Dict) (any, error) {
			sub, ok, err := strArg(args, 0, name)
			if err != nil || !ok {
				return nil, fmt.Errorf("%s() argument must be str", name)
			}
			r.scan(len(s))
			hay, err := r.runeRange(s, args[1:])
			if err != nil {
				return nil, err
			}
			start := runeStart(args[1:], s)
			switch name {
			case "count":
				if sub == "" {
					return int64(utf8.RuneCountInString(hay) + 1), nil
				}
				return int64(strings.Count(hay, sub)), nil
			case "rfind", "rindex":
				i := strings.LastIndex(hay, sub)
				if i < 0 {
					if name == "rindex" {
						return nil, errors.New("substring not found")
					}
					return int64(-1), nil
				}
				return start + int64(utf8.RuneCountInString(hay[:i])), nil
			}
			i := strings.Index(hay, sub)
			if i < 0 {
				if name == "index" {
					return nil, errors.New("substring not found")
				}
				return int64(-1), nil
			}
			return start + int64(utf8.RuneCountInString(hay[:i])), nil
		}
	case "join":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) != 1 {
				return nil, errors.New("join takes one argument")
			}
			items, err := r.iterate(args[0])
			if err != nil {
				return nil, errors.New("can only join an iterable")
			}
			w := r.buf()
			for i, it := range items {
				r.step(1)
				p, ok := unmark(it).(string)
				if !ok {
					return nil, fmt.Errorf("sequence item %d: expected str instance, %s found", i, typeName(it))
				}
				if i > 0 {
					w.WriteString(s)
				}
				w.WriteString(p)
			}
			return w.String(), nil
		}
	case "format":
		return func(args []any, kw *Dict) (any, error) { return r.strFormat(s, args, kw) }
	case "format_map":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) != 1 {
				return nil, errors.New("format_map() takes exactly one argument")
			}
			d, ok := args[0].(*Dict)
			if !ok {
				return nil, errors.New("format_map() argument must be a mapping")
			}
			return r.strFormat(s, nil, d)
		}
	case "center", "ljust", "rjust":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) < 1 || len(args) > 2 {
				return nil, fmt.Errorf("%s expected 1 or 2 arguments", name)
			}
			w, ok := intVal(args[0])
			if !ok {
				return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(args[0]))
			}
			fill := " "
			if len(args) == 2 {
				f, ok := unmark(args[1]).(string)
				if !ok || utf8.RuneCountInString(f) != 1 {
					return nil, errors.New("The fill character must be exactly one character long")
				}
				fill = f
			}
			return r.pad(s, w, fill, map[string]byte{"center": '^', "ljust": '<', "rjust": '>'}[name]), nil
		}
	case "zfill":
		return func(args []any, _ *Dict) (any, error) {
			if len(args) != 1 {
				return nil, errors.New("zfill() takes exactly one argument")
			}
			w, ok := intVal(args[0])
			if !ok {
				return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(args[0]))
			}
			sign := ""
			body := s
			if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
				sign, body = s[:1], s[1:]
			}
			n := utf8.RuneCountInString(s)
			if w <= int64(n) {
				return s, nil
			}
			r.need(w)
			r.alloc(int(w))
			return sign + strings.Repeat("0", int(w)-n) + body, nil
		}
	case "expandtabs":
		return func(args []any, kw *Dict) (any, error) {
			size, ok := intVal(kwArg(args, kw, 0, "tabsize", int64(8)))
			if !ok {
				return nil, errors.New("tabsize must be an integer")
			}
			w := r.buf()
			col := int64(0)
			for _, c := range s {
				switch c {
				case '\t':
					if size > 0 {
						n := size - col%size
						r.need(n)
						w.WriteString(strings.Repeat(" ", int(n)))
						col += n
					}
				case '\n', '\r':
					w.WriteRune(c)
					col = 0
				default:
					w.WriteRune(c)
					col++
				}
			}
			return w.String(), nil
		}
	case "isdigit", "isdecimal", "isnumeric", "isalpha", "isspace", "isalnum", "isupper", "islower", "istitle", "isidentifier", "isprintable", "isascii":
		return func([]any, *Dict) (any, error) { r.scan(len(s)); return strIs(s, name), nil }
	}
	return nil
}

// getattr is Jinja's attribute lookup: a method or attribute of the
// value first, then an item of that name.
func (r *renderer) getattr(line int, obj any, name string) any {
	if v, ok := r.attrOnly(line, obj, name); ok {
		return v
	}
	if d, ok := obj.(*Dict); ok {
		if v, ok := d.Get(name); ok {
			return v
		}
	}
	return Undefined{Name: name}
}

// attrOnly is Python's getattr (no item lookup): the attr filter.
func (r *renderer) attrOnly(line int, obj any, name string) (any, bool) {
	switch o := obj.(type) {
	case Undefined:
		r.undefinedCheck(line, o)
	case *Namespace:
		v, ok := o.d.Get(name)
		return v, ok
	case *loopInfo:
		return r.loopAttr(line, o, name), true
	case *cycler:
		return o.attr(name)
	case Tuple:
		if len(o) == 2 { // groupby's (grouper, list) named tuples
			switch name {
			case "grouper":
				return o[0], true
			case "list":
				return o[1], true
			}
		}
	}
	if m, ok := r.method(obj, name); ok {
		return m, true
	}
	return nil, false
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
		return &callable{"changed", func(r *renderer, args []any, _ *Dict) (any, error) {
			v := Tuple(args)
			if l.lastOK && r.equal(l.last, v) {
				return false, nil
			}
			l.last, l.lastOK = v, true
			return true, nil
		}}
	}
	return Undefined{Name: name}
}
