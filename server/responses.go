package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
)

// OpenAI's Responses API, POST /v1/responses, stateless: nothing is
// stored, so previous_response_id, conversation, background responses and
// GET /v1/responses/{id} are refused. A request is translated into the
// chat completion request it means (input items into messages, function
// tools and tool_choice into chat's, text.format into response_format,
// reasoning.effort into reasoning_effort) and goes through the chat
// path's own validation, template, tool plan, grammar and reply parser;
// only the reply's shape is the Responses API's: output items (reasoning,
// message, function_call) whole, or streamed as typed server-sent events.

func init() {
	protocolRoutes = append(protocolRoutes,
		route{pattern: "POST /v1/responses", handler: func(s *Server) http.HandlerFunc { return s.responses }},
		route{pattern: "GET /v1/responses/{id...}", handler: func(s *Server) http.HandlerFunc { return respNotStored }},
		route{pattern: "DELETE /v1/responses/{id...}", handler: func(s *Server) http.HandlerFunc { return respNotStored }},
	)
}

// respNotStored answers the routes that read stored responses.
func respNotStored(w http.ResponseWriter, r *http.Request) {
	writeError(w, withCode(&apiError{status: 404, Msg: fmt.Sprintf("response %q not found: this server is stateless and stores no responses", r.PathValue("id")),
		Type: "invalid_request_error"}, "not_found"))
}

// responsesRequest is POST /v1/responses.
type responsesRequest struct {
	Model        string          `json:"model"`
	Input        json.RawMessage `json:"input"`        // a string or a list of items
	Instructions *string         `json:"instructions"` // a system message before the input
	Tools        json.RawMessage `json:"tools"`
	// ToolChoice is "none", "auto", "required" or {"type": "function",
	// "name": …}.
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	Text              *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
	MaxOutputTokens *int     `json:"max_output_tokens"`
	Temperature     *float64 `json:"temperature"`
	TopP            *float64 `json:"top_p"`
	Stream          bool     `json:"stream"`
	Reasoning       *struct {
		Effort *string `json:"effort"`
	} `json:"reasoning"`
	Metadata   json.RawMessage `json:"metadata"` // echoed
	User       *string         `json:"user"`     // echoed
	Truncation *string         `json:"truncation"`
	// Accepted and not honoured: nothing is stored (store true is
	// answered with store false).
	Store *bool `json:"store"`
	// Refused: they need stored state or a prompt library.
	PreviousResponseID *string         `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Background         *bool           `json:"background"`
	Prompt             json.RawMessage `json:"prompt"`

	// Loom's extensions, as on chat completions: llama.cpp's sampling
	// fields, stop strings, a GBNF grammar, the reasoning format and the
	// template's variables.
	TopK               *int            `json:"top_k"`
	MinP               *float64        `json:"min_p"`
	RepeatPenalty      *float64        `json:"repeat_penalty"`
	PresencePenalty    *float64        `json:"presence_penalty"`
	FrequencyPenalty   *float64        `json:"frequency_penalty"`
	Seed               *int64          `json:"seed"`
	Stop               json.RawMessage `json:"stop"`
	Grammar            string          `json:"grammar"`
	ReasoningFormat    *string         `json:"reasoning_format"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs"`
}

func (r *responsesRequest) modelName() string { return r.Model }

// respGiven reports whether a raw field was sent (and not null).
func respGiven(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// refuseStateful refuses what a stateless server cannot do.
func (r *responsesRequest) refuseStateful() *apiError {
	switch {
	case r.PreviousResponseID != nil && *r.PreviousResponseID != "":
		return badRequest("previous_response_id", "stateless: previous_response_id is not supported (send the whole conversation as input)")
	case respGiven(r.Conversation):
		return badRequest("conversation", "stateless: conversation is not supported (send the whole conversation as input)")
	case r.Background != nil && *r.Background:
		return badRequest("background", "stateless: background responses are not supported")
	case respGiven(r.Prompt):
		return badRequest("prompt", "prompt templates are not supported: send instructions and input")
	}
	return nil
}

// respInputItem is one item of input: a message (type "message" or none),
// a function_call, a function_call_output or a reasoning item.
type respInputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
	Summary   []respPart      `json:"summary"`
}

type respPart struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Refusal string `json:"refusal"`
}

