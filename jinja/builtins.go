package jinja

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// globals are the functions every template sees: Jinja2's (range, dict,
// lipsum, cycler, joiner, namespace) and transformers' (raise_exception,
// strftime_now).
var globals map[string]any

func init() {
	globals = map[string]any{
		"range":           &callable{"range", fnRange},
		"namespace":       &callable{"namespace", fnNamespace},
		"dict":            &callable{"dict", fnDict},
		"lipsum":          &callable{"generate_lorem_ipsum", fnLipsum},
		"cycler":          &callable{"Cycler", fnCycler},
		"joiner":          &callable{"Joiner", fnJoiner},
		"raise_exception": &callable{"raise_exception", fnRaise},
		"strftime_now":    &callable{"strftime_now", fnStrftimeNow},
	}
}

// maxMessage clips raise_exception's message.
const maxMessage = 4096

// maxRange is the sandbox's MAX_RANGE: range() of more items fails.
const maxRange = 100_000

func fnRange(r *renderer, args []any, kw *Dict) (any, error) {
	if kw.Len() > 0 {
		return nil, errors.New("range() takes no keyword arguments")
	}
	var n [3]int64
	n[2] = 1
	for _, a := range args {
		if _, ok := intVal(a); !ok {
			return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
	}
	switch len(args) {
	case 1:
		n[1], _ = intVal(args[0])
	case 2, 3:
		for i, a := range args {
			n[i], _ = intVal(a)
		}
	default:
		return nil, fmt.Errorf("range expected at most 3 arguments, got %d", len(args))
	}
	if n[2] == 0 {
		return nil, errors.New("range() arg 3 must not be zero")
	}
	count := (float64(n[1]) - float64(n[0])) / float64(n[2]) // float: no overflow
	if count > maxRange {
		return nil, fmt.Errorf("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange)
	}
	c := max(int(count+1), 0)
	r.alloc(slotBytes * c)
	r.step(c)
	out := make([]any, 0, c)
	for i := n[0]; (n[2] > 0 && i < n[1]) || (n[2] < 0 && i > n[1]); i += n[2] {
		out = append(out, i)
	}
	return out, nil
}

func fnNamespace(r *renderer, args []any, kw *Dict) (any, error) {
	d, err := r.dictFrom("namespace", args, kw)
	if err != nil {
		return nil, err
	}
	return &Namespace{d: d}, nil
}

func fnDict(r *renderer, args []any, kw *Dict) (any, error) { return r.dictFrom("dict", args, kw) }

// dictFrom is dict(mapping_or_pairs, **kw).
func (r *renderer) dictFrom(name string, args []any, kw *Dict) (*Dict, error) {
	if len(args) > 1 {
		return nil, fmt.Errorf("%s expected at most 1 argument, got %d", name, len(args))
	}
	d := NewDict()
	if len(args) == 1 {
		switch src := args[0].(type) {
		case *Dict:
			r.alloc(entryBytes * src.Len())
			for _, k := range src.keys {
				d.Set(k, src.val(k))
			}
		default:
			items, err := r.iterate(src)
			if err != nil {
				return nil, err
			}
			r.alloc(entryBytes * len(items))
			for i, it := range items {
				r.step(1)
				pair, err := r.iterate(it)
				if err != nil {
					return nil, fmt.Errorf("cannot convert dictionary update sequence element #%d to a sequence", i)
				}
				if len(pair) != 2 {
					return nil, fmt.Errorf("dictionary update sequence element #%d has length %d; 2 is required", i, len(pair))
				}
				if !hashable(pair[0]) {
					return nil, fmt.Errorf("unhashable type: '%s'", typeName(pair[0]))
				}
				d.Set(pair[0], pair[1])
			}
		}
	}
	r.alloc(entryBytes * kw.Len())
	for _, k := range kw.keys {
		d.Set(k, kw.val(k))
	}
	return d, nil
}

func fnRaise(r *renderer, args []any, _ *Dict) (any, error) {
	msg := "raise_exception"
	if len(args) > 0 {
		msg = r.str(args[0])
	}
	if len(msg) > maxMessage { // the message goes into logs and HTTP errors
		msg = msg[:maxMessage] + "…"
	}
	return nil, &Error{Line: r.line, Msg: msg}
}

func fnStrftimeNow(r *renderer, args []any, _ *Dict) (any, error) {
	if len(args) != 1 {
		return nil, errors.New("strftime_now takes one format")
	}
	f, ok := unmark(args[0]).(string)
	if !ok {
		return nil, errors.New("strftime_now: the format must be a string")
	}
	r.scan(len(f))
	out := strftime(r.now, f)
	r.alloc(len(out))
	return out, nil
}

// cycler is Jinja2's Cycler: next(), reset(), current.
type cycler struct {
	items []any
	pos   int
}

func fnCycler(r *renderer, args []any, _ *Dict) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("at least one item has to be provided")
	}
	r.alloc(slotBytes * len(args))
	return &cycler{items: append([]any{}, args...)}, nil
}

