package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/loom-inference/loom/chat"
	"math"
	"strconv"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
)

// Request limits beyond which a request is refused with 400.
const (
	maxChoices     = 8
	maxStops       = 4
	maxStopBytes   = 256 // each stop string (checked against the held-back text at every token)
	maxLogitBias   = 1024
	maxTopLogprobs = 20
	maxMessages    = 4096
	maxTools       = 128 // OpenAI's limit
)

// apiError is an OpenAI-style error with its HTTP status.
type apiError struct {
	status int
	Msg    string  `json:"message"`
	Type   string  `json:"type"`
	Param  *string `json:"param"`
	Code   *string `json:"code"`
}

func (e *apiError) Error() string { return e.Msg }

func badRequest(param, format string, args ...any) *apiError {
	e := &apiError{status: 400, Msg: fmt.Sprintf(format, args...), Type: "invalid_request_error"}
	if param != "" {
		e.Param = &param
	}
	return e
}

func withCode(e *apiError, code string) *apiError { e.Code = &code; return e }

// sampling holds the sampling fields shared by both endpoints.
type sampling struct {
	MaxTokens        *int               `json:"max_tokens"`
	MaxCompletion    *int               `json:"max_completion_tokens"`
	Temperature      *float64           `json:"temperature"`
	TopP             *float64           `json:"top_p"`
	TopK             *int               `json:"top_k"`
	MinP             *float64           `json:"min_p"`
	PresencePenalty  *float64           `json:"presence_penalty"`
	FrequencyPenalty *float64           `json:"frequency_penalty"`
	RepeatPenalty    *float64           `json:"repeat_penalty"`
	Seed             *int64             `json:"seed"`
	Stop             json.RawMessage    `json:"stop"`
	N                *int               `json:"n"`
	LogitBias        map[string]float64 `json:"logit_bias"`
	Stream           bool               `json:"stream"`
	StreamOptions    *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	User           string          `json:"user"`
	IgnoreEOS      bool            `json:"ignore_eos"` // llama.cpp's extension
	ResponseFormat json.RawMessage `json:"response_format"`
	Grammar        string          `json:"grammar"`     // llama.cpp's extension: GBNF
	JSONSchema     json.RawMessage `json:"json_schema"` // llama.cpp's extension: a JSON Schema
	// Speculative decoding, llama.cpp's per-request fields (flat keys
	// with a dot) and Loom's speculative.mode.
	SpecMode *string  `json:"speculative.mode"`
	SpecNMax *int     `json:"speculative.n_max"`
	SpecNMin *int     `json:"speculative.n_min"`
	SpecPMin *float64 `json:"speculative.p_min"`
	// LoRA is llama.cpp's per-request adapter list, [{"id": 0, "scale":
	// 0.5}]: exactly those of the model's adapters apply (absent: every
	// adapter at its default scale).
	LoRA json.RawMessage `json:"lora"`

	grammarFrom string // the field the grammar came from (set by params)
}

// Limits of the speculative.* fields (the engine's).
const maxDraft = 64

// speculation reads the speculative.* fields over the model's own
// speculative decoding (loom serve's --spec, --draft-max, …): a field
// given replaces the server's value for this request, the others stay.
// speculative.n_max 0 turns speculation off, as in llama.cpp; n_min is
// clamped to n_max, as llama.cpp does. Without any field the request
// takes the engine's (Request.Spec zero). For an engine given to Add the
// server knows neither its speculation nor whether it has a draft model
// (the engine does not say): there, without speculative.mode, the
// engine's settings apply whole, and the engine refuses "draft" without
// a draft model (400 without a param).
// adapters reads the request's lora list against m's adapters; without
// one, the adapter its model name names (BASE:ADAPTER), else nil (the
// engine's defaults).
func (s *sampling) adapters(m *Model, requested string) ([]engine.LoRAScale, error) {
	raw := bytes.TrimSpace(s.LoRA)
	if len(raw) == 0 || string(raw) == "null" {
		return modelAdapters(m, requested), nil // "BASE:ADAPTER" names one
	}
	list, err := parseLoRAList(raw, m, "lora", "lora")
	if err != nil {
		return nil, err
	}
	return list, nil
}

