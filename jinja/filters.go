package jinja

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
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

func init() {
	filters = map[string]filterFn{
		"safe":   func(_ *renderer, v any, _ []any, _ *Dict) (any, error) { return v, nil },
		"string": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) { return str(v), nil },
		"upper":  func(_ *renderer, v any, _ []any, _ *Dict) (any, error) { return strings.ToUpper(str(v)), nil },
		"lower":  func(_ *renderer, v any, _ []any, _ *Dict) (any, error) { return strings.ToLower(str(v)), nil },
		"title":  func(_ *renderer, v any, _ []any, _ *Dict) (any, error) { return title(str(v)), nil },
		"capitalize": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			return capitalize(str(v)), nil
		},
		"trim": func(_ *renderer, v any, args []any, kw *Dict) (any, error) {
			if c, ok := kwArg(args, kw, 0, "chars", nil).(string); ok {
				return strings.Trim(str(v), c), nil
			}
			return strings.TrimFunc(str(v), unicode.IsSpace), nil
		},
		"length": fLength,
		"count":  fLength,
		"first": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return Undefined{Name: "first"}, nil
			}
			return items[0], nil
		},
		"last": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			if _, ok := v.(*generator); ok {
				return nil, errors.New("'generator' object is not reversible")
			}
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return Undefined{Name: "last"}, nil
			}
			return items[len(items)-1], nil
		},
		"list": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			return append([]any{}, items...), nil
		},
		"join": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			sep := str(kwArg(args, kw, 0, "d", ""))
			attr := kwArg(args, kw, 1, "attribute", nil)
			parts := make([]string, len(items))
			for i, it := range items {
				if attr != nil {
					it = r.attrPath(it, attr)
				}
				parts[i] = str(it)
			}
			return strings.Join(parts, sep), nil
		},
		"default": fDefault,
		"d":       fDefault,
		"replace": func(_ *renderer, v any, args []any, kw *Dict) (any, error) {
			if len(args) < 2 {
				return nil, errors.New("replace needs old and new")
			}
			n := int64(-1)
			if c, ok := intVal(kwArg(args, kw, 2, "count", nil)); ok {
				n = c
			}
			return strings.Replace(str(v), str(args[0]), str(args[1]), int(n)), nil
		},
		"int": func(_ *renderer, v any, args []any, kw *Dict) (any, error) {
			def := kwArg(args, kw, 0, "default", int64(0))
			switch x := v.(type) {
			case int64:
				return x, nil
			case bool:
				n, _ := intVal(x)
				return n, nil
			case float64:
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return def, nil
				}
				return int64(x), nil
			case string:
				s := strings.TrimSpace(x)
				if n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64); err == nil {
					return n, nil
				}
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					return int64(f), nil
				}
			}
			return def, nil
		},
		"float": func(_ *renderer, v any, args []any, kw *Dict) (any, error) {
			if f, ok := number(v); ok {
				return f, nil
			}
			if s, ok := v.(string); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
					return f, nil
				}
			}
			return kwArg(args, kw, 0, "default", 0.0), nil
		},
		"abs": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			switch x := v.(type) {
			case int64:
				return absInt(x), nil
			case float64:
				return math.Abs(x), nil
			}
			return nil, fmt.Errorf("bad operand type for abs(): '%s'", typeName(v))
		},
		"round": func(_ *renderer, v any, args []any, kw *Dict) (any, error) {
			f, ok := number(v)
			if !ok {
				return nil, fmt.Errorf("round: %s is not a number", typeName(v))
			}
			prec, _ := intVal(kwArg(args, kw, 0, "precision", int64(0)))
			method := str(kwArg(args, kw, 1, "method", "common"))
			p := math.Pow(10, float64(prec))
			switch method {
			case "common": // Python's round: half to even
				return roundHalfEven(f, int(prec)), nil
			case "ceil":
				return math.Ceil(f*p) / p, nil
			case "floor":
				return math.Floor(f*p) / p, nil
			}
			return nil, errors.New("method must be common, ceil or floor")
		},
		"items": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			if _, ok := v.(Undefined); ok {
				return &generator{name: "items"}, nil
			}
			d, ok := v.(*Dict)
			if !ok {
				return nil, fmt.Errorf("can only get item pairs from a mapping, not %s", typeName(v))
			}
			out := make([]any, 0, d.Len())
			for _, k := range d.keys {
				out = append(out, Tuple{k, d.vals[k]})
			}
			return &generator{items: out, name: "items"}, nil
		},
		"tojson": func(_ *renderer, v any, args []any, kw *Dict) (any, error) {
			o := dumpOpts{itemSep: ", ", keySep: ": "}
			if ind := kwArg(args, kw, 0, "indent", nil); ind != nil {
				o.hasIndent, o.itemSep = true, ","
				switch x := ind.(type) {
				case int64:
					if x > 1024 {
						return nil, errors.New("tojson: indent over 1024")
					}
					o.indent = strings.Repeat(" ", int(max(x, 0)))
				case string:
					o.indent = x
				default:
					return nil, fmt.Errorf("tojson: indent must be an int or a string")
				}
			}
			if sep, ok := kwArg(args, kw, 1, "separators", nil).(Tuple); ok && len(sep) == 2 {
				o.itemSep, o.keySep = str(sep[0]), str(sep[1])
			}
			o.sortKeys = truth(kwArg(args, kw, 2, "sort_keys", false))
			o.ensureASCI = truth(kwArg(args, kw, 3, "ensure_ascii", false))
			return jsonDumps(v, o)
		},
		"indent": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			width := kwArg(args, kw, 0, "width", int64(4))
			first := truth(kwArg(args, kw, 1, "first", false))
			blank := truth(kwArg(args, kw, 2, "blank", false))
			pad := ""
			switch w := width.(type) {
			case int64:
				if w > int64(r.lim.MaxOutput) {
					return nil, errors.New("indent width exceeds the output limit")
				}
				pad = strings.Repeat(" ", int(max(w, 0)))
			case string:
				pad = w
			}
			s := str(v)
			lines := strings.Split(s, "\n")
			for i := range lines {
				if i == 0 && !first {
					continue
				}
				if lines[i] == "" && !blank {
					continue
				}
				lines[i] = pad + lines[i]
			}
			return strings.Join(lines, "\n"), nil
		},
		"unique": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			attr := kwArg(args, kw, 1, "attribute", nil)
			var out, seen []any
			for _, it := range items {
				key := it
				if attr != nil {
					key = r.attrPath(it, attr)
				}
				if s, ok := key.(string); ok && !truth(kwArg(args, kw, 0, "case_sensitive", false)) {
					key = strings.ToLower(s)
				}
				dup := false
				for _, s := range seen {
					if equal(s, key) {
						dup = true
						break
					}
				}
				if !dup {
					seen = append(seen, key)
					out = append(out, it)
				}
			}
			return &generator{items: out, name: "unique"}, nil
		},
		"reverse": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			if s, ok := v.(string); ok {
				rs := []rune(s)
				for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
					rs[i], rs[j] = rs[j], rs[i]
				}
				return string(rs), nil
			}
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			out := make([]any, len(items))
			for i, it := range items {
				out[len(items)-1-i] = it
			}
			return &generator{items: out, name: "reverse"}, nil
		},
		"sort": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			out := append([]any{}, items...)
			reverse := truth(kwArg(args, kw, 0, "reverse", false))
			attr := kwArg(args, kw, 2, "attribute", nil)
			err = sortAny(out, reverse, func(x any) any {
				if attr != nil {
					x = r.attrPath(x, attr)
				}
				if s, ok := x.(string); ok && !truth(kwArg(args, kw, 1, "case_sensitive", false)) {
					return strings.ToLower(s)
				}
				return x
			})
			return out, err
		},
		"sum": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			var total any = kwArg(args, kw, 1, "start", int64(0))
			attr := kwArg(args, kw, 0, "attribute", nil)
			for _, it := range items {
				if attr != nil {
					it = r.attrPath(it, attr)
				}
				total = r.arith(0, "+", total, it)
			}
			return total, nil
		},
		"min": fMinMax(-1),
		"max": fMinMax(1),
		"map": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			if !truth(v) { // Jinja's map yields nothing for a false value (None too)
				return &generator{name: "map"}, nil
			}
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			out := make([]any, len(items))
			if attr, ok := kw.Get("attribute"); ok {
				def, hasDef := kw.Get("default")
				for i, it := range items {
					out[i] = r.attrPath(it, attr)
					if _, isU := out[i].(Undefined); isU && hasDef {
						out[i] = def
					}
				}
				return &generator{items: out, name: "map"}, nil
			}
			if len(args) == 0 {
				return nil, errors.New("map requires a filter or an attribute")
			}
			name := str(args[0])
			f, ok := filters[name]
			if !ok {
				return nil, fmt.Errorf("no filter named '%s'", name)
			}
			for i, it := range items {
				r.tick(0, 1)
				if out[i], err = f(r, it, args[1:], NewDict()); err != nil {
					return nil, err
				}
			}
			return &generator{items: out, name: "map"}, nil
		},
		"select":     fSelect(false, false),
		"reject":     fSelect(true, false),
		"selectattr": fSelect(false, true),
		"rejectattr": fSelect(true, true),
		"batch": func(_ *renderer, v any, args []any, kw *Dict) (any, error) {
			items, err := iterate(v)
			if err != nil {
				return nil, err
			}
			n, _ := intVal(kwArg(args, kw, 0, "linecount", int64(1)))
			if n <= 0 {
				return nil, errors.New("batch size must be positive")
			}
			var out []any
			for i := 0; i < len(items); i += int(n) {
				out = append(out, append([]any{}, items[i:min(i+int(n), len(items))]...))
			}
			return &generator{items: out, name: "batch"}, nil
		},
		"wordcount": func(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
			return int64(len(strings.Fields(str(v)))), nil
		},
		"center": func(r *renderer, v any, args []any, kw *Dict) (any, error) {
			w, _ := intVal(kwArg(args, kw, 0, "width", int64(80)))
			if w > int64(r.lim.MaxOutput) {
				return nil, errors.New("center width exceeds the output limit")
			}
			s := str(v)
			pad := int(w) - len([]rune(s))
			if pad <= 0 {
				return s, nil
			}
			left := pad / 2
			if pad%2 == 1 && int(w)%2 == 1 {
				left++
			}
			return strings.Repeat(" ", left) + s + strings.Repeat(" ", pad-left), nil
		},
		"e":      fEscape,
		"escape": fEscape,
	}
}