func (c *cycler) attr(name string) (any, bool) {
	switch name {
	case "current":
		return c.items[c.pos], true
	case "next", "__next__":
		return &callable{"next", func(*renderer, []any, *Dict) (any, error) {
			v := c.items[c.pos]
			c.pos = (c.pos + 1) % len(c.items)
			return v, nil
		}}, true
	case "reset":
		return &callable{"reset", func(*renderer, []any, *Dict) (any, error) {
			c.pos = 0
			return nil, nil
		}}, true
	case "items":
		return Tuple(c.items), true
	case "pos":
		return int64(c.pos), true
	}
	return nil, false
}

// joiner is Jinja2's Joiner: "" the first call, sep after.
type joiner struct {
	sep  any
	used bool
}

func fnJoiner(_ *renderer, args []any, kw *Dict) (any, error) {
	sep := kwArg(args, kw, 0, "sep", ", ")
	return &joiner{sep: sep}, nil
}

func (j *joiner) call() *callable {
	return &callable{"Joiner", func(*renderer, []any, *Dict) (any, error) {
		if !j.used {
			j.used = true
			return "", nil
		}
		return j.sep, nil
	}}
}

// loremWords are Jinja2's LOREM_IPSUM_WORDS.
var loremWords = strings.Fields(`a ac accumsan ad adipiscing aenean aliquam aliquet amet ante aptent arcu at
auctor augue bibendum blandit class commodo condimentum congue consectetuer
consequat conubia convallis cras cubilia cum curabitur curae cursus dapibus
diam dictum dictumst dignissim dis dolor donec dui duis egestas eget eleifend
elementum elit enim erat eros est et etiam eu euismod facilisi facilisis fames
faucibus felis fermentum feugiat fringilla fusce gravida habitant habitasse hac
hendrerit hymenaeos iaculis id imperdiet in inceptos integer interdum ipsum
justo lacinia lacus laoreet lectus leo libero ligula litora lobortis lorem
luctus maecenas magna magnis malesuada massa mattis mauris metus mi molestie
mollis montes morbi mus nam nascetur natoque nec neque netus nibh nisi nisl non
nonummy nostra nulla nullam nunc odio orci ornare parturient pede pellentesque
penatibus per pharetra phasellus placerat platea porta porttitor posuere
potenti praesent pretium primis proin pulvinar purus quam quis quisque rhoncus
ridiculus risus rutrum sagittis sapien scelerisque sed sem semper senectus sit
sociis sociosqu sodales sollicitudin suscipit suspendisse taciti tellus tempor
tempus tincidunt torquent tortor tristique turpis ullamcorper ultrices
ultricies urna ut varius vehicula vel velit venenatis vestibulum vitae vivamus
viverra volutpat vulputate`)