func (s *sampling) speculation(m *Model) (engine.SpecParams, error) {
	if s.SpecMode == nil && s.SpecNMax == nil && s.SpecNMin == nil && s.SpecPMin == nil {
		return engine.SpecParams{}, nil
	}
	p := m.spec
	if p.Mode == "" {
		p.Mode = engine.SpecOff
	}
	if p.Max == 0 {
		p.Max = 16
	}
	if p.PMin == 0 {
		p.PMin = 0.75
	}
	if s.SpecMode != nil {
		switch *s.SpecMode {
		case engine.SpecOff, engine.SpecNgram:
		case engine.SpecDraft:
			if m.known && !m.hasDraft {
				return p, badRequest("speculative.mode", "speculative.mode \"draft\": model %q has no draft model (loom serve --model-draft FILE); \"ngram\" needs none", m.Name)
			}
		default:
			return p, badRequest("speculative.mode", "speculative.mode must be \"off\", \"ngram\" or \"draft\", got %q", *s.SpecMode)
		}
		p.Mode = *s.SpecMode
	}
	if s.SpecNMax != nil {
		if n := *s.SpecNMax; n < 0 || n > maxDraft {
			return p, badRequest("speculative.n_max", "speculative.n_max must be between 0 and %d, got %d", maxDraft, n)
		}
		p.Max = *s.SpecNMax
	}
	if s.SpecNMin != nil {
		if n := *s.SpecNMin; n < 0 || n > maxDraft {
			return p, badRequest("speculative.n_min", "speculative.n_min must be between 0 and %d, got %d", maxDraft, n)
		}
		p.Min = *s.SpecNMin
	}
	p.Min = min(p.Min, p.Max)
	if s.SpecPMin != nil {
		v := *s.SpecPMin
		if !(v >= 0 && v <= 1) {
			return p, badRequest("speculative.p_min", "speculative.p_min must be between 0 and 1, got %v", v)
		}
		p.PMin = float32(v)
		if p.PMin == 0 { // the engine reads 0 as its default: the smallest probability is "always draft"
			p.PMin = math.SmallestNonzeroFloat32
		}
	}
	switch {
	case p.Max == 0: // speculative.n_max 0: nothing is drafted
		return engine.SpecParams{Mode: engine.SpecOff}, nil
	case !m.known && s.SpecMode == nil:
		return engine.SpecParams{}, nil // the engine's, whole
	}
	return p, nil
}

// chatRequest is POST /v1/chat/completions.
type chatRequest struct {
	Model    string          `json:"model"`
	Messages []chatMessage   `json:"messages"`
	Logprobs bool            `json:"logprobs"`
	TopLogp  *int            `json:"top_logprobs"`
	Tools    json.RawMessage `json:"tools"`
	// ToolChoice is "none", "auto", "required" or {"type": "function",
	// "function": {"name": …}}.
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	// Reasoning: llama.cpp's reasoning_format (auto, deepseek,
	// deepseek-legacy, none), the template's extra variables
	// (chat_template_kwargs, e.g. {"enable_thinking": false}) and
	// OpenAI's reasoning_effort (the template variable of that name).
	ReasoningFormat    *string         `json:"reasoning_format"`
	ChatTemplateKwargs json.RawMessage `json:"chat_template_kwargs"`
	ReasoningEffort    *string         `json:"reasoning_effort"`
	// ReasoningBudget is llama.cpp's per-request reasoning budget in
	// tokens (-1: unlimited; absent: the server's).
	ReasoningBudget *int `json:"reasoning_budget_tokens"`
	sampling
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// ReasoningContent is an earlier reply's reasoning (as llama.cpp
	// takes it back), for templates that show it.
	ReasoningContent string `json:"reasoning_content"`
}

// completionRequest is POST /v1/completions.
type completionRequest struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Echo     bool            `json:"echo"`
	Logprobs *int            `json:"logprobs"`
	sampling
}

func (r *chatRequest) modelName() string       { return r.Model }
func (r *completionRequest) modelName() string { return r.Model }

