package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
)

// Anthropic's Messages API: POST /v1/messages and POST
// /v1/messages/count_tokens. A Messages request is translated into the
// chat completions request it means (system prompt first, tool_use blocks
// as tool_calls, tool_result blocks as tool messages, thinking blocks as
// reasoning_content, thinking as enable_thinking) and goes down the chat
// path: the same validation, chat template, tool plan (a required or
// named call constrained by its grammar), reasoning and tool-call parsers
// and engine. Only the shapes differ: the reply is a list of content
// blocks (thinking, text, tool_use), streamed as Anthropic's typed events,
// and errors are Anthropic's {"type": "error", "error": {…}}.
//
// Anthropic's clients send the key as x-api-key: these routes accept it
// there or as "Authorization: Bearer KEY".

func init() {
	protocolRoutes = append(protocolRoutes,
		route{pattern: "POST /v1/messages", open: true,
			handler: func(s *Server) http.HandlerFunc { return s.anthropicAuth(s.anthropicMessages) }},
		route{pattern: "POST /v1/messages/count_tokens", open: true,
			handler: func(s *Server) http.HandlerFunc { return s.anthropicAuth(s.anthropicCountTokens) }})
}

// anthropicRequest is POST /v1/messages (and, without max_tokens and the
// sampling fields, /v1/messages/count_tokens). Fields Loom does not use
// (metadata, service_tier, cache_control on blocks, …) are ignored.
type anthropicRequest struct {
	Model         string             `json:"model"`
	MaxTokens     *int               `json:"max_tokens"`
	System        json.RawMessage    `json:"system"`
	Messages      []anthropicMessage `json:"messages"`
	StopSequences []string           `json:"stop_sequences"`
	Temperature   *float64           `json:"temperature"`
	TopP          *float64           `json:"top_p"`
	TopK          *int               `json:"top_k"`
	Stream        bool               `json:"stream"`
	Tools         []anthropicTool    `json:"tools"`
	ToolChoice    *struct {
		Type                   string `json:"type"` // auto, any, tool, none
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	} `json:"tool_choice"`
	Thinking *struct {
		Type         string `json:"type"` // enabled, disabled (adaptive: enabled)
		BudgetTokens *int   `json:"budget_tokens"`
	} `json:"thinking"`
	Metadata json.RawMessage `json:"metadata"`
}

func (r *anthropicRequest) modelName() string { return r.Model }

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or a list of blocks
}

// anthropicBlock is a content block of a request, of any type.
type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"` // text
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // a string or a list of text blocks
	IsError   bool            `json:"is_error"`
	// thinking (its signature is not checked; redacted_thinking's data
	// cannot be read and is dropped)
	Thinking string `json:"thinking"`
}

