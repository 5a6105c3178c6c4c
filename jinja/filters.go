package jinja

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode"
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
		return strings.ToLower(s)
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
		"lower":  strf(strings.ToLower),
		"upper":  strf(strings.ToUpper),
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

// isWordChar is Python's \w.
func isWordChar(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsNumber(c) }

func fLength(r *renderer, v any, _ []any, _ *Dict) (any, error) {
	n, err := r.length(v)
	return int64(n), err
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

// htmlEscape is markupsafe's escape of a str.
func htmlEscape(s string) string {
	if !strings.ContainsAny(s, `&<>"'`) {
		return s
	}
	return htmlReplacer.Replace(s)
}

var htmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

func (r *renderer) htmlEscape(s string) string {
	r.scan(len(s))
	out := htmlEscape(s)
	if len(out) != len(s) {
		r.alloc(len(out))
	}
	return out
}

// escape is markupsafe.escape: Markup stays, anything else is escaped.
func (r *renderer) escape(v any) markup {
	if m, ok := v.(markup); ok {
		return m
	}
	return markup(r.htmlEscape(r.str(v)))
}

func fEscape(r *renderer, v any, _ []any, _ *Dict) (any, error) { return r.escape(v), nil }

func fDictsort(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_dictsort", args, kw, "case_sensitive", "by", "reverse")
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		if u, isU := v.(Undefined); isU {
			r.undefinedCheck(0, u)
		}
		return nil, fmt.Errorf("'%s' object has no attribute 'items'", typeName(v))
	}
	pos := 0
	switch by := a.get(1, "key"); by {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, errors.New(`You can only sort by either "key" or "value"`)
	}
	lower := !truth(a.get(0, false))
	r.alloc(3 * slotBytes * d.Len())
	out := make([]any, 0, d.Len())
	for _, k := range d.keys {
		out = append(out, Tuple{k, d.val(k)})
	}
	err = r.sortAny(out, truth(a.get(2, false)), func(it any) any {
		x := it.(Tuple)[pos]
		if lower {
			return ignoreCase(x)
		}
		return x
	})
	return out, err
}

func fFilesize(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_filesizeformat", args, kw, "binary")
	if err != nil {
		return nil, err
	}
	b, ok := toFloat(v)
	if !ok {
		return nil, fmt.Errorf("could not convert %s to float: %s", typeName(v), shortRepr(v))
	}
	binary := truth(a.get(0, false))
	base := 1000.0
	prefixes := []string{"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"}
	if binary {
		base = 1024
		prefixes = []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"}
	}
	switch {
	case b == 1:
		return "1 Byte", nil
	case b < base:
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, errors.New("cannot convert float to integer")
		}
		return fmt.Sprintf("%d Bytes", int64(b)), nil
	}
	var unit float64
	for i, p := range prefixes {
		unit = math.Pow(base, float64(i+2))
		if b < unit {
			return strconv.FormatFloat(base*b/unit, 'f', 1, 64) + " " + p, nil
		}
	}
	return pyFixed(base*b/unit, 1) + " " + prefixes[len(prefixes)-1], nil
}