// fnLipsum is generate_lorem_ipsum(n=5, html=True, min=20, max=100):
// random text, as in Jinja2.
func fnLipsum(r *renderer, args []any, kw *Dict) (any, error) {
	ints := [3]int64{5, 20, 100}
	for i, name := range []string{"n", "min", "max"} {
		pos := []int{0, 2, 3}[i]
		v := kwArg(args, kw, pos, name, ints[i])
		n, ok := intVal(v)
		if !ok {
			return nil, fmt.Errorf("lipsum: %s must be an integer", name)
		}
		ints[i] = n
	}
	n, lo, hi := ints[0], ints[1], ints[2]
	html := truth(kwArg(args, kw, 1, "html", true))
	if n > 0 && hi <= lo {
		return nil, fmt.Errorf("empty range for randrange() (%d, %d, %d)", lo, hi, hi-lo)
	}
	w := r.buf()
	for p := int64(0); p < n; p++ {
		if p > 0 {
			if html {
				w.WriteString("\n")
			} else {
				w.WriteString("\n\n")
			}
		}
		var words []string
		next, lastComma, lastStop, last := true, 0, 0, ""
		count := int(lo + rand.Int64N(hi-lo))
		r.step(8 * count)
		for idx := range count {
			word := last
			for word == last {
				word = loremWords[rand.IntN(len(loremWords))]
			}
			last = word
			if next {
				word = capitalize(word)
				next = false
			}
			if idx-(3+rand.IntN(5)) > lastComma {
				lastComma = idx
				lastStop += 2
				word += ","
			}
			if idx-(10+rand.IntN(10)) > lastStop {
				lastComma, lastStop = idx, idx
				word += "."
				next = true
			}
			words = append(words, word)
		}
		para := strings.Join(words, " ")
		if strings.HasSuffix(para, ",") {
			para = para[:len(para)-1] + "."
		} else if !strings.HasSuffix(para, ".") {
			para += "."
		}
		if html {
			w.WriteString("<p>" + htmlEscape(para) + "</p>")
		} else {
			w.WriteString(para)
		}
	}
	if html {
		return markup(w.String()), nil
	}
	return w.String(), nil
}

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
		return simple(strings.ToUpper)
	case "lower", "casefold":
		return simple(strings.ToLower)
	case "title":
		return simple(title)
	case "capitalize":
		return simple(capitalize)
	case "swapcase":
		return simple(func(s string) string {
			return strings.Map(func(c rune) rune {
				if unicode.IsUpper(c) {
					return unicode.ToLower(c)
				}
				return unicode.ToUpper(c)
			}, s)
		})
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
			if c < 0x20 || c == 0x7f || (c >= 0x80 && !printable(c)) {
				return false
			}
		}
		return true
	case "isidentifier":
		for i, c := range s {
			if !(c == '_' || unicode.IsLetter(c) || (i > 0 && (unicode.IsDigit(c) || unicode.Is(unicode.Mn, c) || unicode.Is(unicode.Mc, c)))) {
				return false
			}
		}
		return s != ""
	case "istitle":
		cased, prev := false, false
		for _, c := range s {
			switch {
			case unicode.IsUpper(c) || unicode.IsTitle(c):
				if prev {
					return false
				}
				prev, cased = true, true
			case unicode.IsLower(c):
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
		case "isdigit", "isdecimal":
			if !unicode.IsDigit(r) {
				return false
			}
		case "isnumeric":
			if !unicode.IsNumber(r) {
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
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
				return false
			}
		case "isupper":
			if unicode.IsLower(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || unicode.IsUpper(r)
		case "islower":
			if unicode.IsUpper(r) || unicode.IsTitle(r) {
				return false
			}
			cased = cased || unicode.IsLower(r)
		}
	}
	return cased || (name != "isupper" && name != "islower")
}

// title is Python's str.title: a cased letter after an uncased character
// starts a word.
func title(s string) string {
	var b strings.Builder
	prevCased := false
	for _, r := range s {
		if prevCased {
			b.WriteRune(unicode.ToLower(r))
		} else {
			b.WriteRune(unicode.ToTitle(r))
		}
		prevCased = unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r)
	}
	return b.String()
}

// capitalize is Python's str.capitalize: the first character in title
// case, the rest lower case.
func capitalize(s string) string {
	for i, r := range s {
		return string(unicode.ToTitle(r)) + strings.ToLower(s[i+utf8.RuneLen(r):])
	}
	return s
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

func absInt(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// sortAny sorts items stably by key (Python's sorted: reverse keeps the
// order of equal items), charging the comparisons.
func (r *renderer) sortAny(items []any, reverse bool, key func(any) any) error {
	keys := make([]any, len(items))
	for i, it := range items {
		keys[i] = key(it)
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var err error
	slices.SortStableFunc(idx, func(a, b int) int {
		if err != nil {
			return 0
		}
		c, e := r.compare(keys[a], keys[b], "<")
		if e != nil {
			err = e
			return 0
		}
		if reverse {
			return -c
		}
		return c
	})
	if err != nil {
		return err
	}
	out := make([]any, len(items))
	for i, j := range idx {
		out[i] = items[j]
	}
	copy(items, out)
	return nil
}
