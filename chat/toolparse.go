package chat

import (
	"encoding/json"
	"strings"
)

// Parsing replies into tool calls, per family.

// blockSyntax is a family that writes each call as a block between an
// opening and a closing marker (the closing one may be cut off at the
// end of the reply).
type blockSyntax struct {
	open, close string
	decode      func(body string, tools []Tool) (ToolCall, bool)
}

func blocksOf(f ToolFormat) (blockSyntax, bool) {
	switch f {
	case ToolsHermes:
		return blockSyntax{"<tool_call>", "</tool_call>", func(body string, tools []Tool) (ToolCall, bool) {
			return decodeCall([]byte(strings.TrimSpace(body)), tools)
		}}, true
	case ToolsGemma4:
		return blockSyntax{"<|tool_call>", "<tool_call|>", decodeGemma4Call}, true
	}
	return blockSyntax{}, false
}

// listMarker is the marker of families that write one marker and then a
// JSON list of calls.
func listMarker(f ToolFormat) string {
	switch f {
	case ToolsMistral:
		return "[TOOL_CALLS]"
	case ToolsGranite:
		return "<|tool_call|>"
	}
	return ""
}

// ParseToolCalls splits a finished reply into its text and its tool calls
// in format f. Text that does not parse as calls stays text.
func ParseToolCalls(f ToolFormat, text string, tools []Tool) (content string, calls []ToolCall) {
	if bs, ok := blocksOf(f); ok {
		return parseBlocks(bs, text, tools)
	}
	if m := listMarker(f); m != "" {
		return parseList(m, text, tools)
	}
	switch f {
	case ToolsMistral3:
		return parseMistral3(text, tools)
	case ToolsHarmony:
		p := newHarmonyParser(true, tools, true)
		d := p.add(text)
		d.add(p.finish())
		return d.Content, d.Calls
	}
	// llama3 and generic: the whole reply is one call object (or several, ';'-separated)
	body := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "<|python_tag|>"))
	if !strings.HasPrefix(body, "{") {
		return text, nil
	}
	d := json.NewDecoder(strings.NewReader(body))
	for {
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return text, nil
		}
		var wrapped struct {
			ToolCall json.RawMessage `json:"tool_call"`
		}
		if json.Unmarshal(raw, &wrapped) == nil && len(wrapped.ToolCall) > 0 {
			raw = wrapped.ToolCall
		}
		c, ok := decodeCall(raw, tools)
		if !ok {
			return text, nil
		}
		calls = append(calls, c)
		rest := strings.TrimLeft(body[d.InputOffset():], " \t\r\n;")
		if rest == "" {
			return "", calls
		}
		body = rest
		d = json.NewDecoder(strings.NewReader(body))
	}
}

// parseBlocks reads calls written as blocks; the first block that does
// not parse leaves the rest of the reply as text.
func parseBlocks(bs blockSyntax, text string, tools []Tool) (string, []ToolCall) {
	var rest strings.Builder
	var calls []ToolCall
	s := text
	for {
		i := strings.Index(s, bs.open)
		if i < 0 {
			rest.WriteString(s)
			break
		}
		body := s[i+len(bs.open):]
		end := strings.Index(body, bs.close)
		next := ""
		if end >= 0 {
			next = body[end+len(bs.close):]
			body = body[:end]
		}
		c, ok := bs.decode(body, tools)
		if !ok {
			rest.WriteString(s)
			break
		}
		rest.WriteString(s[:i])
		calls = append(calls, c)
		if end < 0 {
			break
		}
		s = next
	}
	return strings.TrimSpace(rest.String()), calls
}

// parseList reads marker and a JSON list of calls (or one call object).
func parseList(marker, text string, tools []Tool) (string, []ToolCall) {
	i := strings.Index(text, marker)
	if i < 0 {
		return text, nil
	}
	body := strings.TrimSpace(text[i+len(marker):])
	var list []json.RawMessage
	if json.Unmarshal([]byte(body), &list) != nil {
		var one json.RawMessage
		if json.Unmarshal([]byte(body), &one) != nil {
			return text, nil
		}
		list = []json.RawMessage{one}
	}
	var calls []ToolCall
	for _, raw := range list {
		c, ok := decodeCall(raw, tools)
		if !ok {
			return text, nil
		}
		calls = append(calls, c)
	}
	return strings.TrimSpace(text[:i]), calls
}