func fLength(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
	n, err := length(v)
	return int64(n), err
}

func fDefault(_ *renderer, v any, args []any, kw *Dict) (any, error) {
	def := kwArg(args, kw, 0, "default_value", "")
	boolean := truth(kwArg(args, kw, 1, "boolean", false))
	if _, ok := v.(Undefined); ok || (boolean && !truth(v)) {
		return def, nil
	}
	return v, nil
}

func fEscape(_ *renderer, v any, _ []any, _ *Dict) (any, error) {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
	return r.Replace(str(v)), nil
}

func fMinMax(dir int) filterFn {
	return func(r *renderer, v any, args []any, kw *Dict) (any, error) {
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return Undefined{}, nil
		}
		best := items[0]
		for _, it := range items[1:] {
			c, err := compare(it, best, "<")
			if err != nil {
				return nil, err
			}
			if c*dir > 0 {
				best = it
			}
		}
		return best, nil
	}
}

// fSelect builds select/reject/selectattr/rejectattr.
func fSelect(reject, attr bool) filterFn {
	return func(r *renderer, v any, args []any, kw *Dict) (any, error) {
		if !truth(v) { // as in Jinja, a false value (None too) selects nothing
			return &generator{name: "select"}, nil
		}
		items, err := iterate(v)
		if err != nil {
			return nil, err
		}
		var key any
		if attr {
			if len(args) == 0 {
				return nil, errors.New("missing attribute name")
			}
			key, args = args[0], args[1:]
		}
		var out []any
		for _, it := range items {
			r.tick(0, 1)
			x := it
			if attr {
				x = r.attrPath(it, key)
			}
			var ok bool
			if len(args) == 0 {
				ok = truth(x)
			} else {
				name := str(args[0])
				t, found := tests[name]
				if !found {
					return nil, fmt.Errorf("no test named '%s'", name)
				}
				if ok, err = t(r, x, args[1:]); err != nil {
					return nil, err
				}
			}
			if ok != reject {
				out = append(out, it)
			}
		}
		return &generator{items: out, name: "select"}, nil
	}
}