// params validates the sampling fields into an engine request.
func (s *sampling) params(nVocab int) (engine.Request, error) {
	var g engine.Request
	p := &g.Sample
	p.Temp, p.TopK, p.TopP, p.MinP, p.RepeatPenalty = 1, 0, 1, 0, 1
	if s.Temperature != nil {
		if t := *s.Temperature; t < 0 || t > 2 || math.IsNaN(t) {
			return g, badRequest("temperature", "temperature must be between 0 and 2, got %v", t)
		}
		p.Temp = float32(*s.Temperature)
	}
	if s.TopP != nil {
		if v := *s.TopP; !(v > 0 && v <= 1) {
			return g, badRequest("top_p", "top_p must be in (0, 1], got %v", v)
		}
		p.TopP = float32(*s.TopP)
	}
	if s.TopK != nil {
		if *s.TopK < 0 {
			return g, badRequest("top_k", "top_k must be ≥ 0, got %d", *s.TopK)
		}
		p.TopK = *s.TopK
	}
	if s.MinP != nil {
		if v := *s.MinP; !(v >= 0 && v <= 1) {
			return g, badRequest("min_p", "min_p must be in [0, 1], got %v", v)
		}
		p.MinP = float32(*s.MinP)
	}
	for name, v := range map[string]*float64{"presence_penalty": s.PresencePenalty, "frequency_penalty": s.FrequencyPenalty} {
		if v != nil {
			if *v < -2 || *v > 2 || math.IsNaN(*v) {
				return g, badRequest(name, "%s must be between -2 and 2, got %v", name, *v)
			}
		}
	}
	if s.PresencePenalty != nil {
		p.PresPenalty = float32(*s.PresencePenalty)
	}
	if s.FrequencyPenalty != nil {
		p.FreqPenalty = float32(*s.FrequencyPenalty)
	}
	if s.RepeatPenalty != nil {
		if v := *s.RepeatPenalty; !(v > 0 && v <= 10) {
			return g, badRequest("repeat_penalty", "repeat_penalty must be in (0, 10], got %v", v)
		}
		p.RepeatPenalty = float32(*s.RepeatPenalty)
	}
	if s.Seed != nil {
		p.Seed = uint64(*s.Seed)
	} else {
		p.Seed = randomSeed()
	}
	mt, mtName := s.MaxTokens, "max_tokens"
	if s.MaxCompletion != nil {
		mt, mtName = s.MaxCompletion, "max_completion_tokens"
	}
	if mt != nil {
		if *mt < 1 {
			return g, badRequest(mtName, "%s must be ≥ 1, got %d", mtName, *mt)
		}
		g.MaxTokens = *mt
	}
	if s.N != nil {
		if *s.N < 1 || *s.N > maxChoices {
			return g, badRequest("n", "n must be between 1 and %d, got %d", maxChoices, *s.N)
		}
		g.N = *s.N
	}
	g.IgnoreEOS = s.IgnoreEOS
	stops, err := parseStop(s.Stop)
	if err != nil {
		return g, err
	}
	g.Stop = stops
	if len(s.LogitBias) > maxLogitBias {
		return g, badRequest("logit_bias", "logit_bias has %d entries, at most %d", len(s.LogitBias), maxLogitBias)
	}
	for k, v := range s.LogitBias {
		id, err := strconv.Atoi(k)
		if err != nil || id < 0 || id >= nVocab {
			return g, badRequest("logit_bias", "logit_bias key %q is not a token id below %d", k, nVocab)
		}
		if v < -100 || v > 100 || math.IsNaN(v) {
			return g, badRequest("logit_bias", "logit_bias values must be between -100 and 100, got %v", v)
		}
		if p.LogitBias == nil {
			p.LogitBias = map[int32]float32{}
		}
		p.LogitBias[int32(id)] = float32(v)
	}
	gr, from, err := s.grammar()
	if err != nil {
		return g, err
	}
	g.Grammar, s.grammarFrom = gr, from
	return g, nil
}