// parseMistral3 reads [TOOL_CALLS]NAME[ARGS]{…} calls (an id may come
// between, as [CALL_ID]ID): all of them, or the reply stays text.
func parseMistral3(text string, tools []Tool) (string, []ToolCall) {
	const mark, args, id = "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"
	i := strings.Index(text, mark)
	if i < 0 {
		return text, nil
	}
	var calls []ToolCall
	rest := text[i:]
	for rest != "" {
		if !strings.HasPrefix(rest, mark) {
			return text, nil
		}
		rest = rest[len(mark):]
		j := strings.Index(rest, args)
		if j < 0 {
			return text, nil
		}
		name := rest[:j]
		if k := strings.Index(name, id); k >= 0 {
			name = name[:k]
		}
		rest = rest[j+len(args):]
		d := json.NewDecoder(strings.NewReader(rest))
		var raw json.RawMessage
		if d.Decode(&raw) != nil {
			return text, nil
		}
		c, ok := decodeArgs(strings.TrimSpace(name), raw, tools)
		if !ok {
			return text, nil
		}
		calls = append(calls, c)
		rest = strings.TrimLeft(rest[d.InputOffset():], " \t\r\n")
	}
	return strings.TrimSpace(text[:i]), calls
}

// ToolStream parses a reply as it streams: text that cannot be part of a
// call is released at once, a call is released when it is complete.
type ToolStream struct {
	f       ToolFormat
	tools   []Tool
	buf     strings.Builder // text not yet released
	calling bool            // a call has begun: hold everything
	decided bool            // (llama3, generic) the first character was seen
	harmony *harmonyParser
	hcalls  []ToolCall
}

// NewToolStream starts parsing a reply in format f.
func NewToolStream(f ToolFormat, tools []Tool) *ToolStream {
	s := &ToolStream{f: f, tools: tools}
	if f == ToolsHarmony {
		s.harmony = newHarmonyParser(true, tools, true)
	}
	return s
}

// marker is the text that begins a call.
func (s *ToolStream) marker() string {
	if bs, ok := blocksOf(s.f); ok {
		return bs.open
	}
	if m := listMarker(s.f); m != "" {
		return m
	}
	if s.f == ToolsMistral3 {
		return "[TOOL_CALLS]"
	}
	return ""
}

// Add takes the next piece of the reply and returns the text to release
// and the calls completed by it.
func (s *ToolStream) Add(text string) (string, []ToolCall) {
	if s.harmony != nil {
		d := s.harmony.add(text)
		return d.Content, d.Calls
	}
	s.buf.WriteString(text)
	all := s.buf.String()
	if m := s.marker(); m != "" {
		if !s.calling {
			if i := strings.Index(all, m); i >= 0 {
				s.calling = true
				s.buf.Reset()
				s.buf.WriteString(all[i:])
				out, calls := all[:i], s.completed()
				return out, calls
			}
			// Hold back a tail that may begin the marker.
			keep := partialSuffix(all, m)
			s.buf.Reset()
			s.buf.WriteString(all[len(all)-keep:])
			return all[:len(all)-keep], nil
		}
		return "", s.completed()
	}
	// llama3, generic: a reply that opens with '{' (or <|python_tag|>) is held.
	if !s.decided {
		t := strings.TrimLeft(all, " \t\r\n")
		if t == "" || strings.HasPrefix("<|python_tag|>", t) && len(t) < len("<|python_tag|>") {
			return "", nil
		}
		s.decided = true
		s.calling = strings.HasPrefix(t, "{") || strings.HasPrefix(t, "<|python_tag|>")
	}
	if s.calling {
		return "", nil
	}
	s.buf.Reset()
	return all, nil
}

// completed releases the calls (of block families) whose closing marker
// has arrived.
func (s *ToolStream) completed() []ToolCall {
	bs, ok := blocksOf(s.f)
	if !ok {
		return nil
	}
	all := s.buf.String()
	n := strings.Count(all, bs.close)
	if n == 0 {
		return nil
	}
	end := 0
	for k := 0; k < n; k++ {
		end += strings.Index(all[end:], bs.close) + len(bs.close)
	}
	content, calls := parseBlocks(bs, all[:end], s.tools)
	if len(calls) < n || content != "" { // a block did not parse: leave it to Finish
		return nil
	}
	s.buf.Reset()
	s.buf.WriteString(all[end:])
	return calls
}

// Finish parses what is held and returns the text and the calls not yet
// released.
func (s *ToolStream) Finish() (string, []ToolCall) {
	if s.harmony != nil {
		d := s.harmony.finish()
		return d.Content, d.Calls
	}
	all := s.buf.String()
	s.buf.Reset()
	if !s.calling {
		return all, nil
	}
	return ParseToolCalls(s.f, all, s.tools)
}
