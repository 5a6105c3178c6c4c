package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// Gemma 4 writes a call as <|tool_call>call:NAME{key:value,…}<tool_call|>:
// keys bare, strings between <|"|> quotes (no escapes inside), numbers,
// true, false and null as in JSON, and lists and nested objects in the
// same syntax. decodeGemma4Call converts the arguments to JSON; JSON
// itself (quoted keys and strings) is read too, as a grammar-constrained
// call writes it.

const gemmaQuote = `<|"|>`

// maxGemmaDepth bounds the nesting of a call's arguments.
const maxGemmaDepth = 64

// decodeGemma4Call reads the body of a <|tool_call> block: "call:NAME{…}".
func decodeGemma4Call(body string, tools []Tool) (ToolCall, bool) {
	body = strings.TrimSpace(body)
	if !strings.HasPrefix(body, "call:") {
		return ToolCall{}, false
	}
	body = body[len("call:"):]
	i := strings.IndexByte(body, '{')
	if i <= 0 {
		return ToolCall{}, false
	}
	name := strings.TrimSpace(body[:i])
	args, err := gemmaToJSON(body[i:])
	if err != nil {
		return ToolCall{}, false
	}
	return decodeArgs(name, args, tools)
}

// gemmaToJSON converts one Gemma 4 object (the whole of s) to JSON.
func gemmaToJSON(s string) ([]byte, error) {
	p := &gemmaParser{s: s}
	var out bytes.Buffer
	p.skipSpace()
	if p.peek() != '{' {
		return nil, errors.New("gemma4: arguments are not an object")
	}
	if err := p.value(&out, 0); err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.i != len(p.s) {
		return nil, errors.New("gemma4: text after the arguments")
	}
	return out.Bytes(), nil
}

type gemmaParser struct {
	s string
	i int
}

func (p *gemmaParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *gemmaParser) skipSpace() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *gemmaParser) value(out *bytes.Buffer, depth int) error {
	if depth > maxGemmaDepth {
		return errors.New("gemma4: arguments nested too deeply")
	}
	p.skipSpace()
	switch c := p.peek(); {
	case strings.HasPrefix(p.s[p.i:], gemmaQuote):
		s, err := p.quoted()
		if err != nil {
			return err
		}
		writeJSONString(out, s)
	case c == '"':
		d := json.NewDecoder(strings.NewReader(p.s[p.i:]))
		var s string
		if err := d.Decode(&s); err != nil {
			return err
		}
		p.i += int(d.InputOffset())
		writeJSONString(out, s)
	case c == '{':
		p.i++
		out.WriteByte('{')
		p.skipSpace()
		for n := 0; p.peek() != '}'; n++ {
			if n > 0 {
				if p.peek() != ',' {
					return errors.New("gemma4: want , or } in an object")
				}
				p.i++
				out.WriteByte(',')
				p.skipSpace()
			}
			key, err := p.key()
			if err != nil {
				return err
			}
			writeJSONString(out, key)
			out.WriteByte(':')
			if err := p.value(out, depth+1); err != nil {
				return err
			}
			p.skipSpace()
		}
		p.i++
		out.WriteByte('}')
	case c == '[':
		p.i++
		out.WriteByte('[')
		p.skipSpace()
		for n := 0; p.peek() != ']'; n++ {
			if n > 0 {
				if p.peek() != ',' {
					return errors.New("gemma4: want , or ] in a list")
				}
				p.i++
				out.WriteByte(',')
			}
			if err := p.value(out, depth+1); err != nil {
				return err
			}
			p.skipSpace()
		}
		p.i++
		out.WriteByte(']')
	default: // a number, true, false or null: up to the next delimiter
		j := p.i
		for j < len(p.s) && strings.IndexByte(",}] \t\r\n", p.s[j]) < 0 {
			j++
		}
		tok := p.s[p.i:j]
		var v any
		if tok == "" || json.Unmarshal([]byte(tok), &v) != nil {
			return errors.New("gemma4: bad value " + tok)
		}
		if _, ok := v.(string); ok {
			return errors.New("gemma4: bad value " + tok)
		}
		out.WriteString(tok)
		p.i = j
	}
	return nil
}

// quoted reads a <|"|>…<|"|> string.
func (p *gemmaParser) quoted() (string, error) {
	p.i += len(gemmaQuote)
	j := strings.Index(p.s[p.i:], gemmaQuote)
	if j < 0 {
		return "", errors.New("gemma4: unterminated string")
	}
	s := p.s[p.i : p.i+j]
	p.i += j + len(gemmaQuote)
	return s, nil
}

// key reads an object key and its colon: bare (up to the colon), or
// quoted either way.
func (p *gemmaParser) key() (string, error) {
	var k string
	switch {
	case strings.HasPrefix(p.s[p.i:], gemmaQuote):
		s, err := p.quoted()
		if err != nil {
			return "", err
		}
		k = s
	case p.peek() == '"':
		d := json.NewDecoder(strings.NewReader(p.s[p.i:]))
		if err := d.Decode(&k); err != nil {
			return "", err
		}
		p.i += int(d.InputOffset())
	default:
		j := strings.IndexAny(p.s[p.i:], ":}")
		if j <= 0 || p.s[p.i+j] != ':' {
			return "", errors.New("gemma4: bad key")
		}
		k = strings.TrimSpace(p.s[p.i : p.i+j])
		p.i += j
	}
	p.skipSpace()
	if p.peek() != ':' {
		return "", errors.New("gemma4: want : after a key")
	}
	p.i++
	return k, nil
}

// writeJSONString writes s as a JSON string, without HTML escapes.
func writeJSONString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	out.Truncate(out.Len() - 1) // Encode's newline
}