// pyFixed is Python's f"{x:.{prec}f}".
func pyFixed(x float64, prec int) string {
	switch {
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	case math.IsNaN(x):
		return "nan"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// toFloat is Python's float(v).
func toFloat(v any) (float64, bool) {
	switch x := unmark(v).(type) {
	case bool, int64, float64:
		return number(x)
	case string:
		return parsePyFloat(x)
	}
	return 0, false
}

// parsePyFloat parses Python float() text: surrounding whitespace,
// underscores between digits, inf/nan/infinity, no hex.
func parsePyFloat(s string) (float64, bool) {
	s = strings.TrimFunc(s, isSpace)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '_' {
			if i == 0 || i == len(body)-1 || !isDigit(body[i-1]) || !isDigit(body[i+1]) {
				return 0, false
			}
			continue
		}
		if !isDigit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true // Python: inf for huge, 0 for tiny
		}
		return 0, false
	}
	return f, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// toInt is Jinja2's do_int conversion (false: use the default).
func toInt(v any, base int64) (int64, bool) {
	switch x := unmark(v).(type) {
	case int64:
		return x, true
	case bool:
		return intVal(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1<<63 {
			return 0, false
		}
		return int64(x), true
	case string:
		if n, ok := parsePyInt(x, base); ok {
			return n, true
		}
		if f, ok := parsePyFloat(x); ok && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<63 {
			return int64(f), true
		}
	}
	return 0, false
}

// parsePyInt is Python's int(s, base).
func parsePyInt(s string, base int64) (int64, bool) {
	s = strings.TrimFunc(s, isSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	lower := strings.ToLower(s)
	prefixed := func(p string, b int64) bool {
		return strings.HasPrefix(lower, p) && (base == b || base == 0)
	}
	switch {
	case prefixed("0x", 16), prefixed("0o", 8), prefixed("0b", 2):
		base = map[byte]int64{'x': 16, 'o': 8, 'b': 2}[lower[1]]
		s = strings.TrimPrefix(s[2:], "_")
	case base == 0:
		base = 10
		if strings.Trim(s, "0_") == "" && s != "" {
			return 0, true
		}
		if strings.HasPrefix(s, "0") {
			return 0, false
		}
	}
	if base < 2 || base > 36 || s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), int(base), 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func fFormat(r *renderer, v any, args []any, kw *Dict) (any, error) {
	if len(args) > 0 && kw.Len() > 0 {
		return nil, errors.New("can't handle positional and keyword arguments at the same time")
	}
	var arg any = Tuple(args)
	if kw.Len() > 0 {
		arg = kw
	}
	return r.percentFormat(0, r.str(v), arg, false), nil
}

func fGroupby(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_groupby", args, kw, "!attribute", "default", "case_sensitive")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	def := a.get(1, nil)
	lower := !truth(a.get(2, false))
	key := r.attrGetter(a[0], lower, def)
	sorted := r.list(items)
	if err := r.sortAny(sorted, false, key); err != nil {
		return nil, err
	}
	var out []any
	var group []any
	var gkey any
	flush := func() {
		if group == nil {
			return
		}
		grouper := gkey
		if lower {
			grouper = r.attrGetter(a[0], false, def)(group[0])
		}
		out = append(out, Tuple{grouper, group})
	}
	for i, it := range sorted {
		k := key(it)
		if i == 0 || !r.equal(k, gkey) {
			flush()
			group, gkey = nil, k
		}
		group = append(group, it)
	}
	flush()
	r.alloc(3 * slotBytes * len(out))
	if out == nil {
		out = []any{}
	}
	return out, nil
}

func fIndent(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_indent", args, kw, "width", "first", "blank")
	if err != nil {
		return nil, err
	}
	s := r.str(v)
	var ind string
	switch w := unmark(a.get(0, int64(4))).(type) {
	case string:
		ind = w
	default:
		n, ok := intVal(w)
		if !ok {
			return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", typeName(w))
		}
		n = max(n, 0)
		r.need(n)
		ind = strings.Repeat(" ", int(n))
	}
	first, blank := truth(a.get(1, false)), truth(a.get(2, false))
	r.scan(len(s))
	lines := splitLines(s+"\n", false)
	r.need(fixed(int64(len(lines)), int64(len(ind)+1), int64(len(s))))
	w := r.buf()
	if first {
		w.WriteString(ind)
	}
	for i, l := range lines {
		if i > 0 {
			w.WriteString("\n")
			if blank || l != "" {
				w.WriteString(ind)
			}
		}
		w.WriteString(l)
	}
	return w.String(), nil
}

func fMinMax(name string, dir int) filterFn {
	return func(r *renderer, v any, args []any, kw *Dict) (any, error) {
		a, err := bind("do_"+name, args, kw, "case_sensitive", "attribute")
		if err != nil {
			return nil, err
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return Undefined{Name: name}, nil
		}
		key := r.attrGetter(a.get(1, nil), !truth(a.get(0, false)), nil)
		best, bestKey := items[0], key(items[0])
		for _, it := range items[1:] {
			k := key(it)
			c, err := r.compare(k, bestKey, map[int]string{1: ">", -1: "<"}[dir])
			if err != nil {
				return nil, err
			}
			if c*dir > 0 {
				best, bestKey = it, k
			}
		}
		return best, nil
	}
}

func fMap(r *renderer, v any, args []any, kw *Dict) (any, error) {
	if !truth(v) { // Jinja's map yields nothing for a false value (None too)
		return &generator{name: "sync_do_map"}, nil
	}
	var f func(any) (any, error)
	if attr, ok := kw.Get("attribute"); ok && len(args) == 0 {
		def, _ := kw.Get("default")
		for _, k := range kw.keys {
			if k != "attribute" && k != "default" {
				return nil, fmt.Errorf("Unexpected keyword argument %s", shortRepr(k))
			}
		}
		g := r.attrGetter(attr, false, def)
		f = func(x any) (any, error) { return g(x), nil }
	} else {
		if len(args) == 0 {
			return nil, errors.New("map requires a filter argument")
		}
		name, _ := unmark(args[0]).(string)
		fn, ok := filters[name]
		if !ok {
			return nil, fmt.Errorf("No filter named %s.", shortRepr(args[0]))
		}
		rest := args[1:]
		f = func(x any) (any, error) {
			return r.applyFilter(0, name, fn, x, rest, kw), nil
		}
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	r.alloc(slotBytes * len(items))
	out := make([]any, len(items))
	for i, it := range items {
		r.step(1)
		if out[i], err = f(it); err != nil {
			return nil, err
		}
	}
	return &generator{items: out, name: "sync_do_map"}, nil
}

// fSelect builds select/reject/selectattr/rejectattr.
func fSelect(name string, reject, attr bool) filterFn {
	return func(r *renderer, v any, args []any, kw *Dict) (any, error) {
		if !truth(v) { // as in Jinja, a false value (None too) selects nothing
			return &generator{name: "select_or_reject"}, nil
		}
		get := func(x any) any { return x }
		if attr {
			if len(args) == 0 {
				return nil, errors.New("Missing parameter for attribute name")
			}
			get = r.attrGetter(args[0], false, nil)
			args = args[1:]
		}
		var test testFn
		var targs []any
		if len(args) > 0 {
			tname, _ := unmark(args[0]).(string)
			t, ok := tests[tname]
			if !ok {
				return nil, fmt.Errorf("No test named %s.", shortRepr(args[0]))
			}
			test, targs = t, args[1:]
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, it := range items {
			r.step(1)
			x := get(it)
			ok := truth(x)
			if test != nil {
				if ok, err = test(r, x, targs); err != nil {
					return nil, err
				}
			}
			if ok != reject {
				out = append(out, it)
			}
		}
		r.alloc(slotBytes * len(out))
		return &generator{items: out, name: "select_or_reject"}, nil
	}
}

func fBatch(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_batch", args, kw, "!linecount", "fill_with")
	if err != nil {
		return nil, err
	}
	n, ok := intVal(a[0])
	if !ok {
		return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	fill := a.get(1, nil)
	var out []any
	var tmp []any
	for _, it := range items {
		r.step(1)
		if int64(len(tmp)) == n {
			out = append(out, tmp)
			tmp = nil
		}
		tmp = append(tmp, it)
	}
	if tmp != nil {
		if fill != nil && int64(len(tmp)) < n {
			extra := n - int64(len(tmp))
			r.need(fixed(extra, slotBytes, 0))
			r.alloc(int(extra) * slotBytes)
			for range extra {
				tmp = append(tmp, fill)
			}
		}
		out = append(out, tmp)
	}
	r.alloc(slotBytes * (len(out) + len(items)))
	for i, b := range out {
		if b == nil {
			out[i] = []any{}
		}
	}
	return &generator{items: out, name: "do_batch"}, nil
}

func fSlice(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("sync_do_slice", args, kw, "!slices", "fill_with")
	if err != nil {
		return nil, err
	}
	slices, ok := intVal(a[0])
	if !ok {
		return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if slices == 0 {
		return nil, errors.New("integer division or modulo by zero")
	}
	fill := a.get(1, nil)
	n := int64(len(items))
	per := n / slices
	extra := n % slices
	if (n%slices != 0) && ((n < 0) != (slices < 0)) {
		per--
		extra = n - per*slices
	}
	r.need(fixed(max(slices, 0), slotBytes*2, int64(len(items))*slotBytes))
	r.step(int(max(slices, 0)))
	var out []any
	offset := int64(0)
	for i := int64(0); i < slices; i++ {
		start := offset + i*per
		if i < extra {
			offset++
		}
		end := offset + (i+1)*per
		part := []any{}
		if start < end {
			part = append(part, items[start:end]...)
		}
		if fill != nil && i >= extra {
			part = append(part, fill)
		}
		out = append(out, part)
	}
	r.alloc(slotBytes * (len(out) + len(items)))
	return &generator{items: out, name: "sync_do_slice"}, nil
}

func fRound(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_round", args, kw, "precision", "method")
	if err != nil {
		return nil, err
	}
	prec, ok := intVal(a.get(0, int64(0)))
	if !ok {
		return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
	}
	method := a.get(1, "common")
	if method != "common" && method != "ceil" && method != "floor" {
		return nil, errors.New("method must be common, ceil or floor")
	}
	f, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("type %s doesn't define __round__ method", typeName(v))
	}
	if method == "common" {
		if n, isInt := intVal(v); isInt { // round(int, n) is an int
			if prec >= 0 {
				return n, nil
			}
			if prec < -18 {
				return int64(0), nil
			}
			p := int64(math.Pow10(int(-prec)))
			q := n / p
			rem := n - q*p
			if rem < 0 {
				q--
				rem += p
			}
			if 2*rem > p || (2*rem == p && q%2 != 0) {
				q++
			}
			return q * p, nil
		}
		return roundHalfEven(f, int(prec)), nil
	}
	p := math.Pow(10, float64(prec))
	if method == "ceil" {
		return math.Ceil(f*p) / p, nil
	}
	return math.Floor(f*p) / p, nil
}

// roundHalfEven is Python's round(x, digits) for a float: the correctly
// rounded decimal.
func roundHalfEven(x float64, digits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if digits >= 0 {
		if digits > 330 {
			return x
		}
		f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', digits, 64), 64)
		return f
	}
	if digits < -330 {
		return math.Copysign(0, x)
	}
	p := math.Pow(10, float64(-digits))
	return math.RoundToEven(x/p) * p
}

func fSort(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_sort", args, kw, "reverse", "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	out := r.list(items)
	r.step(len(out) * (1 + bitsLen(len(out))))
	key := r.multiAttrGetter(a.get(2, nil), !truth(a.get(1, false)))
	return out, r.sortAny(out, truth(a.get(0, false)), key)
}

func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

func fSum(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_sum", args, kw, "attribute", "start")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	total := a.get(1, int64(0))
	if isText(total) {
		return nil, errors.New("sum() can't sum strings [use ''.join(seq) instead]")
	}
	var get func(any) any
	if attr := a.get(0, nil); attr != nil {
		get = r.attrGetter(attr, false, nil)
	}
	for _, it := range items {
		r.step(1)
		if get != nil {
			it = get(it)
		}
		total = r.arith(0, "+", total, it)
	}
	return total, nil
}

func fToJSON(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("tojson", args, kw, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return nil, err
	}
	o := dumpOpts{itemSep: ", ", keySep: ": ", ensureASCII: truth(a.get(0, false)), sortKeys: truth(a.get(3, false))}
	if ind := a.get(1, nil); ind != nil {
		o.hasIndent, o.itemSep = true, ","
		switch x := unmark(ind).(type) {
		case string:
			o.indent = x
		default:
			n, ok := intVal(x)
			if !ok {
				return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", typeName(x))
			}
			n = max(n, 0)
			r.need(n)
			o.indent = strings.Repeat(" ", int(n))
		}
	}
	if sep := a.get(2, nil); sep != nil {
		parts, err := r.iterate(sep)
		if err != nil || len(parts) != 2 {
			return nil, errors.New("separators must be a pair of strings")
		}
		i, ok1 := unmark(parts[0]).(string)
		k, ok2 := unmark(parts[1]).(string)
		if !ok1 || !ok2 {
			return nil, errors.New("separators must be a pair of strings")
		}
		o.itemSep, o.keySep = i, k
	}
	return r.jsonDumps(v, o)
}

func fTruncate(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_truncate", args, kw, "length", "killwords", "end", "leeway")
	if err != nil {
		return nil, err
	}
	s := r.str(v)
	length, ok1 := intVal(a.get(0, int64(255)))
	leeway, ok2 := intVal(a.get(3, int64(5)))
	end := r.str(a.get(2, "..."))
	if a.get(3, nil) == nil {
		leeway, ok2 = 5, true
	}
	if !ok1 || !ok2 {
		return nil, errors.New("length and leeway must be integers")
	}
	endLen := int64(utf8.RuneCountInString(end))
	if length < endLen {
		return nil, fmt.Errorf("expected length >= %d, got %d", endLen, length)
	}
	if leeway < 0 {
		return nil, fmt.Errorf("expected leeway >= 0, got %d", leeway)
	}
	r.scan(len(s))
	n := int64(utf8.RuneCountInString(s))
	if n <= length+leeway {
		return s, nil
	}
	cut := s[:runeOffsets(s, 0, length-endLen)[1]]
	if !truth(a.get(1, false)) {
		if i := strings.LastIndexByte(cut, ' '); i >= 0 {
			cut = cut[:i]
		}
	}
	r.alloc(len(cut) + len(end))
	return cut + end, nil
}

func fUnique(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_unique", args, kw, "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	key := r.attrGetter(a.get(1, nil), !truth(a.get(0, false)), nil)
	seen := map[any]bool{}
	var out []any
	for _, it := range items {
		k := key(it)
		if !hashable(k) {
			return nil, fmt.Errorf("unhashable type: '%s'", typeName(k))
		}
		nk := normKey(k)
		if s, ok := nk.(string); ok {
			r.scan(len(s))
		}
		if !seen[nk] {
			seen[nk] = true
			out = append(out, it)
		}
	}
	r.alloc((slotBytes + entryBytes) * len(out))
	return &generator{items: out, name: "sync_do_unique"}, nil
}

func fXMLAttr(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_xmlattr", args, kw, "autospace")
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		return nil, fmt.Errorf("'%s' object has no attribute 'items'", typeName(v))
	}
	w := r.buf()
	n := 0
	for _, k := range d.keys {
		val := d.val(k)
		if _, u := val.(Undefined); u || val == nil {
			continue
		}
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("expected string or bytes-like object, got '%s'", typeName(k))
		}
		if strings.ContainsAny(ks, " \t\n\r\f\v/>=") {
			return nil, fmt.Errorf("Invalid character in attribute name: %s", shortRepr(ks))
		}
		if n > 0 || truth(a.get(0, true)) {
			w.WriteString(" ")
		}
		n++
		w.WriteString(string(r.escape(ks)))
		w.WriteString(`="`)
		w.WriteString(string(r.escape(val)))
		w.WriteString(`"`)
	}
	if n == 0 {
		return "", nil
	}
	return w.String(), nil
}

// titleFilter is Jinja2's title filter: words start after -, whitespace
// and ([{<; each word's first character upper-cased, the rest lowered.
func titleFilter(s string) string {
	var b strings.Builder
	start := true
	for _, c := range s {
		sep := c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || isSpace(c)
		switch {
		case sep:
			b.WriteRune(c)
			start = true
		case start:
			b.WriteString(strings.ToUpper(string(c)))
			start = false
		default:
			b.WriteString(strings.ToLower(string(c)))
		}
	}
	return b.String()
}

// testFn is a test (`x is name(args)`).
type testFn func(r *renderer, v any, args []any) (bool, error)

var tests map[string]testFn

func isType(f func(any) bool) testFn {
	return func(_ *renderer, v any, _ []any) (bool, error) { return f(v), nil }
}

func init() {
	cmp := func(op string) testFn {
		return func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("test takes one argument (%d given)", len(args))
			}
			return r.compareOp(0, op, v, args[0]), nil
		}
	}
	mod2 := func(want int64) testFn {
		return func(r *renderer, v any, args []any) (bool, error) {
			return r.equal(r.arith(0, "%", unmark(v), int64(2)), want), nil
		}
	}
	tests = map[string]testFn{
		"defined":   isType(func(v any) bool { _, u := v.(Undefined); return !u }),
		"undefined": isType(func(v any) bool { _, u := v.(Undefined); return u }),
		"none":      isType(func(v any) bool { return v == nil }),
		"boolean":   isType(func(v any) bool { _, ok := v.(bool); return ok }),
		"true":      isType(func(v any) bool { b, ok := v.(bool); return ok && b }),
		"false":     isType(func(v any) bool { b, ok := v.(bool); return ok && !b }),
		"integer":   isType(func(v any) bool { _, ok := v.(int64); return ok }),
		"float":     isType(func(v any) bool { _, ok := v.(float64); return ok }),
		"number": isType(func(v any) bool {
			switch v.(type) {
			case int64, float64, bool:
				return true
			}
			return false
		}),
		"string":  isType(isText),
		"mapping": isType(func(v any) bool { _, ok := v.(*Dict); return ok }),
		"escaped": isType(func(v any) bool { _, ok := v.(markup); return ok }),
		"iterable": isType(func(v any) bool {
			switch v.(type) {
			case string, markup, []any, Tuple, *Dict, *generator, Undefined, *loopInfo:
				return true
			}
			return false
		}),
		"sequence": isType(func(v any) bool {
			switch v.(type) {
			case string, markup, []any, Tuple, *Dict, Undefined:
				return true
			}
			return false
		}),
		"callable": isType(func(v any) bool {
			switch v.(type) {
			case *callable, *joiner, *loopInfo, Undefined:
				return true
			}
			return false
		}),
		"filter": isType(func(v any) bool { s, ok := unmark(v).(string); _, f := filters[s]; return ok && f }),
		"test":   isType(func(v any) bool { s, ok := unmark(v).(string); _, f := tests[s]; return ok && f }),
		"sameas": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("sameas takes one argument")
			}
			return sameAs(v, args[0]), nil
		},
		"odd":  mod2(1),
		"even": mod2(0),
		"divisibleby": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("divisibleby takes one argument")
			}
			return r.equal(r.arith(0, "%", unmark(v), unmark(args[0])), int64(0)), nil
		},
		"lower": func(r *renderer, v any, _ []any) (bool, error) { return strIs(r.str(v), "islower"), nil },
		"upper": func(r *renderer, v any, _ []any) (bool, error) { return strIs(r.str(v), "isupper"), nil },
		"eq":    cmp("=="), "equalto": cmp("=="), "==": cmp("=="),
		"ne": cmp("!="), "!=": cmp("!="),
		"lt": cmp("<"), "lessthan": cmp("<"), "<": cmp("<"),
		"le": cmp("<="), "<=": cmp("<="),
		"gt": cmp(">"), "greaterthan": cmp(">"), ">": cmp(">"),
		"ge": cmp(">="), ">=": cmp(">="),
		"in": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("in takes one argument")
			}
			return r.contains(0, args[0], v), nil
		},
	}
}

