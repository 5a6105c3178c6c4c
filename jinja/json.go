package jinja

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxJSONDepth bounds the nesting of decoded contexts.
const maxJSONDepth = 256

// DecodeJSON parses JSON into template values, keeping object key order
// (tojson prints keys in insertion order, as Python's json.dumps does)
// and telling integers (1) from floats (1.0).
func DecodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, 0)
	if err != nil {
		return nil, fmt.Errorf("jinja: context JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("jinja: context JSON: data after the value")
	}
	return v, nil
}

func decodeValue(d *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d", maxJSONDepth)
	}
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch x := t.(type) {
	case json.Delim:
		switch x {
		case '{':
			m := NewDict()
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				m.Set(k.(string), v)
			}
			_, err := d.Token()
			return m, err
		case '[':
			l := []any{}
			for d.More() {
				v, err := decodeValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := d.Token()
			return l, err
		}
		return nil, fmt.Errorf("unexpected %v", x)
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		return f, nil
	case string, bool, nil:
		return x, nil
	}
	return nil, fmt.Errorf("unexpected token %v", t)
}

// FromGo converts Go values (maps, slices, numbers, strings) into template
// values. Map keys are sorted (Go maps have no order); use *Dict or
// DecodeJSON for ordered objects.
func FromGo(v any) any { return fromGo(v, 0) }

func fromGo(v any, depth int) any {
	if depth > maxJSONDepth { // as DecodeJSON: too deep is no value
		return nil
	}
	switch x := v.(type) {
	case nil, bool, int64, float64, string, *Dict, []any, Tuple:
		if l, ok := x.([]any); ok {
			out := make([]any, len(l))
			for i, e := range l {
				out[i] = fromGo(e, depth+1)
			}
			return out
		}
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	case map[string]any:
		b, _ := json.Marshal(x)
		v, _ := DecodeJSON(b)
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	out, _ := DecodeJSON(b)
	return out
}

// dumpOpts are json.dumps' arguments as transformers' tojson passes them.
type dumpOpts struct {
	indent      string // "" with hasIndent false: compact
	hasIndent   bool
	itemSep     string
	keySep      string
	sortKeys    bool
	ensureASCII bool
}

// jsonDumps is Python's json.dumps(v, ensure_ascii=False, …), charged to
// the budget as it is written.
func (r *renderer) jsonDumps(v any, o dumpOpts) (string, error) {
	w := r.buf()
	if err := r.dump(w, v, o, 0); err != nil {
		return "", err
	}
	return w.String(), nil
}

func (r *renderer) dump(b *sbuf, v any, o dumpOpts, level int) error {
	if level > maxValueDepth {
		return errors.New("maximum recursion depth exceeded while encoding a JSON object (circular?)")
	}
	r.step(1)
	newline := func(l int) {
		if o.hasIndent {
			b.WriteByte('\n')
			for range l {
				b.WriteString(o.indent)
			}
		}
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonFloat(x))
	case string:
		r.scan(len(x))
		jsonString(b, x, o.ensureASCII)
	case markup:
		jsonString(b, string(x), o.ensureASCII)
	case []any, Tuple:
		l, _ := asSeq(x)
		if len(l) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range l {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			if err := r.dump(b, e, o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte(']')
	case *Dict:
		if x.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		keys := x.keys
		if o.sortKeys {
			var err error
			if keys, err = r.sortedKeys(x); err != nil {
				return err
			}
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(o.itemSep)
			}
			newline(level + 1)
			var ks string
			switch kk := k.(type) {
			case string:
				ks = kk
			case nil:
				ks = "null"
			case int64:
				ks = strconv.FormatInt(kk, 10)
			case float64:
				ks = jsonFloat(kk)
			case bool:
				ks = map[bool]string{true: "true", false: "false"}[kk]
			default:
				return fmt.Errorf("keys must be str, int, float, bool or None, not %s", typeName(k))
			}
			jsonString(b, ks, o.ensureASCII)
			b.WriteString(o.keySep)
			if err := r.dump(b, x.val(k), o, level+1); err != nil {
				return err
			}
		}
		newline(level)
		b.WriteByte('}')
	default:
		return fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func jsonFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	return pyFloat(x)
}

// JSONQuote is s as a JSON string, quotes included, exactly as the
// template's tojson writes it (with ensure_ascii or without).
func JSONQuote(s string, ensureASCII bool) string {
	var b sbuf
	jsonString(&b, s, ensureASCII)
	return b.String()
}

// jsonString writes s as Python's json module does: \" \\ \n \r \t \b \f,
// other control characters as \u00XX, non-ASCII kept unless ensureASCII.
func jsonString(b *sbuf, s string, ensureASCII bool) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			case ensureASCII && r > 0x7e:
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}