// respPartsText joins a content given as a string or a list of text parts
// (input_text, output_text, refusal, reasoning_text, summary_text);
// images, files and audio are refused.
func respPartsText(raw json.RawMessage, where string) (string, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []respPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badRequest("input", "%s must be a string or a list of content parts", where)
	}
	var b strings.Builder
	for k, p := range parts {
		if k > 0 {
			b.WriteString("\n")
		}
		switch p.Type {
		case "input_text", "output_text", "text", "reasoning_text", "summary_text":
			b.WriteString(p.Text)
		case "refusal":
			b.WriteString(p.Refusal)
		case "input_image", "input_file", "input_audio":
			return "", badRequest("input", "%s[%d] has type %q: only text input is supported", where, k, p.Type)
		default:
			return "", badRequest("input", "%s[%d] has unknown type %q", where, k, p.Type)
		}
	}
	return b.String(), nil
}

// messages turns instructions and input into chat messages: a function
// call joins the assistant message before it (one turn: its reasoning,
// its text, its calls), a call's output is a tool message named after
// its call, a reasoning item is the next assistant turn's reasoning.
func (r *responsesRequest) messages() ([]chatMessage, *apiError) {
	var out []chatMessage
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	if r.Instructions != nil && *r.Instructions != "" {
		out = append(out, chatMessage{Role: "system", Content: str(*r.Instructions)})
	}
	if !respGiven(r.Input) {
		return nil, badRequest("input", "input is required: a string or a list of items")
	}
	var text string
	if json.Unmarshal(r.Input, &text) == nil {
		return append(out, chatMessage{Role: "user", Content: str(text)}), nil
	}
	var items []respInputItem
	if err := json.Unmarshal(r.Input, &items); err != nil {
		return nil, badRequest("input", "input must be a string or a list of items: %v", err)
	}
	if len(items) == 0 {
		return nil, badRequest("input", "input must not be empty")
	}
	if len(items) > maxMessages {
		return nil, badRequest("input", "at most %d input items", maxMessages)
	}
	type call struct {
		ID       string          `json:"id"`
		Type     string          `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	calls := map[int][]call{}    // an assistant message's calls (by its index), laid out at the end
	names := map[string]string{} // call_id → function name
	reasoning := ""              // for the next assistant turn
	for i, it := range items {
		where := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			switch it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return nil, badRequest("input", "%s.role %q is not one of user, assistant, system, developer", where, it.Role)
			}
			if !respGiven(it.Content) {
				return nil, badRequest("input", "%s.content is required", where)
			}
			s, err := respPartsText(it.Content, where+".content")
			if err != nil {
				return nil, err
			}
			out = append(out, chatMessage{Role: it.Role, Content: str(s)})
		case "function_call":
			if it.CallID == "" || it.Name == "" || it.Arguments == nil {
				return nil, badRequest("input", "%s: a function_call needs call_id, name and arguments", where)
			}
			names[it.CallID] = it.Name
			// The call joins the assistant's turn: the last message
			// when it is the assistant's, else a new one.
			if n := len(out); n == 0 || out[n-1].Role != "assistant" {
				out = append(out, chatMessage{Role: "assistant"})
			}
			fn, _ := json.Marshal(struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}{it.Name, *it.Arguments})
			calls[len(out)-1] = append(calls[len(out)-1], call{ID: it.CallID, Type: "function", Function: fn})
		case "function_call_output":
			if it.CallID == "" || !respGiven(it.Output) {
				return nil, badRequest("input", "%s: a function_call_output needs call_id and output", where)
			}
			s, err := respPartsText(it.Output, where+".output")
			if err != nil {
				return nil, err
			}
			name := it.Name // else the call's
			if name == "" {
				name = names[it.CallID]
			}
			out = append(out, chatMessage{Role: "tool", ToolCallID: it.CallID, Name: name, Content: str(s)})
		case "reasoning":
			s := ""
			if respGiven(it.Content) {
				var err *apiError
				if s, err = respPartsText(it.Content, where+".content"); err != nil {
					return nil, err
				}
			}
			if s == "" {
				for k, p := range it.Summary {
					if k > 0 {
						s += "\n"
					}
					s += p.Text
				}
			}
			if n := len(out); n > 0 && out[n-1].Role == "assistant" {
				out[n-1].ReasoningContent += s
			} else {
				reasoning += s
			}
			continue
		case "item_reference":
			return nil, badRequest("input", "stateless: %s is an item_reference, which is not supported (send the item itself)", where)
		default:
			return nil, badRequest("input", "%s has type %q: only message, function_call, function_call_output and reasoning items are supported", where, it.Type)
		}
		if n := len(out); reasoning != "" && out[n-1].Role == "assistant" {
			out[n-1].ReasoningContent, reasoning = reasoning+out[n-1].ReasoningContent, ""
		}
	}
	for i, c := range calls {
		out[i].ToolCalls, _ = json.Marshal(c)
	}
	if len(out) > maxMessages {
		return nil, badRequest("input", "at most %d messages", maxMessages)
	}
	return out, nil
}

// chatTools are the function tools in chat's shape (in the order and
// with the schemas as sent: templates see them so).
func (r *responsesRequest) chatTools() (json.RawMessage, *apiError) {
	if !respGiven(r.Tools) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(r.Tools, &list); err != nil {
		return nil, badRequest("tools", `tools must be a list of {"type": "function", "name": …, "parameters": …}`)
	}
	if len(list) > maxTools {
		return nil, badRequest("tools", "at most %d tools, got %d", maxTools, len(list))
	}
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}
	out := make([]struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}, len(list))
	for i, raw := range list {
		var t struct {
			Type string `json:"type"`
			function
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d]: %v", i, err)
		}
		if t.Type != "function" {
			return nil, badRequest(fmt.Sprintf("tools[%d].type", i), "tools[%d] has type %q: only function tools are supported", i, t.Type)
		}
		if !respGiven(t.Parameters) {
			t.Parameters = nil
		}
		out[i].Type, out[i].Function = "function", t.function
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, badRequest("tools", "tools: %v", err)
	}
	return b, nil
}

// chatToolChoice is tool_choice in chat's shape.
func (r *responsesRequest) chatToolChoice() (json.RawMessage, *apiError) {
	if !respGiven(r.ToolChoice) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(r.ToolChoice, &s) == nil {
		return r.ToolChoice, nil // none, auto, required: chat's, checked there
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(r.ToolChoice, &c); err != nil || c.Type != "function" || c.Name == "" {
		return nil, badRequest("tool_choice", `tool_choice must be none, auto, required or {"type": "function", "name": …}`)
	}
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": c.Name}})
	return b, nil
}

// responseFormat is text.format as chat's response_format.
func (r *responsesRequest) responseFormat() (json.RawMessage, *apiError) {
	if r.Text == nil || !respGiven(r.Text.Format) {
		return nil, nil
	}
	var f struct {
		Type   string          `json:"type"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	}
	if err := json.Unmarshal(r.Text.Format, &f); err != nil {
		return nil, badRequest("text.format", "text.format must be an object with a type")
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`{"type":"json_object"}`), nil
	case "json_schema":
		if !respGiven(f.Schema) {
			return nil, badRequest("text.format.schema", "text.format json_schema needs a schema")
		}
		b, _ := json.Marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": f.Name, "schema": f.Schema, "strict": f.Strict}})
		return b, nil
	}
	return nil, badRequest("text.format.type", "unknown text.format type %q (text, json_object or json_schema)", f.Type)
}

