package grammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// JSON Schema property order decides the order of keys in the output (as
// in llama.cpp, which parses schemas with ordered_json), so schemas are
// read into values that keep object key order.

// object is a JSON object in document order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) (any, bool) {
	if o == nil {
		return nil, false
	}
	v, ok := o.vals[k]
	return v, ok
}

func (o *object) has(k string) bool { _, ok := o.get(k); return ok }

// parseJSON decodes text into nil, bool, json.Number, string, []any or *object.
func parseJSON(text []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	v, err := readValue(d, 0)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("json: unexpected end of input")
	}
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("json: trailing data after the value")
	}
	return v, nil
}

func readValue(d *json.Decoder, depth int) (any, error) {
	if depth > MaxJSONDepth {
		return nil, &LimitError{"MaxJSONDepth", MaxJSONDepth, fmt.Sprintf("the schema's JSON is nested deeper than %d", MaxJSONDepth)}
	}
	t, err := d.Token()
	if err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("json: unexpected end of input")
		}
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{vals: map[string]any{}}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := readValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.keys = append(o.keys, k)
				}
				o.vals[k] = v
			}
			_, err := d.Token()
			return o, err
		case '[':
			var a []any
			for d.More() {
				v, err := readValue(d, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if a == nil {
				a = []any{}
			}
			_, err := d.Token()
			return a, err
		}
		return nil, fmt.Errorf("json: unexpected %v", t)
	default:
		return t, nil
	}
}

// dumpJSON writes v compactly as nlohmann::json's dump() does (no spaces,
// non-ASCII kept as is).
func dumpJSON(v any) string {
	var b bytes.Buffer
	writeJSON(&b, v)
	return b.String()
}

func writeJSON(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case json.Number:
		b.WriteString(v.String())
	case string:
		e := json.NewEncoder(b)
		e.SetEscapeHTML(false)
		e.Encode(v)
		b.Truncate(b.Len() - 1) // Encode's newline
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, x)
		}
		b.WriteByte(']')
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, k)
			b.WriteByte(':')
			writeJSON(b, v.vals[k])
		}
		b.WriteByte('}')
	}
}