type anthropicTool struct {
	Type        string          `json:"type"` // "custom" or absent; Anthropic's server tools are refused
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Responses.

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// anthropicContent is a content block of a response.
type anthropicContent struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`      // text
	Thinking  *string         `json:"thinking,omitempty"`  // thinking
	Signature *string         `json:"signature,omitempty"` // thinking (always "": Loom signs nothing)
	ID        string          `json:"id,omitempty"`        // tool_use
	Name      string          `json:"name,omitempty"`      // tool_use
	Input     json.RawMessage `json:"input,omitempty"`     // tool_use
}

type anthropicResponse struct {
	ID           string             `json:"id"`
	Type         string             `json:"type"`
	Role         string             `json:"role"`
	Model        string             `json:"model"`
	Content      []anthropicContent `json:"content"`
	StopReason   *string            `json:"stop_reason"`
	StopSequence *string            `json:"stop_sequence"`
	Usage        anthropicUsage     `json:"usage"`
}

func anthropicTextBlock(s string) anthropicContent { return anthropicContent{Type: "text", Text: &s} }

func anthropicThinkingBlock(s string) anthropicContent {
	sig := ""
	return anthropicContent{Type: "thinking", Thinking: &s, Signature: &sig}
}

// Stream events, their fields in Anthropic's order.

type anthropicMessageStart struct {
	Type    string            `json:"type"` // message_start
	Message anthropicResponse `json:"message"`
}

type anthropicBlockStart struct {
	Type         string           `json:"type"` // content_block_start
	Index        int              `json:"index"`
	ContentBlock anthropicContent `json:"content_block"`
}

type anthropicDelta struct {
	Type        string `json:"type"` // text_delta, thinking_delta, input_json_delta
	Text        string `json:"text,omitempty"`
	Thinking    string `json:"thinking,omitempty"`
	PartialJSON string `json:"partial_json,omitempty"`
}

type anthropicBlockDelta struct {
	Type  string         `json:"type"` // content_block_delta
	Index int            `json:"index"`
	Delta anthropicDelta `json:"delta"`
}

type anthropicBlockStop struct {
	Type  string `json:"type"` // content_block_stop
	Index int    `json:"index"`
}

type anthropicMessageDelta struct {
	Type  string `json:"type"` // message_delta
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage anthropicUsage `json:"usage"`
}

// anthropicType is an event with only its type (ping, message_stop).
type anthropicType struct {
	Type string `json:"type"`
}

// Errors.

type anthropicErrorBody struct {
	Type  string `json:"type"` // "error"
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// anthropicErrorOf is e in Anthropic's shape: its type follows from the
// HTTP status as Anthropic's do (the queue being full is 529
// overloaded_error, which Anthropic's clients retry).
func anthropicErrorOf(e *apiError) (int, anthropicErrorBody) {
	status := e.status
	if status == 0 {
		status = 500
	}
	var b anthropicErrorBody
	b.Type = "error"
	switch {
	case status == 401:
		b.Error.Type = "authentication_error"
	case status == 403:
		b.Error.Type = "permission_error"
	case status == 404:
		b.Error.Type = "not_found_error"
	case status == 413:
		b.Error.Type = "request_too_large"
	case status == 429:
		b.Error.Type = "rate_limit_error"
	case status == 503 || status == 529:
		b.Error.Type = "overloaded_error"
	case status >= 500:
		b.Error.Type = "api_error"
	default:
		b.Error.Type = "invalid_request_error"
	}
	b.Error.Message = e.Msg
	if e.Param != nil && *e.Param != "" && !strings.Contains(e.Msg, *e.Param) {
		b.Error.Message = *e.Param + ": " + e.Msg
	}
	return status, b
}

func anthropicError(w http.ResponseWriter, e *apiError) {
	status, b := anthropicErrorOf(e)
	writeJSON(w, status, b)
}

// anthropicAuth is s.auth for Anthropic's clients: the key may come as
// x-api-key (what they send) or as Authorization: Bearer, and errors are
// in Anthropic's shape.
func (s *Server) anthropicAuth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			anthropicError(w, &apiError{status: 503, Msg: "the server is loading its models"})
			return
		}
		if s.cfg.APIKey != "" && !anthropicKey(r.Header, s.cfg.APIKey) {
			anthropicError(w, &apiError{status: 401, Msg: "invalid or missing API key (x-api-key: KEY or Authorization: Bearer KEY)"})
			return
		}
		if !s.enter() {
			anthropicError(w, &apiError{status: 503, Msg: "the server is shutting down"})
			return
		}
		defer s.active.Done()
		h(w, r)
	}
}

// anthropicKey reports whether the request carries the key: exactly one
// x-api-key header equal to it, or a valid Authorization (validKey).
func anthropicKey(h http.Header, key string) bool {
	if k := h.Values("X-Api-Key"); len(k) == 1 && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(k[0])), []byte(key)) == 1 {
		return true
	}
	return validKey(h.Values("Authorization"), key)
}

// anthropicPrepare validates req and lays it out for m through the chat
// path (its stop_sequences replace the chat request's stops; a final
// assistant message is a prefill the reply continues); count
// (count_tokens) skips max_tokens and sampling.
func (s *Server) anthropicPrepare(m *Model, req *anthropicRequest, count bool) (*chatPrep, *apiError) {
	cr, prefill, aerr := req.chatRequest(count)
	if aerr != nil {
		return nil, aerr
	}
	return s.prepareChat(m, cr, chatInput{count: count, prefill: prefill,
		generation: func(g *engine.Request) *apiError { g.Stop = req.stops(); return nil }})
}

// Limits of a Messages request besides the chat path's.
const anthropicMaxStops = 16

// chatRequest is the chat completions request req means, and the text of
// a final assistant message (a prefill, which the reply continues).
func (req *anthropicRequest) chatRequest(count bool) (*chatRequest, string, *apiError) {
	cr := &chatRequest{Model: req.Model}
	if !count {
		if req.MaxTokens == nil {
			return nil, "", badRequest("max_tokens", "max_tokens: Field required")
		}
		if *req.MaxTokens < 1 {
			return nil, "", badRequest("max_tokens", "max_tokens must be ≥ 1, got %d", *req.MaxTokens)
		}
		if t := req.Temperature; t != nil && !(*t >= 0 && *t <= 1) {
			return nil, "", badRequest("temperature", "temperature must be between 0 and 1, got %v", *t)
		}
		if len(req.StopSequences) > anthropicMaxStops {
			return nil, "", badRequest("stop_sequences", "at most %d stop sequences, got %d", anthropicMaxStops, len(req.StopSequences))
		}
		for i, st := range req.StopSequences {
			if len(st) > maxStopBytes {
				return nil, "", badRequest("stop_sequences", "stop_sequences[%d] is %d bytes, at most %d", i, len(st), maxStopBytes)
			}
		}
		cr.MaxTokens, cr.Temperature, cr.TopP, cr.TopK, cr.Stream = req.MaxTokens, req.Temperature, req.TopP, req.TopK, req.Stream
	}
	// The system prompt: a string or text blocks.
	var msgs []chatMessage
	if len(req.System) > 0 && string(req.System) != "null" {
		sys, aerr := anthropicText(req.System, "system")
		if aerr != nil {
			return nil, "", aerr
		}
		msgs = append(msgs, chatMessage{Role: "system", Content: anthropicJSONString(sys)})
	}
	turns, prefill, aerr := anthropicTurns(req.Messages)
	if aerr != nil {
		return nil, "", aerr
	}
	cr.Messages = append(msgs, turns...)
	// Tools, in OpenAI's shape (as sent: schemas keep their key order).
	if len(req.Tools) > 0 {
		var tools []json.RawMessage
		seen := map[string]bool{}
		for i, t := range req.Tools {
			if t.Type != "" && t.Type != "custom" {
				return nil, "", badRequest(fmt.Sprintf("tools.%d.type", i), "tool type %q is not supported: only custom tools (name, description, input_schema) are", t.Type)
			}
			if t.Name == "" {
				return nil, "", badRequest(fmt.Sprintf("tools.%d.name", i), "Field required")
			}
			if seen[t.Name] {
				return nil, "", badRequest(fmt.Sprintf("tools.%d.name", i), "tool names must be unique (%q is given twice)", t.Name)
			}
			seen[t.Name] = true
			schema := t.InputSchema
			if len(schema) == 0 || string(schema) == "null" {
				schema = json.RawMessage(`{"type":"object"}`)
			}
			if !strings.HasPrefix(strings.TrimSpace(string(schema)), "{") {
				return nil, "", badRequest(fmt.Sprintf("tools.%d.input_schema", i), "input_schema must be a JSON Schema object")
			}
			fn := map[string]any{"name": t.Name, "parameters": schema}
			if t.Description != "" {
				fn["description"] = t.Description
			}
			b, _ := json.Marshal(map[string]any{"type": "function", "function": fn})
			tools = append(tools, b)
		}
		cr.Tools, _ = json.Marshal(tools)
	}
	if tc := req.ToolChoice; tc != nil {
		switch tc.Type {
		case "auto", "":
			cr.ToolChoice = json.RawMessage(`"auto"`)
		case "any":
			cr.ToolChoice = json.RawMessage(`"required"`)
		case "none":
			cr.ToolChoice = json.RawMessage(`"none"`)
		case "tool":
			if tc.Name == "" {
				return nil, "", badRequest("tool_choice.name", "tool_choice.name: Field required")
			}
			cr.ToolChoice, _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": tc.Name}})
		default:
			return nil, "", badRequest("tool_choice.type", "tool_choice.type must be auto, any, tool or none, not %q", tc.Type)
		}
		parallel := !tc.DisableParallelToolUse
		cr.ParallelToolCalls = &parallel
		if (tc.Type == "any" || tc.Type == "tool") && len(req.Tools) > 0 && prefill != "" {
			return nil, "", badRequest("messages", "a final assistant message (prefill) cannot be combined with tool_choice %q", tc.Type)
		}
	}
	// Extended thinking: the template's enable_thinking (the budget is
	// not enforced).
	if th := req.Thinking; th != nil {
		switch th.Type {
		case "enabled":
			if th.BudgetTokens == nil || *th.BudgetTokens < 1 {
				return nil, "", badRequest("thinking.budget_tokens", "thinking.budget_tokens: a positive number of tokens is required")
			}
			cr.ChatTemplateKwargs = json.RawMessage(`{"enable_thinking":true}`)
		case "adaptive", "between_tools":
			cr.ChatTemplateKwargs = json.RawMessage(`{"enable_thinking":true}`)
		case "disabled":
			cr.ChatTemplateKwargs = json.RawMessage(`{"enable_thinking":false}`)
		default:
			return nil, "", badRequest("thinking.type", "thinking.type must be enabled or disabled, not %q", th.Type)
		}
	}
	return cr, prefill, nil
}

// stops are the request's stop sequences (empty ones dropped).
func (req *anthropicRequest) stops() []string {
	var out []string
	for _, s := range req.StopSequences {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func anthropicJSONString(s string) json.RawMessage { b, _ := json.Marshal(s); return b }

// anthropicBlocks reads content that is a string or a list of blocks.
func anthropicBlocks(raw json.RawMessage, param string) ([]anthropicBlock, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropicBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, badRequest(param, "%s must be a string or a list of content blocks", param)
	}
	return blocks, nil
}

// anthropicText reads text content (the system prompt, a tool result):
// a string, or text blocks joined by newlines.
func anthropicText(raw json.RawMessage, param string) (string, *apiError) {
	blocks, aerr := anthropicBlocks(raw, param)
	if aerr != nil {
		return "", aerr
	}
	var parts []string
	for i, b := range blocks {
		if b.Type != "text" {
			return "", anthropicUnsupported(fmt.Sprintf("%s.%d", param, i), b.Type)
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n"), nil
}

func anthropicUnsupported(param, typ string) *apiError {
	switch typ {
	case "image":
		return badRequest(param, "images are not supported")
	case "document":
		return badRequest(param, "documents are not supported")
	}
	return badRequest(param, "content blocks of type %q are not supported here", typ)
}

// anthropicTurns converts the conversation into chat messages: a user
// turn's tool_result blocks become tool messages (named after the call
// they answer) and its text a user message, in their order; an assistant
// turn's text is its content, its tool_use blocks its tool_calls and its
// thinking its reasoning_content. Consecutive turns of one role are one
// turn, as Anthropic combines them. A final assistant turn without tool
// calls is returned as the prefill, which the reply continues.
func anthropicTurns(in []anthropicMessage) ([]chatMessage, string, *apiError) {
	if len(in) == 0 {
		return nil, "", badRequest("messages", "messages: at least one message is required")
	}
	if len(in) > maxMessages {
		return nil, "", badRequest("messages", "at most %d messages", maxMessages)
	}
	type turn struct {
		role   string
		blocks []anthropicBlock
		at     []string // each block's param
	}
	var turns []turn
	for i, m := range in {
		param := fmt.Sprintf("messages.%d", i)
		if m.Role != "user" && m.Role != "assistant" {
			if m.Role == "system" {
				return nil, "", badRequest(param+".role", `messages.%d.role: unexpected role "system"; the system prompt is the top-level system parameter`, i)
			}
			return nil, "", badRequest(param+".role", "messages.%d.role must be user or assistant, not %q", i, m.Role)
		}
		if len(m.Content) == 0 || string(m.Content) == "null" {
			return nil, "", badRequest(param+".content", "messages.%d.content: Field required", i)
		}
		blocks, aerr := anthropicBlocks(m.Content, param+".content")
		if aerr != nil {
			return nil, "", aerr
		}
		if len(turns) == 0 || turns[len(turns)-1].role != m.Role {
			turns = append(turns, turn{role: m.Role})
		}
		t := &turns[len(turns)-1]
		for k, b := range blocks {
			t.blocks = append(t.blocks, b)
			t.at = append(t.at, fmt.Sprintf("%s.content.%d", param, k))
		}
	}
	var out []chatMessage
	names := map[string]string{} // tool_use id → the tool's name
	prefill := ""
	for ti, t := range turns {
		if t.role == "user" {
			var text []string
			flush := func() {
				if len(text) > 0 {
					out = append(out, chatMessage{Role: "user", Content: anthropicJSONString(strings.Join(text, "\n"))})
					text = nil
				}
			}
			for k, b := range t.blocks {
				switch b.Type {
				case "text":
					text = append(text, b.Text)
				case "tool_result":
					flush()
					content := ""
					if len(b.Content) > 0 && string(b.Content) != "null" {
						var aerr *apiError
						if content, aerr = anthropicText(b.Content, t.at[k]+".content"); aerr != nil {
							return nil, "", aerr
						}
					}
					if b.IsError {
						content = "Error: " + content
					}
					out = append(out, chatMessage{Role: "tool", ToolCallID: b.ToolUseID, Name: names[b.ToolUseID], Content: anthropicJSONString(content)})
				default:
					return nil, "", anthropicUnsupported(t.at[k], b.Type)
				}
			}
			flush()
			continue
		}
		var text, thinking []string
		var calls []map[string]any
		for k, b := range t.blocks {
			switch b.Type {
			case "text":
				text = append(text, b.Text)
			case "thinking":
				thinking = append(thinking, b.Thinking)
			case "redacted_thinking":
			case "tool_use":
				if b.ID == "" || b.Name == "" {
					return nil, "", badRequest(t.at[k], "%s: a tool_use block needs an id and a name", t.at[k])
				}
				input := b.Input
				if len(input) == 0 || string(input) == "null" {
					input = json.RawMessage(`{}`)
				}
				if !strings.HasPrefix(strings.TrimSpace(string(input)), "{") {
					return nil, "", badRequest(t.at[k]+".input", "%s.input must be an object", t.at[k])
				}
				names[b.ID] = b.Name
				calls = append(calls, map[string]any{"id": b.ID, "type": "function",
					"function": map[string]any{"name": b.Name, "arguments": input}})
			default:
				return nil, "", anthropicUnsupported(t.at[k], b.Type)
			}
		}
		if ti == len(turns)-1 && len(calls) == 0 {
			prefill = strings.Join(text, "\n")
			continue
		}
		cm := chatMessage{Role: "assistant", Content: anthropicJSONString(strings.Join(text, "\n")), ReasoningContent: strings.Join(thinking, "\n")}
		if len(calls) > 0 {
			cm.ToolCalls, _ = json.Marshal(calls)
		}
		out = append(out, cm)
	}
	if len(out) == 0 {
		return nil, "", badRequest("messages", "messages: the conversation needs a user message")
	}
	return out, prefill, nil
}

// anthropicModel decodes the request and finds its model, a generative
// one; on failure it has written the error.
func (s *Server) anthropicModel(w http.ResponseWriter, r *http.Request, req *anthropicRequest) (*Model, bool) {
	if err := s.decode(w, r, req); err != nil {
		anthropicError(w, err)
		return nil, false
	}
	if req.Model == "" {
		anthropicError(w, badRequest("model", "model: Field required"))
		return nil, false
	}
	m, err := s.modelFor(r, req.Model)
	if err != nil {
		anthropicError(w, err)
		return nil, false
	}
	if err := generative(m); err != nil {
		anthropicError(w, err)
		return nil, false
	}
	return m, true
}

// anthropicCountTokens is POST /v1/messages/count_tokens: the length of
// the prompt the request would be evaluated with.
func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	m, ok := s.anthropicModel(w, r, &req)
	if !ok {
		return
	}
	p, aerr := s.anthropicPrepare(m, &req, true)
	if aerr != nil {
		anthropicError(w, aerr)
		return
	}
	writeJSON(w, 200, map[string]int{"input_tokens": len(p.g.Tokens)})
}

// anthropicMessages is POST /v1/messages.
func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	var req anthropicRequest
	m, ok := s.anthropicModel(w, r, &req)
	if !ok {
		return
	}
	p, aerr := s.anthropicPrepare(m, &req, false)
	if aerr != nil {
		anthropicError(w, aerr)
		return
	}
	g := p.g
	// Anthropic's clients ask for far more tokens than a local model's
	// context holds (Claude Code: 32000): max_tokens is cut to what the
	// context leaves, and a reply that fills it stops with
	// model_context_window_exceeded.
	ctxLen := m.Engine.CtxLen()
	if len(g.Tokens) >= ctxLen {
		anthropicError(w, badRequest("", "prompt is too long: %d tokens > %d maximum", len(g.Tokens), ctxLen-1))
		return
	}
	clamped := false
	if len(g.Tokens)+g.MaxTokens > ctxLen {
		g.MaxTokens, clamped = ctxLen-len(g.Tokens), true
	}
	start := time.Now()
	streams, cancel, aerr := s.submit(w, r, m, g, p.gparam)
	if aerr != nil {
		if aerr.status == 429 { // Anthropic's overloaded_error, which its clients retry
			aerr.status = 529
		}
		anthropicError(w, aerr)
		return
	}
	defer cancel()
	rp := &reply{m: m, streams: streams, id: newID("msg_"), created: time.Now().Unix(), chat: true, nPrompt: len(g.Tokens),
		tools: p.tools, grammarParam: p.gparam, prompt: p.prompt, reasoning: p.reasoning}
	ar := &anthropicReply{reply: rp, stops: g.Stop, clamped: clamped}
	if req.Stream {
		s.anthropicStream(w, ar, cancel)
	} else {
		s.anthropicWhole(w, ar)
	}
	for _, st := range streams {
		s.metrics.observe(m.Name, st.Result(), start)
	}
}

// anthropicReply is what the response writers need beyond the chat
// path's reply.
type anthropicReply struct {
	*reply
	stops   []string
	clamped bool
}

// stopReason is Anthropic's for a finished reply whose generated tokens
// were ids: the stop sequence that ended it, if one did.
func (ar *anthropicReply) stopReason(res engine.Result, ids []int32, calls bool) (string, *string) {
	switch {
	case calls: // as the chat path's tool_calls, whatever ended the reply after them
		return "tool_use", nil
	case res.FinishReason == engine.FinishLength:
		if ar.clamped || res.Detail == engine.DetailContext {
			return "model_context_window_exceeded", nil
		}
		return "max_tokens", nil
	case res.Detail == engine.DetailStopString:
		// The engine leaves the stop string out of the text: the first
		// one in the detokenized tokens is the one that matched.
		raw := ar.m.Engine.Vocab().Decode(ids)
		best, at := "", -1
		for _, s := range ar.stops {
			if i := strings.Index(raw, s); i >= 0 && (at < 0 || i < at) {
				best, at = s, i
			}
		}
		if at >= 0 {
			return "stop_sequence", &best
		}
		if len(ar.stops) == 1 {
			return "stop_sequence", &ar.stops[0]
		}
		return "stop_sequence", nil
	}
	return "end_turn", nil
}

// toolUseID makes a tool_use block's id: Anthropic's toolu_ form, or the
// nine alphanumerics Mistral's templates insist on when the reply comes
// back.
func anthropicToolUseID(f chat.ToolFormat) string {
	if f == chat.ToolsMistral {
		return callID(f)
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	rand.Read(b)
	for i := range b {
		b[i] = alnum[int(b[i])%len(alnum)]
	}
	return "toolu_" + string(b)
}

func (ar *anthropicReply) toolFormat() chat.ToolFormat {
	if ar.tools != nil {
		return ar.tools.format
	}
	return chat.ToolsGeneric
}

// toolUse is a parsed call as a tool_use block (arguments that are not a
// JSON object, which no parser returns, become {}).
func anthropicToolUse(f chat.ToolFormat, c chat.ToolCall) anthropicContent {
	input := json.RawMessage(c.Arguments)
	if !json.Valid(input) || !strings.HasPrefix(strings.TrimSpace(c.Arguments), "{") {
		input = json.RawMessage(`{}`)
	}
	return anthropicContent{Type: "tool_use", ID: anthropicToolUseID(f), Name: c.Name, Input: input}
}

// anthropicWhole collects the reply and writes one message.
func (s *Server) anthropicWhole(w http.ResponseWriter, ar *anthropicReply) {
	st := ar.streams[0]
	p := ar.parser() // only for EventText
	var text strings.Builder
	var ids []int32
	for ev := range st.Events() {
		text.WriteString(p.EventText(ev))
		if ev.ID >= 0 {
			ids = append(ids, ev.ID)
		}
	}
	res := st.Result()
	if e := resultError(res, ar.grammarParam); e != nil {
		anthropicError(w, e)
		return
	}
	writeJSON(w, 200, ar.message(text.String(), res, ids))
}

// message is the response for a whole reply text (the parser's event
// texts) that generated ids and ended with res.
func (ar *anthropicReply) message(text string, res engine.Result, ids []int32) anthropicResponse {
	pr := ar.parseWhole(text)
	resp := anthropicResponse{ID: ar.id, Type: "message", Role: "assistant", Model: ar.m.Name, Content: []anthropicContent{},
		Usage: anthropicUsage{InputTokens: ar.nPrompt, OutputTokens: res.Generated}}
	if strings.TrimSpace(pr.reasoning) != "" {
		resp.Content = append(resp.Content, anthropicThinkingBlock(pr.reasoning))
	}
	if strings.TrimSpace(pr.content) != "" {
		resp.Content = append(resp.Content, anthropicTextBlock(pr.content))
	}
	for _, c := range pr.calls {
		resp.Content = append(resp.Content, anthropicToolUse(ar.toolFormat(), c))
	}
	if len(resp.Content) == 0 { // an empty reply: one empty text block, which clients read as ""
		resp.Content = append(resp.Content, anthropicTextBlock(""))
	}
	reason, seq := ar.stopReason(res, ids, len(pr.calls) > 0)
	resp.StopReason, resp.StopSequence = &reason, seq
	return resp
}

// anthropicEvents turns a reply's deltas into content-block events: a
// block opens when its first text that is not only whitespace arrives
// (whitespace before it is held, and dropped if no such text follows),
// closes when a block of another type opens, and each tool call is a
// tool_use block with its whole input as one input_json_delta.
type anthropicEvents struct {
	send    func(event string, v any)
	format  chat.ToolFormat
	next    int    // the next block's index
	open    string // the open block's type ("": none)
	held    string // whitespace held for a block of type heldFor
	heldFor string
	calls   int
}

func (b *anthropicEvents) add(d chat.Delta) {
	b.piece("thinking", d.Reasoning)
	b.piece("text", d.Content)
	for _, c := range d.Calls {
		b.close()
		tu := anthropicToolUse(b.format, c)
		input := tu.Input
		tu.Input = json.RawMessage(`{}`)
		b.send("content_block_start", anthropicBlockStart{Type: "content_block_start", Index: b.next, ContentBlock: tu})
		b.send("content_block_delta", anthropicBlockDelta{Type: "content_block_delta", Index: b.next,
			Delta: anthropicDelta{Type: "input_json_delta", PartialJSON: string(input)}})
		b.send("content_block_stop", anthropicBlockStop{Type: "content_block_stop", Index: b.next})
		b.next++
		b.calls++
	}
}

func (b *anthropicEvents) piece(typ, text string) {
	if text == "" {
		return
	}
	if b.open != typ {
		if b.heldFor != typ {
			b.held, b.heldFor = "", typ
		}
		b.held += text
		if strings.TrimSpace(b.held) == "" {
			return
		}
		text, b.held, b.heldFor = b.held, "", ""
		b.close()
		start := anthropicTextBlock("")
		if typ == "thinking" {
			start = anthropicThinkingBlock("")
		}
		b.send("content_block_start", anthropicBlockStart{Type: "content_block_start", Index: b.next, ContentBlock: start})
		b.open = typ
	}
	delta := anthropicDelta{Type: "text_delta", Text: text}
	if typ == "thinking" {
		delta = anthropicDelta{Type: "thinking_delta", Thinking: text}
	}
	b.send("content_block_delta", anthropicBlockDelta{Type: "content_block_delta", Index: b.next, Delta: delta})
}

// end closes the open block; a reply without any block gets one empty
// text block, as the whole message has.
func (b *anthropicEvents) end() {
	b.close()
	if b.next == 0 {
		b.send("content_block_start", anthropicBlockStart{Type: "content_block_start", Index: 0, ContentBlock: anthropicTextBlock("")})
		b.send("content_block_stop", anthropicBlockStop{Type: "content_block_stop", Index: 0})
		b.next++
	}
}

// close ends the open block, if any.
func (b *anthropicEvents) close() {
	if b.open == "" {
		return
	}
	b.send("content_block_stop", anthropicBlockStop{Type: "content_block_stop", Index: b.next})
	b.open = ""
	b.next++
}

// anthropicStream writes the reply as Anthropic's server-sent events:
// message_start, ping, the content blocks (content_block_start, its
// deltas, content_block_stop), message_delta (the stop reason and usage)
// and message_stop; a failure is an error event. A write error (the
// client left) cancels the request.
func (s *Server) anthropicStream(w http.ResponseWriter, ar *anthropicReply, cancel func()) {
	sw := startStream(w, "text/event-stream", cancel)
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		sw.printf("event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", ar.start())
	send("ping", anthropicType{Type: "ping"})
	st := ar.streams[0]
	p := ar.parser()
	ev := &anthropicEvents{send: send, format: ar.toolFormat()}
	var ids []int32
	for e := range st.Events() {
		if e.ID >= 0 {
			ids = append(ids, e.ID)
		}
		ev.add(p.Add(p.EventText(e)))
	}
	res := st.Result()
	if e := resultError(res, ar.grammarParam); e != nil {
		_, body := anthropicErrorOf(e)
		send("error", body)
		return
	}
	ev.add(p.Finish())
	ev.end()
	send("message_delta", ar.end(res, ids, ev.calls > 0))
	send("message_stop", anthropicType{Type: "message_stop"})
}

// start is the message_start event.
func (ar *anthropicReply) start() anthropicMessageStart {
	return anthropicMessageStart{Type: "message_start", Message: anthropicResponse{ID: ar.id, Type: "message", Role: "assistant",
		Model: ar.m.Name, Content: []anthropicContent{}, Usage: anthropicUsage{InputTokens: ar.nPrompt}}}
}

// end is the message_delta event of a reply that generated ids, ended
// with res, and held tool calls or not.
func (ar *anthropicReply) end(res engine.Result, ids []int32, calls bool) anthropicMessageDelta {
	d := anthropicMessageDelta{Type: "message_delta", Usage: anthropicUsage{InputTokens: ar.nPrompt, OutputTokens: res.Generated}}
	d.Delta.StopReason, d.Delta.StopSequence = ar.stopReason(res, ids, calls)
	return d
}