// chatRequest is the chat completion request r means.
func (r *responsesRequest) chatRequest() (*chatRequest, *apiError) {
	if err := r.refuseStateful(); err != nil {
		return nil, err
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1 {
		return nil, badRequest("max_output_tokens", "max_output_tokens must be ≥ 1, got %d", *r.MaxOutputTokens)
	}
	c := &chatRequest{Model: r.Model, ParallelToolCalls: r.ParallelToolCalls, ReasoningFormat: r.ReasoningFormat, ChatTemplateKwargs: r.ChatTemplateKwargs}
	var err *apiError
	if c.Messages, err = r.messages(); err != nil {
		return nil, err
	}
	if c.Tools, err = r.chatTools(); err != nil {
		return nil, err
	}
	if c.ToolChoice, err = r.chatToolChoice(); err != nil {
		return nil, err
	}
	if r.Reasoning != nil {
		c.ReasoningEffort = r.Reasoning.Effort
	}
	c.sampling = sampling{Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MinP: r.MinP, RepeatPenalty: r.RepeatPenalty,
		PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty, Seed: r.Seed, Stop: r.Stop,
		MaxCompletion: r.MaxOutputTokens, Stream: r.Stream, Grammar: r.Grammar}
	if c.ResponseFormat, err = r.responseFormat(); err != nil {
		return nil, err
	}
	if c.ResponseFormat != nil && r.Grammar != "" {
		return nil, badRequest("grammar", "give one of text.format (json_object, json_schema) and grammar")
	}
	return c, nil
}

// responsesField names a chat request's field as the Responses API
// does.
func responsesField(p string) string {
	switch {
	case p == "response_format":
		return "text.format"
	case p == "max_completion_tokens":
		return "max_output_tokens"
	case p == "reasoning_effort":
		return "reasoning.effort"
	case strings.HasPrefix(p, "messages"):
		return "input"
	case strings.HasPrefix(p, "tools["):
		return strings.Replace(p, ".function.", ".", 1)
	}
	return p
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	if err := generative(m); err != nil {
		writeError(w, err)
		return
	}
	creq, aerr := req.chatRequest()
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	p, aerr := s.prepareChat(m, creq, chatInput{param: responsesField})
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	g := p.g
	if e := fitContext(m, &g, "input", "input", "max_output_tokens"); e != nil {
		writeError(w, e)
		return
	}
	start := time.Now()
	streams, cancel, aerr := s.submit(w, r, m, g, p.gparam)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	defer cancel()
	rp := &reply{m: m, streams: streams, chat: true, nPrompt: len(g.Tokens), tools: p.tools,
		grammarParam: p.gparam, prompt: p.prompt, reasoning: p.reasoning}
	b := &respBuilder{rp: rp, resp: req.echo(m.Name), format: chat.ToolsGeneric}
	if p.tools != nil {
		b.format = p.tools.format
	}
	if req.Stream {
		s.respStream(w, b, cancel)
	} else {
		s.respWhole(w, b)
	}
	s.metrics.observe(m.Name, streams[0].Result(), start)
}

// The response object and its items.

type respObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	CompletedAt        *int64          `json:"completed_at"`
	Error              *respError      `json:"error"`
	IncompleteDetails  *respIncomplete `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []*respItem     `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	Store       bool            `json:"store"`
	Temperature float64         `json:"temperature"`
	Text        json.RawMessage `json:"text"`
	ToolChoice  json.RawMessage `json:"tool_choice"`
	Tools       json.RawMessage `json:"tools"`
	TopP        float64         `json:"top_p"`
	Truncation  string          `json:"truncation"`
	Background  bool            `json:"background"`
	Usage       *respUsage      `json:"usage"`
	User        *string         `json:"user"`
	Metadata    json.RawMessage `json:"metadata"`
}

