// Filter machinery (argument binding, attribute getters), the filter registry, and the default filter.

package jinja

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"
)

// filterFn is a filter: value, positional and keyword arguments.
type filterFn func(r *renderer, v any, args []any, kw *Dict) (any, error)

var filters map[string]filterFn

// kwArg returns keyword name, else positional i, else def.
func kwArg(args []any, kw *Dict, i int, name string, def any) any {
	if v, ok := kw.Get(name); ok {
		return v
	}
	if i < len(args) {
		return args[i]
	}
	return def
}

// argv holds a call's arguments bound to parameter names (missing: not
// given).
type argv []any

type missingT struct{}

var missing any = missingT{}

func (a argv) get(i int, def any) any {
	if a[i] == missing {
		return def
	}
	return a[i]
}

func (a argv) has(i int) bool { return a[i] != missing }

// bind binds args and kw to params as Python does for a function
// name(value, params...): too many, unknown or repeated arguments fail;
// params marked with a leading '!' are required.
func bind(name string, args []any, kw *Dict, params ...string) (argv, error) {
	out := make(argv, len(params))
	for i := range out {
		out[i] = missing
	}
	if len(args) > len(params) {
		return nil, fmt.Errorf("%s() takes at most %d positional arguments but %d were given", name, len(params)+1, len(args)+1)
	}
	copy(out, args)
	for _, k := range kw.keys {
		ks, _ := k.(string)
		found := false
		for i, p := range params {
			if strings.TrimPrefix(p, "!") == ks {
				if out[i] != missing {
					return nil, fmt.Errorf("%s() got multiple values for argument '%s'", name, ks)
				}
				out[i] = kw.val(k)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s() got an unexpected keyword argument '%s'", name, ks)
		}
	}
	for i, p := range params {
		if strings.HasPrefix(p, "!") && out[i] == missing {
			return nil, fmt.Errorf("%s() missing required argument: '%s'", name, p[1:])
		}
	}
	return out, nil
}

// keepsMarkup are the filters that see a Markup value as Markup; the
// others see its str.
var keepsMarkup = map[string]bool{"escape": true, "e": true, "safe": true, "string": true, "default": true, "d": true}

// filter applies f to v.
func (r *renderer) filter(f *filterExpr, v any, sc *scope) any {
	fn, ok := filters[f.name]
	if !ok {
		r.fail(f.ln, "No filter named '%s'.", f.name)
	}
	args, kw := r.args(&f.call, sc)
	return r.applyFilter(f.ln, f.name, fn, v, args, kw)
}

func (r *renderer) applyFilter(line int, name string, fn filterFn, v any, args []any, kw *Dict) any {
	if !keepsMarkup[name] {
		v = unmark(v)
	}
	r.line = line
	out, err := fn(r, v, args, kw)
	if err != nil {
		if e, ok := err.(*Error); ok {
			panic(e)
		}
		r.fail(line, "%s: %v", name, err)
	}
	return out
}

// strf makes a filter of a str -> str function, its result charged.
func strf(f func(string) string) filterFn {
	return func(r *renderer, v any, args []any, kw *Dict) (any, error) {
		s := r.str(v)
		r.scan(len(s))
		out := f(s)
		r.alloc(len(out))
		return out, nil
	}
}

// ignoreCase is Jinja2's ignore_case: strings lower-cased.
func ignoreCase(v any) any {
	if s, ok := unmark(v).(string); ok {
		return pyLower(s)
	}
	return v
}

// attrParts is _prepare_attribute_parts: "a.0.b" -> "a", 0, "b".
func attrParts(attr any) []any {
	switch a := unmark(attr).(type) {
	case nil:
		return nil
	case string:
		var out []any
		for _, p := range strings.Split(a, ".") {
			if p != "" && strings.Trim(p, "0123456789") == "" {
				if n, err := strconv.ParseInt(p, 10, 64); err == nil {
					out = append(out, n)
					continue
				}
			}
			out = append(out, p)
		}
		return out
	}
	return []any{attr}
}

// attrGetter is make_attrgetter: items (or attributes) along a dotted
// path, default replacing an undefined step, then postprocess.
func (r *renderer) attrGetter(attr any, lower bool, def any) func(any) any {
	parts := attrParts(attr)
	return func(v any) any {
		r.step(1)
		for _, p := range parts {
			v = r.getitem(0, v, p)
			if _, u := v.(Undefined); u && def != nil {
				v = def
			}
		}
		if lower {
			v = ignoreCase(v)
		}
		return v
	}
}

// multiAttrGetter is make_multi_attrgetter: "a,b" sorts on [a, b].
func (r *renderer) multiAttrGetter(attr any, lower bool) func(any) any {
	s, isStr := unmark(attr).(string)
	if !isStr || !strings.Contains(s, ",") {
		g := r.attrGetter(attr, lower, nil)
		if attr == nil {
			return g
		}
		return func(v any) any { return []any{g(v)} }
	}
	var gs []func(any) any
	for _, p := range strings.Split(s, ",") {
		gs = append(gs, r.attrGetter(p, lower, nil))
	}
	return func(v any) any {
		out := make([]any, len(gs))
		for i, g := range gs {
			out[i] = g(v)
		}
		return out
	}
}

func (r *renderer) list(items []any) []any {
	r.alloc(slotBytes * len(items))
	return append([]any{}, items...)
}

func init() {
	filters = map[string]filterFn{
		"abs": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			switch x := v.(type) {
			case int64:
				if x == math.MinInt64 {
					return nil, errors.New(errIntOverflow)
				}
				return absInt(x), nil
			case bool:
				n, _ := intVal(x)
				return n, nil
			case float64:
				return math.Abs(x), nil
			}
			return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
		},
		"attr": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			a, err := bind("attr", args, kw, "!name")
			if err != nil {
				return nil, err
			}
			name, ok := unmark(a[0]).(string)
			if !ok {
				return nil, errors.New("attribute name must be string")
			}
			if _, u := v.(Undefined); u {
				return Undefined{Name: name}, nil
			}
			if out, ok := r.attrOnly(0, v, name); ok {
				return out, nil
			}
			return Undefined{Name: name}, nil
		},
		"batch":      fBatch,
		"capitalize": strf(capitalize),
		"center": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			a, err := bind("center", args, kw, "width")
			if err != nil {
				return nil, err
			}
			w, ok := intVal(a.get(0, int64(80)))
			if !ok {
				return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
			}
			return r.pad(r.str(v), w, " ", '^'), nil
		},
		"count":          fLength,
		"length":         fLength,
		"default":        fDefault,
		"d":              fDefault,
		"dictsort":       fDictsort,
		"e":              fEscape,
		"escape":         fEscape,
		"filesizeformat": fFilesize,
		"first": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			if _, err := bind("first", args, kw); err != nil {
				return nil, err
			}
			if g, ok := v.(*generator); ok { // takes one item, leaves the rest
				if len(g.items) == 0 {
					return Undefined{Name: "first"}, nil
				}
				first := g.items[0]
				g.items = g.items[1:]
				return first, nil
			}
			if s, ok := v.(string); ok {
				for _, c := range s {
					return string(c), nil
				}
				return Undefined{Name: "first"}, nil
			}
			items, err := r.iterate(v)
			if err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return Undefined{Name: "first"}, nil
			}
			return items[0], nil
		},
		"float": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			a, err := bind("float", args, kw, "default")
			if err != nil {
				return nil, err
			}
			if f, ok := toFloat(v); ok {
				return f, nil
			}
			return a.get(0, 0.0), nil
		},
		"forceescape": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			return markup(r.htmlEscape(r.str(v))), nil
		},
		"format":  fFormat,
		"groupby": fGroupby,
		"indent":  fIndent,
		"int": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			a, err := bind("int", args, kw, "default", "base")
			if err != nil {
				return nil, err
			}
			base, ok := intVal(a.get(1, int64(10)))
			if !ok {
				return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[1]))
			}
			if n, ok := toInt(v, base); ok {
				return n, nil
			}
			return a.get(0, int64(0)), nil
		},
		"items": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			if _, ok := v.(Undefined); ok {
				return &generator{name: "do_items"}, nil
			}
			d, ok := v.(*Dict)
			if !ok {
				return nil, errors.New("Can only get item pairs from a mapping.")
			}
			r.alloc(3 * slotBytes * d.Len())
			out := make([]any, 0, d.Len())
			for _, k := range d.keys {
				out = append(out, Tuple{k, d.val(k)})
			}
			return &generator{items: out, name: "do_items"}, nil
		},
		"join": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			a, err := bind("join", args, kw, "d", "attribute")
			if err != nil {
				return nil, err
			}
			items, err := r.iterate(v)
			if err != nil {
				return nil, err
			}
			sep := r.str(a.get(0, ""))
			var get func(any) any
			if a.has(1) && a[1] != nil {
				get = r.attrGetter(a[1], false, nil)
			}
			w := r.buf()
			for i, it := range items {
				r.step(1)
				if get != nil {
					it = get(it)
				}
				if i > 0 {
					w.WriteString(sep)
				}
				if s, ok := scalarStr(it); ok {
					w.WriteString(s)
				} else {
					r.writeRepr(w, it, 0, nil)
				}
			}
			return w.String(), nil
		},
		"last": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			if _, err := bind("last", args, kw); err != nil {
				return nil, err
			}
			switch v.(type) {
			case *generator, Undefined:
				return nil, fmt.Errorf("'%s' object is not reversible", typeName(v))
			}
			if s, ok := v.(string); ok {
				if s == "" {
					return Undefined{Name: "last"}, nil
				}
				_, size := utf8.DecodeLastRuneInString(s)
				return s[len(s)-size:], nil
			}
			items, err := r.iterate(v)
			if err != nil {
				return nil, fmt.Errorf("'%s' object is not reversible", typeName(v))
			}
			if len(items) == 0 {
				return Undefined{Name: "last"}, nil
			}
			return items[len(items)-1], nil
		},
		"list": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			if _, err := bind("list", args, kw); err != nil {
				return nil, err
			}
			items, err := r.iterate(v)
			if err != nil {
				return nil, err
			}
			return r.list(items), nil
		},
		"lower":  strf(pyLower),
		"upper":  strf(pyUpper),
		"map":    fMap,
		"max":    fMinMax("max", 1),
		"min":    fMinMax("min", -1),
		"pprint": func(r *renderer, v any, _ []any, _ *Dict) (any, error) { return r.pformat(v), nil },
		"random": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			var n int
			switch x := v.(type) {
			case string:
				n = utf8.RuneCountInString(x)
			case []any, Tuple:
				l, _ := asSeq(x)
				n = len(l)
			default:
				return nil, fmt.Errorf("object of type '%s' has no len()", typeName(v))
			}
			if n == 0 {
				return Undefined{Name: "random"}, nil
			}
			i := rand.IntN(n)
			if s, ok := v.(string); ok {
				c, _ := r.runeAt(s, int64(i))
				return c, nil
			}
			l, _ := asSeq(v)
			return l[i], nil
		},
		"reject":     fSelect("reject", true, false),
		"rejectattr": fSelect("rejectattr", true, true),
		"select":     fSelect("select", false, false),
		"selectattr": fSelect("selectattr", false, true),
		"replace": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			a, err := bind("replace", args, kw, "!old", "!new", "count")
			if err != nil {
				return nil, err
			}
			n := int64(-1)
			if c := a.get(2, nil); c != nil {
				var ok bool
				if n, ok = intVal(c); !ok {
					return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(c))
				}
			}
			return r.replace(r.str(v), r.str(a[0]), r.str(a[1]), n), nil
		},
		"reverse": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			if s, ok := v.(string); ok {
				r.scan(len(s))
				r.alloc(len(s))
				rs := []rune(s)
				for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
					rs[i], rs[j] = rs[j], rs[i]
				}
				return string(rs), nil
			}
			_, isGen := v.(*generator)
			items, err := r.iterate(v)
			if err != nil {
				return nil, errors.New("argument must be iterable")
			}
			r.alloc(slotBytes * len(items))
			out := make([]any, len(items))
			for i, it := range items {
				out[len(items)-1-i] = it
			}
			if isGen { // reversed() refuses a generator: Jinja2 makes a list
				return out, nil
			}
			return &generator{items: out, name: "reversed"}, nil
		},
		"round": fRound,
		"safe": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			if m, ok := v.(markup); ok {
				return m, nil
			}
			return markup(r.str(v)), nil
		},
		"slice": fSlice,
		"sort":  fSort,
		"string": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			if m, ok := v.(markup); ok {
				return m, nil
			}
			return r.str(v), nil
		},
		"striptags": func(r *renderer, v any, _ []any, _ *Dict) (any, error) { return r.striptags(r.str(v)), nil },
		"sum":       fSum,
		"title":     strf(titleFilter),
		"tojson":    fToJSON,
		"trim": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			a, err := bind("trim", args, kw, "chars")
			if err != nil {
				return nil, err
			}
			s := r.str(v)
			r.scan(len(s))
			if c := a.get(0, nil); c != nil {
				cs, ok := unmark(c).(string)
				if !ok {
					return nil, fmt.Errorf("strip arg must be None or str")
				}
				return strings.Trim(s, cs), nil
			}
			return strings.TrimFunc(s, isSpace), nil
		},
		"truncate": fTruncate,
		"unique":   fUnique,
		"urlencode": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			return r.urlencode(v)
		},
		"urlize": fUrlize,
		"wordcount": func(r *renderer, v any, _ []any, _ *Dict) (any, error) {
			s := r.str(v)
			r.scan(len(s))
			n, in := 0, false
			for _, c := range s {
				w := isWordChar(c)
				if w && !in {
					n++
				}
				in = w
			}
			return int64(n), nil
		},
		"wordwrap": fWordwrap,
		"xmlattr":  fXMLAttr,
	}
}

func fDefault(_ *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("default", args, kw, "default_value", "boolean")
	if err != nil {
		return nil, err
	}
	if _, ok := v.(Undefined); ok || (truth(a.get(1, false)) && !truth(v)) {
		return a.get(0, ""), nil
	}
	return v, nil
}