// sameAs approximates Python's `is`: singletons, small ints and equal
// strings are the same object; containers only when they are.
func sameAs(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y && x >= -5 && x <= 256
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	case *Dict, *Namespace, *callable, *generator, *loopInfo, *cycler, *joiner:
		return a == b
	}
	return false
}

func (r *renderer) test(x *testExpr, sc *scope) bool {
	t, ok := tests[x.name]
	if !ok {
		r.fail(x.ln, "No test named '%s'.", x.name)
	}
	v := r.eval(x.arg, sc)
	args, _ := r.args(&x.call, sc)
	r.line = x.ln
	res, err := t(r, v, args)
	if err != nil {
		r.fail(x.ln, "%v", err)
	}
	return res
}

// strftime formats t with Python's strftime directives.
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case '-':
			if i+1 < len(f) {
				i++
				switch f[i] {
				case 'd':
					fmt.Fprintf(&b, "%d", t.Day())
				case 'm':
					fmt.Fprintf(&b, "%d", int(t.Month()))
				case 'H':
					fmt.Fprintf(&b, "%d", t.Hour())
				default:
					b.WriteString("%-" + string(f[i]))
				}
			}
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			fmt.Fprintf(&b, "%02d", h)
		case 'p':
			b.WriteString(map[bool]string{true: "AM", false: "PM"}[t.Hour() < 12])
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'Z':
			b.WriteString(t.Format("MST"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}