type respError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type respIncomplete struct {
	Reason string `json:"reason"`
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// respItem is a reasoning item, a message or a function call.
type respItem struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Status  string         `json:"status"`
	Role    string         `json:"role,omitempty"`    // message
	Summary *[]respContent `json:"summary,omitempty"` // reasoning: always empty
	Content *[]respContent `json:"content,omitempty"` // message: output_text; reasoning: reasoning_text
	// function_call
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"`
}

// respContent is an output_text or reasoning_text part.
type respContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations *[]int `json:"annotations,omitempty"` // output_text: []
	Logprobs    *[]int `json:"logprobs,omitempty"`    // output_text: []
}

func respNewPart(typ, text string) respContent {
	c := respContent{Type: typ, Text: text}
	if typ == "output_text" {
		c.Annotations, c.Logprobs = &[]int{}, &[]int{}
	}
	return c
}

// echo is the response object before its output: the request's settings
// with their defaults.
func (r *responsesRequest) echo(model string) *respObject {
	o := &respObject{ID: newID("resp_"), Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress",
		Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Model: model, Output: []*respItem{},
		ParallelToolCalls: true, Temperature: 1, TopP: 1, Truncation: "disabled", User: r.User,
		Text: json.RawMessage(`{"format":{"type":"text"}}`), ToolChoice: json.RawMessage(`"auto"`), Tools: json.RawMessage(`[]`), Metadata: json.RawMessage(`{}`)}
	if r.ParallelToolCalls != nil {
		o.ParallelToolCalls = *r.ParallelToolCalls
	}
	if r.Temperature != nil {
		o.Temperature = *r.Temperature
	}
	if r.TopP != nil {
		o.TopP = *r.TopP
	}
	if r.Truncation != nil {
		o.Truncation = *r.Truncation
	}
	if r.Reasoning != nil {
		o.Reasoning.Effort = r.Reasoning.Effort
	}
	compact := func(raw json.RawMessage) json.RawMessage {
		var b bytes.Buffer
		json.Compact(&b, raw)
		return b.Bytes()
	}
	if r.Text != nil && respGiven(r.Text.Format) {
		o.Text = compact([]byte(`{"format":` + string(r.Text.Format) + `}`))
	}
	if respGiven(r.ToolChoice) {
		o.ToolChoice = compact(r.ToolChoice)
	}
	if respGiven(r.Tools) {
		o.Tools = compact(r.Tools)
	}
	if respGiven(r.Metadata) {
		o.Metadata = compact(r.Metadata)
	}
	return o
}