// grammar reads response_format (and llama.cpp's grammar and json_schema
// fields) into a grammar, or nil for free text, and names the field.
func (s *sampling) grammar() (*grammar.Grammar, string, error) {
	// At most one field may constrain the reply: checked before any is
	// compiled, so a request pays for one compilation at most.
	var given []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"response_format", len(s.ResponseFormat) > 0 && string(s.ResponseFormat) != "null"},
		{"json_schema", len(s.JSONSchema) > 0 && string(s.JSONSchema) != "null"},
		{"grammar", s.Grammar != ""},
	} {
		if f.ok {
			given = append(given, f.name)
		}
	}
	if len(given) > 1 {
		return nil, "", badRequest(given[1], "give one of response_format, json_schema and grammar")
	}
	var gr *grammar.Grammar
	from := ""
	if len(s.ResponseFormat) > 0 && string(s.ResponseFormat) != "null" {
		var rf struct {
			Type       string `json:"type"`
			JSONSchema *struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict *bool           `json:"strict"`
			} `json:"json_schema"`
			Schema json.RawMessage `json:"schema"` // llama.cpp's shorthand
		}
		if err := json.Unmarshal(s.ResponseFormat, &rf); err != nil {
			return nil, "", badRequest("response_format", "response_format must be an object with a type")
		}
		switch rf.Type {
		case "text":
		case "json_object":
			schema := []byte(grammar.AnyJSONObject)
			if len(rf.Schema) > 0 {
				schema = rf.Schema
			}
			g, err := schemaGrammar(schema, true, "response_format")
			if err != nil {
				return nil, "", err
			}
			gr = g
			from = "response_format"
		case "json_schema":
			if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
				return nil, "", badRequest("response_format", "response_format json_schema needs json_schema.schema")
			}
			strict := rf.JSONSchema.Strict != nil && *rf.JSONSchema.Strict
			g, err := schemaGrammar(rf.JSONSchema.Schema, strict, "response_format")
			if err != nil {
				return nil, "", err
			}
			gr = g
			from = "response_format"
		default:
			return nil, "", badRequest("response_format", "unknown response_format type %q (text, json_object or json_schema)", rf.Type)
		}
	}
	if len(s.JSONSchema) > 0 && string(s.JSONSchema) != "null" {
		g, err := schemaGrammar(s.JSONSchema, false, "json_schema")
		if err != nil {
			return nil, "", err
		}
		gr = g
		from = "json_schema"
	}
	if s.Grammar != "" {
		g, err := grammar.Parse(s.Grammar)
		if err != nil {
			return nil, "", badRequest("grammar", "%v", err)
		}
		gr = g
		from = "grammar"
	}
	return gr, from, nil
}

// schemaGrammar converts a schema; strict refuses keywords the grammar
// cannot enforce (OpenAI's strict: true), otherwise they are ignored as
// llama.cpp does.
func schemaGrammar(schema []byte, strict bool, param string) (*grammar.Grammar, error) {
	g, _, err := grammar.FromSchemaOptions(schema, grammar.SchemaOptions{Lenient: !strict})
	if err != nil {
		return nil, badRequest(param, "%v", err)
	}
	return g, nil
}

