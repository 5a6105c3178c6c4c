// Template globals (range, dict, namespace, cycler, joiner, lipsum, raise_exception, strftime_now) and strftime.

package jinja

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
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