// respBuilder lays a reply's parts out as output items, emitting the
// stream's events as it goes when emit is set.
type respBuilder struct {
	rp     *reply
	resp   *respObject
	format chat.ToolFormat
	emit   func(typ string, kv ...any) // nil: a whole response
	open   *respItem                   // the reasoning or message item being written
	text   strings.Builder             // its text so far
	reason strings.Builder             // all the reasoning, for its token count
}

func (b *respBuilder) event(typ string, kv ...any) {
	if b.emit != nil {
		b.emit(typ, kv...)
	}
}

// add releases a piece of the reply: reasoning, text, then calls.
func (b *respBuilder) add(d chat.Delta) {
	if d.Reasoning != "" {
		b.write("reasoning", d.Reasoning)
		b.reason.WriteString(d.Reasoning)
	}
	if d.Content != "" {
		b.write("message", d.Content)
	}
	for _, c := range d.Calls {
		b.close("completed")
		args := c.Arguments
		it := &respItem{ID: newID("fc_"), Type: "function_call", Status: "in_progress", CallID: callID(b.format), Name: c.Name, Arguments: new(string)}
		idx := len(b.resp.Output)
		b.resp.Output = append(b.resp.Output, it)
		b.event("response.output_item.added", "output_index", idx, "item", it)
		b.event("response.function_call_arguments.delta", "item_id", it.ID, "output_index", idx, "delta", args)
		it.Arguments, it.Status = &args, "completed"
		b.event("response.function_call_arguments.done", "item_id", it.ID, "output_index", idx, "name", it.Name, "arguments", args)
		b.event("response.output_item.done", "output_index", idx, "item", it)
	}
}

// write adds text to the open item of type typ, opening it (and closing
// the other) first.
func (b *respBuilder) write(typ, text string) {
	if b.open == nil || b.open.Type != typ {
		b.close("completed")
		it := &respItem{Type: typ, Status: "in_progress", Content: &[]respContent{}}
		part := "reasoning_text"
		if typ == "message" {
			it.ID, it.Role, part = newID("msg_"), "assistant", "output_text"
		} else {
			it.ID, it.Summary = newID("rs_"), &[]respContent{}
		}
		b.resp.Output = append(b.resp.Output, it)
		b.open = it
		b.text.Reset()
		idx := len(b.resp.Output) - 1
		b.event("response.output_item.added", "output_index", idx, "item", it)
		b.event("response.content_part.added", "item_id", it.ID, "output_index", idx, "content_index", 0, "part", respNewPart(part, ""))
	}
	b.text.WriteString(text)
	idx := len(b.resp.Output) - 1
	if typ == "message" {
		b.event("response.output_text.delta", "item_id", b.open.ID, "output_index", idx, "content_index", 0, "delta", text, "logprobs", []int{})
	} else {
		b.event("response.reasoning_text.delta", "item_id", b.open.ID, "output_index", idx, "content_index", 0, "delta", text)
	}
}