func parseStop(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		if len(one) > maxStopBytes {
			return nil, badRequest("stop", "stop is %d bytes, at most %d", len(one), maxStopBytes)
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, badRequest("stop", "stop must be a string or an array of strings")
	}
	if len(many) > maxStops {
		return nil, badRequest("stop", "at most %d stop sequences, got %d", maxStops, len(many))
	}
	var out []string
	for i, s := range many {
		if len(s) > maxStopBytes {
			return nil, badRequest("stop", "stop[%d] is %d bytes, at most %d", i, len(s), maxStopBytes)
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// messages converts and validates chat messages.
func (r *chatRequest) messages() ([]chat.Message, error) {
	if len(r.Messages) == 0 {
		return nil, badRequest("messages", "messages must not be empty")
	}
	if len(r.Messages) > maxMessages {
		return nil, badRequest("messages", "at most %d messages", maxMessages)
	}
	out := make([]chat.Message, len(r.Messages))
	for i, m := range r.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "user", "assistant", "tool", "developer":
		default:
			return nil, badRequest(param+".role", "messages[%d].role %q is not one of system, user, assistant, tool", i, m.Role)
		}
		em := chat.Message{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
		if m.Role == "developer" {
			em.Role = "system"
		}
		var content any
		switch {
		case len(m.Content) == 0 || string(m.Content) == "null":
			if m.Role != "assistant" {
				return nil, badRequest(param+".content", "messages[%d].content is required", i)
			}
			content = ""
		default:
			var s string
			if err := json.Unmarshal(m.Content, &s); err == nil {
				content = s
				break
			}
			var parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal(m.Content, &parts); err != nil {
				return nil, badRequest(param+".content", "messages[%d].content must be a string or an array of content parts", i)
			}
			// Text parts are joined, as llama.cpp's server does, so every
			// template sees a string.
			text := ""
			for k, p := range parts {
				if p.Type != "text" {
					return nil, badRequest(param+".content", "messages[%d].content[%d] has type %q; only text parts are supported", i, k, p.Type)
				}
				if k > 0 {
					text += "\n"
				}
				text += p.Text
			}
			content = text
		}
		em.Content = content
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
			// Templates format the arguments as an object; OpenAI sends
			// them as a JSON string (llama.cpp decodes them too).
			tc, ok := orderedToolCalls(m.ToolCalls)
			if !ok {
				return nil, badRequest(param+".tool_calls", "messages[%d].tool_calls must be a list of calls", i)
			}
			em.ToolCalls = tc
		}
		if m.Role == "assistant" {
			em.ReasoningContent = m.ReasoningContent
		}
		out[i] = em
	}
	return out, nil
}

// Responses.

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float32 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type tokenLogprob struct {
	topLogprob
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type chatLogprobs struct {
	Content []tokenLogprob `json:"content"`
}

type chatChoice struct {
	Index   int `json:"index"`
	Message struct {
		Role             string         `json:"role"`
		Content          *string        `json:"content"`
		ReasoningContent *string        `json:"reasoning_content,omitempty"`
		ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
	} `json:"message"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason string        `json:"finish_reason"`
}

type chatResponse struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *usage       `json:"usage"`
	Timings *timings     `json:"timings,omitempty"`
}

// timings are llama.cpp's server timings (of the first choice), so the
// same clients and scripts can read both servers.
type timings struct {
	PromptN      int     `json:"prompt_n"`
	PromptMS     float64 `json:"prompt_ms"`
	PredictedN   int     `json:"predicted_n"`
	PredictedMS  float64 `json:"predicted_ms"`
	PredictedPS  float64 `json:"predicted_per_second"`
	PredictedMSP float64 `json:"predicted_per_token_ms"`
	// Speculative decoding (llama.cpp's, only when tokens were drafted):
	// tokens drafted, and those accepted.
	DraftN         *int `json:"draft_n,omitempty"`
	DraftNAccepted *int `json:"draft_n_accepted,omitempty"`
}

func timingsOf(r engine.Result) *timings {
	// llama.cpp's prompt_ms and predicted_ms: evaluating the prompt and
	// generating after it, without the time spent waiting for a place.
	t := &timings{PromptN: r.Computed, PromptMS: ms(r.Prefill), PredictedN: r.Generated, PredictedMS: ms(r.Decode)}
	if r.Generated > 1 && t.PredictedMS > 0 { // tokens after the first, which came with the prompt
		t.PredictedPS = float64(r.Generated-1) / t.PredictedMS * 1000
		t.PredictedMSP = t.PredictedMS / float64(r.Generated-1)
	}
	if r.Drafted > 0 {
		t.DraftN, t.DraftNAccepted = &r.Drafted, &r.Accepted
	}
	return t
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type chunkDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          string         `json:"content,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	ToolCalls        []toolCallJSON `json:"tool_calls,omitempty"`
}

// toolCallJSON is a tool call in a message, or (with Index) in a delta.
type toolCallJSON struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkChoice struct {
	Index        int           `json:"index"`
	Delta        chunkDelta    `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

type chatChunk struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *usage        `json:"usage,omitempty"`
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float32           `json:"token_logprobs"`
	TopLogprobs   []map[string]float32 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   *usage             `json:"usage,omitempty"`
	Timings *timings           `json:"timings,omitempty"`
}

// reasoningBudget is the engine's budget for a chat request on m: the
// request's reasoning_budget_tokens, else the server's; nil when unlimited
// or the template has no reasoning block.
func (s *Server) reasoningBudget(m *Model, req *chatRequest) (*engine.ReasoningBudget, *apiError) {
	n := s.cfg.ReasoningBudget
	if req.ReasoningBudget != nil {
		if *req.ReasoningBudget < -1 || *req.ReasoningBudget > 1<<20 {
			return nil, badRequest("reasoning_budget_tokens", "reasoning_budget_tokens must be -1 (unlimited) or 0 to %d", 1<<20)
		}
		n = req.ReasoningBudget
	}
	if n == nil || *n < 0 || m.Chat == nil {
		return nil, nil
	}
	start, end := m.Chat.ThinkMarkers()
	if start == "" || end == "" {
		return nil, nil
	}
	v := m.Engine.Vocab()
	return &engine.ReasoningBudget{Start: v.Encode(start, false, true), End: v.Encode(end, false, true), Tokens: *n}, nil
}
