package server

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"github.com/loom-inference/loom/chat"
	"strings"

	"github.com/loom-inference/loom/engine"
)

// toolPlan is how one chat request uses its tools.
type toolPlan struct {
	tools    []chat.Tool
	raw      json.RawMessage // the tools as sent, for the template
	format   chat.ToolFormat
	choice   string // "auto", "required" or "function" (named)
	named    string
	parallel bool
	prefix   string // text forced at the start of the reply (the call marker)
}

// toolPlan validates tools and tool_choice; nil when tools are absent or
// tool_choice is "none".
func (r *chatRequest) toolPlan(t *chat.Template) (*toolPlan, error) {
	if len(r.Tools) == 0 || string(r.Tools) == "null" {
		if len(r.ToolChoice) > 0 && string(r.ToolChoice) != "null" && string(r.ToolChoice) != `"none"` && string(r.ToolChoice) != `"auto"` {
			return nil, badRequest("tool_choice", "tool_choice needs tools")
		}
		return nil, nil
	}
	var list []struct {
		Type     string `json:"type"`
		Function *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		} `json:"function"`
	}
	if err := json.Unmarshal(r.Tools, &list); err != nil {
		return nil, badRequest("tools", "tools must be a list of {\"type\": \"function\", \"function\": {…}}")
	}
	if len(list) > maxTools {
		return nil, badRequest("tools", "at most %d tools, got %d", maxTools, len(list))
	}
	p := &toolPlan{choice: "auto", parallel: true, format: t.ToolFormat()}
	if r.ParallelToolCalls != nil {
		p.parallel = *r.ParallelToolCalls
	}
	seen := map[string]bool{}
	for i, t := range list {
		if t.Type != "function" || t.Function == nil {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d] must have type \"function\" and a function", i)
		}
		f := t.Function
		if f.Name == "" || seen[f.Name] {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d] needs a unique function name", i)
		}
		seen[f.Name] = true
		if len(f.Parameters) > 0 && string(f.Parameters) != "null" && !strings.HasPrefix(strings.TrimSpace(string(f.Parameters)), "{") {
			return nil, badRequest(fmt.Sprintf("tools[%d].function.parameters", i), "tools[%d].function.parameters must be a JSON Schema object", i)
		}
		p.tools = append(p.tools, chat.Tool{Name: f.Name, Description: f.Description, Parameters: f.Parameters, Strict: f.Strict != nil && *f.Strict})
	}
	p.raw = r.Tools // as sent: objects keep their key order, as transformers sees them
	if len(r.ToolChoice) > 0 && string(r.ToolChoice) != "null" {
		var s string
		if json.Unmarshal(r.ToolChoice, &s) == nil {
			switch s {
			case "none":
				return nil, nil
			case "auto", "required":
				p.choice = s
			default:
				return nil, badRequest("tool_choice", "tool_choice must be none, auto, required or a named function, not %q", s)
			}
		} else {
			var named struct {
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			}
			if err := json.Unmarshal(r.ToolChoice, &named); err != nil || named.Type != "function" {
				return nil, badRequest("tool_choice", `tool_choice must be none, auto, required or {"type": "function", "function": {"name": …}}`)
			}
			if !seen[named.Function.Name] {
				return nil, badRequest("tool_choice", "tool_choice names %q, which is not among the tools", named.Function.Name)
			}
			p.choice, p.named = "function", named.Function.Name
		}
	}
	return p, nil
}

// apply lays the tools into the prompt options and, for a required or
// named call, constrains generation to it.
func (p *toolPlan) apply(t *chat.Template, msgs []chat.Message, g *engine.Request) ([]chat.Message, *chat.Options, error) {
	opts := &chat.Options{AddGenerationPrompt: true, Tools: p.raw}
	if !t.RendersTools() { // describe them in the system message
		sys := chat.ToolSystemPrompt(p.format, p.tools)
		if len(msgs) > 0 && msgs[0].Role == "system" {
			if s, ok := msgs[0].Content.(string); ok {
				msgs[0].Content = s + "\n\n" + sys
			}
		} else {
			msgs = append([]chat.Message{{Role: "system", Content: sys}}, msgs...)
		}
	}
	if p.choice == "auto" {
		return msgs, opts, nil
	}
	if g.Grammar != nil {
		return nil, nil, badRequest("response_format", "response_format cannot be combined with a required tool call")
	}
	tools, parallel := p.tools, p.parallel
	if p.choice == "function" {
		parallel = false
		for _, t := range p.tools {
			if t.Name == p.named {
				tools = []chat.Tool{t}
			}
		}
	}
	gr, prefix, _, err := chat.ToolGrammar(p.format, tools, parallel)
	if err != nil {
		return nil, nil, badRequest("tools", "%v", err)
	}
	g.Grammar, p.prefix = gr, prefix
	return msgs, opts, nil
}

// callID makes an id for a call: Mistral's templates insist on nine
// alphanumerics, the others take OpenAI's call_ form.
func callID(f chat.ToolFormat) string {
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	n := 24
	if f == chat.ToolsMistral {
		n = 9
	}
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	if f == chat.ToolsMistral {
		return string(b)
	}
	return "call_" + string(b)
}

// toolCalls converts parsed calls for a message (index nil) or a delta.
func toolCalls(f chat.ToolFormat, calls []chat.ToolCall, first int, delta bool) []toolCallJSON {
	var out []toolCallJSON
	for i, c := range calls {
		tc := toolCallJSON{ID: callID(f), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, c.Arguments
		if delta {
			k := first + i
			tc.Index = &k
		}
		out = append(out, tc)
	}
	return out
}
