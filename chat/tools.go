package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/loom-inference/loom/grammar"
)

// Tool calls: each model family writes them its own way, and its chat
// template says which. A reply is parsed back into OpenAI's tool_calls;
// when a call is required, generation is constrained to the family's
// syntax with each function's arguments schema, so the call always parses
// and its arguments always validate.

// ToolFormat is how a model family writes tool calls.
type ToolFormat string

const (
	// ToolsGeneric: a bare JSON object {"name": …, "arguments": {…}} (models
	// whose templates know no tool syntax; the tools are described in the
	// system message).
	ToolsGeneric ToolFormat = "generic"
	// ToolsHermes: <tool_call>{"name": …, "arguments": {…}}</tool_call>,
	// one block per call (Qwen 2.5 and 3, Hermes 2 Pro and 3).
	ToolsHermes ToolFormat = "hermes"
	// ToolsLlama3: {"name": …, "parameters": {…}}, optionally after
	// <|python_tag|> (Llama 3.1, 3.2, 3.3).
	ToolsLlama3 ToolFormat = "llama3"
	// ToolsMistral: [TOOL_CALLS] then a JSON list of {"name": …,
	// "arguments": {…}} (Mistral Nemo, Mistral 7B v0.3).
	ToolsMistral ToolFormat = "mistral"
)

// ToolFormat tells the family's syntax from the template's source.
func (t *Template) ToolFormat() ToolFormat {
	switch src := t.Source; {
	case strings.Contains(src, "[TOOL_CALLS]"):
		return ToolsMistral
	case strings.Contains(src, "<tool_call>"):
		return ToolsHermes
	case strings.Contains(src, "<|python_tag|>") || strings.Contains(src, `"parameters": dictionary of argument name`):
		return ToolsLlama3
	}
	return ToolsGeneric
}

// RendersTools reports whether the template lays out the tools itself.
func (t *Template) RendersTools() bool { return strings.Contains(t.Source, "tools") }

// Tool is one callable function.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema (nil: any object)
	Strict      bool            // refuse schema keywords the grammar cannot enforce
}

// ToolCall is one parsed call.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text of the arguments object
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// ToolSystemPrompt describes tools for templates that do not render them
// (the generic format).
func ToolSystemPrompt(tools []Tool) string {
	var b strings.Builder
	b.WriteString("You can call these tools:\n")
	for _, t := range tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object"}`)
		}
		fmt.Fprintf(&b, "- %s: %s Arguments schema: %s\n", t.Name, t.Description, compactJSON(params))
	}
	b.WriteString(`To call a tool, reply with only a JSON object: {"name": <tool name>, "arguments": <arguments object>}.`)
	return b.String()
}

func compactJSON(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// ToolGrammar builds the grammar a required call is generated under:
// the family's syntax around one call (or, for families that allow it and
// when parallel is set, one or more) of the given tools, each call's
// arguments constrained by its schema. prefix is text the prompt should
// end with (the family's call marker, often a special token) so the model
// starts the call itself; warnings list schema keywords ignored for tools
// that are not strict.
func ToolGrammar(f ToolFormat, tools []Tool, parallel bool) (g *grammar.Grammar, prefix string, warnings []string, err error) {
	if len(tools) == 0 {
		return nil, "", nil, errors.New("engine: a required tool call needs at least one tool")
	}
	argsKey := "arguments"
	if f == ToolsLlama3 {
		argsKey = "parameters"
	}
	b := grammar.NewBuilder(grammar.SchemaOptions{})
	var alts []string
	for i, t := range tools {
		if !toolName.MatchString(t.Name) {
			return nil, "", nil, fmt.Errorf("engine: tool name %q must be 1 to 64 letters, digits, '_', '.' or '-'", t.Name)
		}
		params := t.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = json.RawMessage(`{"type":"object"}`)
		}
		b.SetLenient(!t.Strict)
		args, err := b.AddSchema(fmt.Sprintf("fn%d-args", i), params)
		if err != nil {
			return nil, "", nil, fmt.Errorf("engine: tool %q parameters: %w", t.Name, err)
		}
		alts = append(alts, b.AddRule(fmt.Sprintf("fn%d-call", i),
			`"{" space `+grammar.JSONLiteral("name")+` space ":" space `+grammar.JSONLiteral(t.Name)+
				` space "," space `+grammar.JSONLiteral(argsKey)+` space ":" space `+args+` "}" space`))
	}
	warnings = b.Warnings()
	call := b.AddRule("call", strings.Join(alts, " | "))
	var root string
	switch f {
	case ToolsHermes:
		prefix = "<tool_call>\n"
		root = call + ` "\n</tool_call>"`
		if parallel {
			root += ` ( "\n<tool_call>\n" ` + call + ` "\n</tool_call>" )*`
		}
	case ToolsMistral:
		prefix = "[TOOL_CALLS]"
		root = `"[" space ` + call
		if parallel {
			root += ` ( "," space ` + call + ` )*`
		}
		root += ` "]" space`
	default: // one JSON object
		root = call
	}
	b.AddRule("root", root)
	g, err = grammar.Parse(b.Text())
	if err != nil {
		return nil, "", nil, fmt.Errorf("engine: tool grammar: %w", err)
	}
	return g, prefix, warnings, nil
}

