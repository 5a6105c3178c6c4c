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
	// ToolsMistral3: [TOOL_CALLS]NAME[ARGS]{…} per call, optionally
	// [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…} (Ministral 3, Magistral,
	// Mistral Small 3.2, Devstral).
	ToolsMistral3 ToolFormat = "mistral3"
	// ToolsGranite: <|tool_call|> then a JSON list of {"name": …,
	// "arguments": {…}} (Granite 3.x).
	ToolsGranite ToolFormat = "granite"
	// ToolsGemma4: <|tool_call>call:NAME{key:value,…}<tool_call|> per
	// call, strings quoted with <|"|> (Gemma 4).
	ToolsGemma4 ToolFormat = "gemma4"
	// ToolsHarmony: a harmony message to functions.NAME whose body is
	// the arguments (gpt-oss); parsed with the reply's channels (see
	// harmony.go).
	ToolsHarmony ToolFormat = "harmony"
)

// ToolFormat tells the family's syntax from the template's source.
func (t *Template) ToolFormat() ToolFormat {
	switch src := t.Source; {
	case strings.Contains(src, "<|channel|>"):
		return ToolsHarmony
	case strings.Contains(src, "[TOOL_CALLS]") && strings.Contains(src, "[ARGS]"):
		return ToolsMistral3
	case strings.Contains(src, "[TOOL_CALLS]"):
		return ToolsMistral
	case strings.Contains(src, "<|tool_call>"):
		return ToolsGemma4
	case strings.Contains(src, "<|tool_call|>"):
		return ToolsGranite
	case strings.Contains(src, "<tool_call>") || strings.Contains(src, "SmolLM") && strings.Contains(src, "/no_think"):
		// SmolLM3 calls tools in Hermes' syntax, also under templates
		// that do not describe them (llama.cpp's copy of its template).
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

// ToolSystemPrompt describes tools for templates that do not render
// them, in format f's syntax: Hermes' <tools> block and <tool_call>
// instructions (as Qwen's and SmolLM3's templates write them), else a
// bare JSON object.
func ToolSystemPrompt(f ToolFormat, tools []Tool) string {
	var b strings.Builder
	if f == ToolsHermes {
		b.WriteString("You may call one or more functions to assist with the user query.\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n")
		for _, t := range tools {
			params := t.Parameters
			if len(params) == 0 || string(params) == "null" {
				params = json.RawMessage(`{"type":"object"}`)
			}
			fn, _ := json.Marshal(struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			}{t.Name, t.Description, json.RawMessage(compactJSON(params))})
			fmt.Fprintf(&b, "{\"type\": \"function\", \"function\": %s}\n", fn)
		}
		b.WriteString("</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>")
		return b.String()
	}
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
	var alts, argRules []string
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
		argRules = append(argRules, args)
		alts = append(alts, b.AddRule(fmt.Sprintf("fn%d-call", i),
			`"{" space `+grammar.JSONLiteral("name")+` space ":" space `+grammar.JSONLiteral(t.Name)+
				` space "," space `+grammar.JSONLiteral(argsKey)+` space ":" space `+args+` "}" space`))
	}
	warnings = b.Warnings()
	call := b.AddRule("call", strings.Join(alts, " | "))
	// named is one call written NAME then SEP then its arguments; with one
	// tool the name and separator go into the prefix, so that control
	// tokens among them are the model's own (a grammar can only ask for
	// text).
	named := func(before, sep string) string {
		if len(tools) == 1 {
			prefix = before + tools[0].Name + sep
			return argRules[0]
		}
		prefix = before
		var nalts []string
		for i, t := range tools {
			alt := grammar.Literal(t.Name) + " "
			if sep != "" {
				alt += grammar.Literal(sep) + " "
			}
			nalts = append(nalts, alt+argRules[i])
		}
		return b.AddRule("named-call", strings.Join(nalts, " | "))
	}
	var root string
	switch f {
	case ToolsHermes:
		prefix = "<tool_call>\n"
		root = call + ` "\n</tool_call>"`
		if parallel {
			root += ` ( "\n<tool_call>\n" ` + call + ` "\n</tool_call>" )*`
		}
	case ToolsMistral, ToolsGranite:
		prefix = listMarker(f)
		root = `"[" space ` + call
		if parallel {
			root += ` ( "," space ` + call + ` )*`
		}
		root += ` "]" space`
	case ToolsMistral3: // one call: a second needs the [TOOL_CALLS] token
		root = named("[TOOL_CALLS]", "[ARGS]")
	case ToolsGemma4: // one call; the arguments as JSON, which the parser reads too
		root = named("<|tool_call>call:", "")
	case ToolsHarmony: // one call, in the commentary channel (no analysis first)
		if len(tools) == 1 {
			root = named(" to=functions.", "<|channel|>commentary json<|message|>")
		} else {
			root = named("<|channel|>commentary to=functions.", " json<|message|>")
		}
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
	args := c.Arguments
	if len(args) == 0 {
		args = c.Parameters
	}
	return decodeArgs(c.Name, args, tools)
}

// decodeArgs makes a call of name with arguments args (JSON: an object,
// or a string holding one; empty or null for none). A name not among
// tools (when tools are given) or arguments that are not an object are
// refused.
func decodeArgs(name string, args []byte, tools []Tool) (ToolCall, bool) {
	if name == "" {
		return ToolCall{}, false
	}
	if len(tools) > 0 {
		known := false
		for _, t := range tools {
			known = known || t.Name == name
		}
		if !known {
			return ToolCall{}, false
		}
	}
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = []byte("{}")
	}
	var s string
	if json.Unmarshal(args, &s) == nil { // arguments as a JSON string
		args = []byte(s)
	}
	var obj map[string]any
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return ToolCall{}, false
	}
	return ToolCall{Name: name, Arguments: compactJSON(args)}, true
}