// attrPath looks up a dotted attribute ("a.b") or an integer item.
func (r *renderer) attrPath(v any, attr any) any {
	if n, ok := attr.(int64); ok {
		return r.getitem(0, v, n)
	}
	for _, part := range strings.Split(str(attr), ".") {
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			v = r.getitem(0, v, n)
			continue
		}
		if _, ok := v.(Undefined); ok {
			return v
		}
		v = r.getitem(0, v, part)
	}
	return v
}

// filter applies f to v.
func (r *renderer) filter(f *filterExpr, v any, sc *scope) any {
	fn, ok := filters[f.name]
	if !ok {
		r.fail(f.ln, "no filter named '%s'", f.name)
	}
	args, kw := r.args(&f.call, sc)
	out, err := fn(r, v, args, kw)
	if err != nil {
		if e, ok := err.(*Error); ok {
			panic(e)
		}
		r.fail(f.ln, "%s: %v", f.name, err)
	}
	if s, ok := out.(string); ok {
		r.grow(f.ln, len(s))
	}
	return out
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
				return false, fmt.Errorf("test needs one argument")
			}
			return r.compareOp(0, op, v, args[0]), nil
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
		"string":  isType(func(v any) bool { _, ok := v.(string); return ok }),
		"mapping": isType(func(v any) bool { _, ok := v.(*Dict); return ok }),
		"iterable": isType(func(v any) bool {
			switch v.(type) {
			case string, []any, Tuple, *Dict, *generator, Undefined:
				return true
			}
			return false
		}),
		"sequence": isType(func(v any) bool {
			switch v.(type) {
			case string, []any, Tuple, *Dict:
				return true
			}
			return false
		}),
		"callable": isType(func(v any) bool { _, ok := v.(*callable); return ok }),
		"sameas": func(_ *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("sameas needs one argument")
			}
			switch v.(type) {
			case nil, bool:
				return v == args[0], nil
			}
			return equal(v, args[0]) && typeName(v) == typeName(args[0]), nil
		},
		"odd": func(_ *renderer, v any, _ []any) (bool, error) {
			n, ok := intVal(v)
			return ok && n%2 != 0, nil
		},
		"even": func(_ *renderer, v any, _ []any) (bool, error) {
			n, ok := intVal(v)
			return ok && n%2 == 0, nil
		},
		"divisibleby": func(_ *renderer, v any, args []any) (bool, error) {
			n, ok1 := intVal(v)
			if len(args) != 1 {
				return false, errors.New("divisibleby needs one argument")
			}
			d, ok2 := intVal(args[0])
			if !ok1 || !ok2 || d == 0 {
				return false, errors.New("divisibleby needs integers")
			}
			return n%d == 0, nil
		},
		"lower": func(_ *renderer, v any, _ []any) (bool, error) { s := str(v); return strings.ToLower(s) == s, nil },
		"upper": func(_ *renderer, v any, _ []any) (bool, error) { s := str(v); return strings.ToUpper(s) == s, nil },
		"eq":    cmp("=="), "equalto": cmp("=="), "==": cmp("=="),
		"ne": cmp("!="), "!=": cmp("!="),
		"lt": cmp("<"), "lessthan": cmp("<"), "<": cmp("<"),
		"le": cmp("<="), "<=": cmp("<="),
		"gt": cmp(">"), "greaterthan": cmp(">"), ">": cmp(">"),
		"ge": cmp(">="), ">=": cmp(">="),
		"in": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("in needs one argument")
			}
			return r.contains(0, args[0], v), nil
		},
	}
}

func (r *renderer) test(x *testExpr, sc *scope) bool {
	t, ok := tests[x.name]
	if !ok {
		r.fail(x.ln, "no test named '%s'", x.name)
	}
	v := r.eval(x.arg, sc)
	args, _ := r.args(&x.call, sc)
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