// callJSON is one call as the families write it.
type callJSON struct {
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Parameters json.RawMessage `json:"parameters"`
}

// decodeCall reads one call object; arguments given as a JSON string are
// unwrapped. Names not among tools (when tools are given) are refused, so
// JSON that merely looks like a call stays content.
func decodeCall(raw []byte, tools []Tool) (ToolCall, bool) {
	var c callJSON
	d := json.NewDecoder(bytes.NewReader(raw))
	if d.Decode(&c) != nil || c.Name == "" {
		return ToolCall{}, false
	}
	if d.More() {
		return ToolCall{}, false
	}
	if len(tools) > 0 {
		known := false
		for _, t := range tools {
			known = known || t.Name == c.Name
		}
		if !known {
			return ToolCall{}, false
		}
	}
	args := c.Arguments
	if len(args) == 0 {
		args = c.Parameters
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var s string
	if json.Unmarshal(args, &s) == nil { // arguments as a JSON string
		args = json.RawMessage(s)
	}
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil {
		return ToolCall{}, false
	}
	return ToolCall{Name: c.Name, Arguments: compactJSON(args)}, true
}

// ParseToolCalls splits a finished reply into its text and its tool calls
// in format f. Text that does not parse as calls stays text.
func ParseToolCalls(f ToolFormat, text string, tools []Tool) (content string, calls []ToolCall) {
	switch f {
	case ToolsHermes:
		var rest strings.Builder
		s := text
		for {
			i := strings.Index(s, "<tool_call>")
			if i < 0 {
				rest.WriteString(s)
				break
			}
			body := s[i+len("<tool_call>"):]
			end := strings.Index(body, "</tool_call>")
			next := ""
			if end >= 0 {
				next = body[end+len("</tool_call>"):]
				body = body[:end]
			}
			c, ok := decodeCall([]byte(strings.TrimSpace(body)), tools)
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
	case ToolsMistral:
		i := strings.Index(text, "[TOOL_CALLS]")
		if i < 0 {
			return text, nil
		}
		body := strings.TrimSpace(text[i+len("[TOOL_CALLS]"):])
		var list []json.RawMessage
		if json.Unmarshal([]byte(body), &list) != nil {
			var one json.RawMessage
			if json.Unmarshal([]byte(body), &one) != nil {
				return text, nil
			}
			list = []json.RawMessage{one}
		}
		for _, raw := range list {
			c, ok := decodeCall(raw, tools)
			if !ok {
				return text, nil
			}
			calls = append(calls, c)
		}
		return strings.TrimSpace(text[:i]), calls
	default: // llama3 and generic: the whole reply is one call object (or several, ';'-separated)
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
}

// ToolStream parses a reply as it streams: text that cannot be part of a
// call is released at once, a call is released when it is complete.
type ToolStream struct {
	f       ToolFormat
	tools   []Tool
	buf     strings.Builder // text not yet released
	calling bool            // a call has begun: hold everything
	decided bool            // (llama3, generic) the first character was seen
}

// NewToolStream starts parsing a reply in format f.
func NewToolStream(f ToolFormat, tools []Tool) *ToolStream {
	return &ToolStream{f: f, tools: tools}
}

func (s *ToolStream) marker() string {
	switch s.f {
	case ToolsHermes:
		return "<tool_call>"
	case ToolsMistral:
		return "[TOOL_CALLS]"
	}
	return ""
}

// Add takes the next piece of the reply and returns the text to release
// and the calls completed by it.
func (s *ToolStream) Add(text string) (string, []ToolCall) {
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
			keep := 0
			for k := min(len(m)-1, len(all)); k > 0; k-- {
				if strings.HasSuffix(all, m[:k]) {
					keep = k
					break
				}
			}
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

// completed releases Hermes calls whose closing tag has arrived.
func (s *ToolStream) completed() []ToolCall {
	if s.f != ToolsHermes {
		return nil
	}
	all := s.buf.String()
	n := strings.Count(all, "</tool_call>")
	if n == 0 {
		return nil
	}
	end := 0
	for k := 0; k < n; k++ {
		end += strings.Index(all[end:], "</tool_call>") + len("</tool_call>")
	}
	content, calls := ParseToolCalls(ToolsHermes, all[:end], s.tools)
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
	all := s.buf.String()
	s.buf.Reset()
	if !s.calling {
		return all, nil
	}
	return ParseToolCalls(s.f, all, s.tools)
}