// close ends the open item with status.
func (b *respBuilder) close(status string) {
	it := b.open
	if it == nil {
		return
	}
	b.open = nil
	idx := len(b.resp.Output) - 1
	text := b.text.String()
	part := respNewPart("reasoning_text", text)
	if it.Type == "message" {
		part = respNewPart("output_text", text)
		b.event("response.output_text.done", "item_id", it.ID, "output_index", idx, "content_index", 0, "text", text, "logprobs", []int{})
	} else {
		b.event("response.reasoning_text.done", "item_id", it.ID, "output_index", idx, "content_index", 0, "text", text)
	}
	b.event("response.content_part.done", "item_id", it.ID, "output_index", idx, "content_index", 0, "part", part)
	it.Content, it.Status = &[]respContent{part}, status
	b.event("response.output_item.done", "output_index", idx, "item", it)
}

// finish ends the response with the generation's result: completed, or
// incomplete at max_output_tokens (or the context's end); a completed
// response without a message or call has an empty message.
func (b *respBuilder) finish(res engine.Result) {
	r := b.resp
	status := "completed"
	if finishReason(res) == engine.FinishLength {
		status = "incomplete"
		r.IncompleteDetails = &respIncomplete{Reason: "max_output_tokens"}
	}
	b.close(status)
	if status == "completed" {
		answered := false
		for _, it := range r.Output {
			answered = answered || it.Type != "reasoning"
		}
		if !answered {
			b.write("message", "")
			b.close(status)
		}
	}
	r.Status = status
	if status == "completed" {
		now := time.Now().Unix()
		r.CompletedAt = &now
	}
	r.Usage = b.usage(res)
}

// usage counts the tokens; the reasoning's, which the engine does not
// tell apart, are its text's tokens.
func (b *respBuilder) usage(res engine.Result) *respUsage {
	u := &respUsage{InputTokens: b.rp.nPrompt, OutputTokens: res.Generated}
	u.InputTokensDetails.CachedTokens = res.CachedTokens
	if t := b.reason.String(); t != "" {
		u.OutputTokensDetails.ReasoningTokens = min(len(b.rp.m.Engine.Tokenize(t, false, false)), res.Generated)
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

// respWhole collects the reply and writes the response.
func (s *Server) respWhole(w http.ResponseWriter, b *respBuilder) {
	rp, st := b.rp, b.rp.streams[0]
	p := rp.parser() // for EventText only
	var text strings.Builder
	for ev := range st.Events() {
		text.WriteString(p.EventText(ev))
	}
	res := st.Result()
	if e := resultError(res, rp.grammarParam); e != nil {
		writeError(w, e)
		return
	}
	pr := rp.parseWhole(text.String())
	b.add(chat.Delta{Reasoning: pr.reasoning, Content: pr.content, Calls: pr.calls})
	b.finish(res)
	writeJSON(w, 200, b.resp)
}

// respStream writes the response as server-sent events (event: and
// data: lines, every event with its type and sequence_number): the
// response created and in progress, each item's events as the reply is
// parsed, then response.completed or response.incomplete, or an error
// event and response.failed. A write error (the client left) cancels the
// request.
func (s *Server) respStream(w http.ResponseWriter, b *respBuilder, cancel func()) {
	sw := startStream(w, "text/event-stream", cancel)
	seq := 0
	b.emit = func(typ string, kv ...any) {
		if sw.failed {
			return
		}
		fields := []field{{"type", respJSON(typ)}, {"sequence_number", respJSON(seq)}}
		for i := 0; i+1 < len(kv); i += 2 {
			fields = append(fields, field{kv[i].(string), respJSON(kv[i+1])})
		}
		seq++
		sw.printf("event: %s\ndata: %s\n\n", typ, joinFields(fields))
	}
	b.event("response.created", "response", b.resp)
	b.event("response.in_progress", "response", b.resp)
	rp, st := b.rp, b.rp.streams[0]
	p := rp.parser()
	for ev := range st.Events() {
		b.add(p.Add(p.EventText(ev)))
	}
	res := st.Result()
	if e := resultError(res, rp.grammarParam); e != nil {
		code := "server_error"
		if e.status < 500 {
			code = "invalid_prompt"
		}
		param := any(nil)
		if e.Param != nil {
			param = *e.Param
		}
		b.close("incomplete")
		b.event("error", "code", code, "message", e.Msg, "param", param)
		b.resp.Status, b.resp.Error = "failed", &respError{Code: code, Message: e.Msg}
		b.resp.Usage = b.usage(res)
		b.event("response.failed", "response", b.resp)
		return
	}
	b.add(p.Finish())
	b.finish(res)
	b.event("response."+b.resp.Status, "response", b.resp)
}

func respJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
