package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/hub"
	"github.com/loom-inference/loom/internal/quantize"
)

// ollama's API (github.com/ollama/ollama docs/api.md, v0.17), so an
// ollama client pointed at Loom works: POST /api/chat and /api/generate
// (NDJSON streams by default), GET /api/tags, POST /api/show, GET /api/ps,
// GET /api/version, HEAD / (the clients' heartbeat), POST /api/pull (from
// the Hugging Face Hub, as loom pull) and the legacy POST /api/embeddings;
// POST /api/embed is in embeddings.go. Requests go through the chat path
// of /v1/chat/completions (the same validation, chat template, tools,
// reasoning split and grammars); only the shapes differ. Errors are
// ollama's: {"error": "message"} with its statuses, and in a stream an
// error line.
//
// Not served: GET / stays Loom's chat page (ollama answers "Ollama is
// running" there; its clients probe HEAD /, which is served), and
// creating, copying, deleting and pushing models (501: Loom serves model
// files, it keeps no ollama model store).

// ollamaAPIVersion is the ollama release whose API this file follows,
// reported by GET /api/version: clients gate features on it.
const ollamaAPIVersion = "0.17.4"

func init() {
	h := func(f func(*Server, http.ResponseWriter, *http.Request)) func(*Server) http.HandlerFunc {
		return func(s *Server) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { f(s, w, r) }
		}
	}
	protocolRoutes = append(protocolRoutes,
		route{pattern: "HEAD /{$}", handler: h((*Server).ollamaHeartbeat), open: true},
		route{pattern: "GET /api/version", handler: h((*Server).ollamaVersion), open: true},
		route{pattern: "POST /api/chat", handler: h((*Server).ollamaChat)},
		route{pattern: "POST /api/generate", handler: h((*Server).ollamaGenerate)},
		route{pattern: "GET /api/tags", handler: h((*Server).ollamaTags)},
		route{pattern: "POST /api/show", handler: h((*Server).ollamaShow)},
		route{pattern: "GET /api/ps", handler: h((*Server).ollamaPS)},
		route{pattern: "POST /api/pull", handler: h((*Server).ollamaPull)},
		route{pattern: "POST /api/embeddings", handler: h((*Server).ollamaEmbeddings)},
	)
	for _, p := range []string{"POST /api/create", "POST /api/copy", "DELETE /api/delete", "POST /api/push", "POST /api/blobs/{digest}", "HEAD /api/blobs/{digest}"} {
		protocolRoutes = append(protocolRoutes, route{pattern: p, handler: h((*Server).ollamaUnsupported)})
	}
}

func (s *Server) ollamaHeartbeat(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(200)
}

func (s *Server) ollamaVersion(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]string{"version": ollamaAPIVersion})
}

func (s *Server) ollamaUnsupported(w http.ResponseWriter, r *http.Request) {
	what := strings.TrimPrefix(r.URL.Path, "/api/")
	if i := strings.IndexByte(what, '/'); i >= 0 {
		what = what[:i]
	}
	ollamaError(w, &apiError{status: http.StatusNotImplemented, Msg: fmt.Sprintf("%s %s is not supported by Loom: it serves model files given to loom serve and keeps no ollama model store (/api/%s)", r.Method, r.URL.Path, what)})
}

// ollamaModel finds the model a request names, as ollama names them: a
// name without a tag is name:latest, and names match in any case.
func (s *Server) ollamaModel(r *http.Request, name string) (*Model, *apiError) {
	m, err := s.modelFor(r, name) // leased to r (loaded on demand)
	if err == nil {
		return m, nil
	}
	if name == "" {
		return nil, &apiError{status: 400, Msg: "model is required"}
	}
	base, _ := strings.CutSuffix(name, ":latest")
	for _, c := range s.catalog() {
		if strings.EqualFold(c.Name, name) || strings.EqualFold(c.Name, base) {
			return s.modelFor(r, c.Name)
		}
	}
	if err.status == 404 {
		return nil, &apiError{status: 404, Msg: fmt.Sprintf("model '%s' not found", name)}
	}
	return nil, err
}

// ollamaName is a model's name as ollama lists it (name:tag).
func ollamaName(m *Model) string {
	if strings.Contains(m.Name, ":") {
		return m.Name
	}
	return m.Name + ":latest"
}

// ---------------------------------------------------------------------------
// POST /api/chat and /api/generate

// ollamaBase holds what chat and generate requests share.
type ollamaBase struct {
	Model   string          `json:"model"`
	Format  json.RawMessage `json:"format"`  // "json" or a JSON Schema
	Options json.RawMessage `json:"options"` // the Modelfile parameters (ollamaOptions)
	Stream  *bool           `json:"stream"`  // default true
	Think   json.RawMessage `json:"think"`   // true, false, "low", "medium" or "high"
	// KeepAlive is how long the model stays loaded after the request
	// (ollama's: a duration or seconds; 0 unloads it when idle, negative
	// keeps it): the server's on-demand registry applies it (Server.touch).
	KeepAlive   json.RawMessage `json:"keep_alive"`
	Logprobs    bool            `json:"logprobs"`
	TopLogprobs int             `json:"top_logprobs"`
	// Truncate and Shift are ollama's answers to a conversation longer
	// than the context (cut its history, shift the cache): Loom refuses
	// such a prompt (400) and ends generation at the context ("length").
	Truncate *bool `json:"truncate"`
	Shift    *bool `json:"shift"`
}

type ollamaChatRequest struct {
	ollamaBase
	Messages []ollamaInMessage `json:"messages"`
	Tools    json.RawMessage   `json:"tools"` // OpenAI's function tools, as /v1/chat/completions takes them
}

type ollamaGenerateRequest struct {
	ollamaBase
	Prompt   string            `json:"prompt"`
	Suffix   string            `json:"suffix"`
	System   string            `json:"system"`
	Template string            `json:"template"`
	Raw      bool              `json:"raw"`
	Context  []int             `json:"context"`
	Images   []json.RawMessage `json:"images"`
}

type ollamaInMessage struct {
	Role       string            `json:"role"`
	Content    string            `json:"content"`
	Thinking   string            `json:"thinking"`
	Images     []json.RawMessage `json:"images"`
	ToolCalls  []ollamaToolCall  `json:"tool_calls"`
	ToolName   string            `json:"tool_name"`
	ToolCallID string            `json:"tool_call_id"`
}

type ollamaToolCall struct {
	ID       string `json:"id,omitempty"`
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

// ollamaMetrics end a response (nanoseconds; load_duration is 0: the
// model was loaded). prompt_eval_count is the prompt's tokens, cached or
// not (docs/api.md: "number of tokens in the prompt").
type ollamaMetrics struct {
	TotalDuration      int64 `json:"total_duration"`
	LoadDuration       int64 `json:"load_duration"`
	PromptEvalCount    int   `json:"prompt_eval_count"`
	PromptEvalDuration int64 `json:"prompt_eval_duration"`
	EvalCount          int   `json:"eval_count"`
	EvalDuration       int64 `json:"eval_duration"`
}

type ollamaChatResponse struct {
	Model      string         `json:"model"`
	CreatedAt  time.Time      `json:"created_at"`
	Message    ollamaMessage  `json:"message"`
	Done       bool           `json:"done"`
	DoneReason string         `json:"done_reason,omitempty"`
	Logprobs   []tokenLogprob `json:"logprobs,omitempty"`
	*ollamaMetrics
}

type ollamaGenerateResponse struct {
	Model      string           `json:"model"`
	CreatedAt  time.Time        `json:"created_at"`
	Response   string           `json:"response"`
	Thinking   string           `json:"thinking,omitempty"`
	Done       bool             `json:"done"`
	DoneReason string           `json:"done_reason,omitempty"`
	ToolCalls  []ollamaToolCall `json:"tool_calls,omitempty"`
	Logprobs   []tokenLogprob   `json:"logprobs,omitempty"`
	*ollamaMetrics
}

// ollamaDefaults are ollama's sampling defaults (api.DefaultOptions),
// which its requests get unless their options say otherwise.
const (
	ollamaTemperature   = 0.8
	ollamaTopK          = 40
	ollamaTopP          = 0.9
	ollamaRepeatPenalty = 1.1
	ollamaRepeatLastN   = 64
)

// ollamaOptions are a request's options read into the chat path's
// sampling fields, and what they do not hold.
type ollamaOptions struct {
	sampling
	numPredict  int  // > 0: at most this many tokens (-1, -2 and 0: until the context is full)
	repeatLastN *int // tokens the penalties look at (0: none, -1: the context)
}

// parseOllamaOptions reads options as ollama's Options.FromMap does
// (integers may be sent as floats, unknown keys are ignored, a value of
// the wrong type is a 400 naming the option), over ollama's defaults.
// Loom extension: options.grammar, a GBNF grammar (llama.cpp's, as
// /v1/chat/completions' grammar field).
//
// Options ignored: num_ctx, num_batch, num_gpu, main_gpu, use_mmap,
// num_thread and numa are load-time settings in ollama; in Loom the model
// was loaded by loom serve (--ctx-size and --threads), so they are
// ignored whatever their value: a num_ctx beyond the loaded context does
// not widen it (a prompt that does not fit is refused with the context's
// size), nor does a smaller one narrow it. num_keep (what ollama's
// context shift keeps) has nothing to act on; typical_p and
// penalize_newline have no Loom sampler.
func parseOllamaOptions(raw json.RawMessage) (*ollamaOptions, *apiError) {
	o := &ollamaOptions{}
	sp := &o.sampling
	temp, topK, topP, rep := float64(ollamaTemperature), ollamaTopK, float64(ollamaTopP), float64(ollamaRepeatPenalty)
	sp.Temperature, sp.TopK, sp.TopP, sp.RepeatPenalty = &temp, &topK, &topP, &rep
	if len(raw) == 0 || string(raw) == "null" {
		return o, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, badRequest("options", "options must be an object")
	}
	num := func(k string) (float64, bool, *apiError) {
		v, ok := m[k]
		if !ok || string(v) == "null" {
			return 0, false, nil
		}
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return 0, false, badRequest("options", "option %q must be of type number", k)
		}
		return f, true, nil
	}
	integer := func(k string) (int, bool, *apiError) {
		f, ok, err := num(k)
		if err != nil {
			return 0, false, badRequest("options", "option %q must be of type integer", k)
		}
		if ok && (f > math.MaxInt32 || f < math.MinInt32) {
			return 0, false, badRequest("options", "option %q is out of range", k)
		}
		return int(f), ok, nil
	}
	for _, k := range []string{"temperature", "top_p", "min_p", "repeat_penalty", "presence_penalty", "frequency_penalty"} {
		f, ok, err := num(k)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		v := f
		switch k {
		case "temperature":
			sp.Temperature = &v
		case "top_p":
			if v == 0 { // ollama's 0 is "unset": all tokens
				v = 1
			}
			sp.TopP = &v
		case "min_p":
			sp.MinP = &v
		case "repeat_penalty":
			if v == 0 { // as ollama: 0 is "unset", no penalty
				v = 1
			}
			sp.RepeatPenalty = &v
		case "presence_penalty":
			sp.PresencePenalty = &v
		case "frequency_penalty":
			sp.FrequencyPenalty = &v
		}
	}
	if k, ok, err := integer("top_k"); err != nil {
		return nil, err
	} else if ok {
		k = max(k, 0) // ollama's 0 or less: all tokens
		sp.TopK = &k
	}
	if seed, ok, err := integer("seed"); err != nil {
		return nil, err
	} else if ok && seed >= 0 { // -1 (ollama's default): a random seed
		s := int64(seed)
		sp.Seed = &s
	}
	if n, ok, err := integer("num_predict"); err != nil {
		return nil, err
	} else if ok {
		o.numPredict = n
	}
	if n, ok, err := integer("repeat_last_n"); err != nil {
		return nil, err
	} else if ok {
		o.repeatLastN = &n
	}
	for _, k := range []string{"num_keep", "num_ctx", "num_batch", "num_gpu", "main_gpu", "num_thread"} {
		if _, _, err := integer(k); err != nil {
			return nil, err
		}
	}
	if v, ok := m["stop"]; ok && string(v) != "null" {
		var list []string
		var one string
		switch {
		case json.Unmarshal(v, &list) == nil:
		case json.Unmarshal(v, &one) == nil:
		default:
			return nil, badRequest("options", "option \"stop\" must be of type array")
		}
		sp.Stop = v
	}
	if v, ok := m["grammar"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &sp.Grammar); err != nil {
			return nil, badRequest("options", "option \"grammar\" must be of type string")
		}
	}
	return o, nil
}

// thinkMode is a request's think: unset, off, on, or a level.
type thinkMode struct {
	set, on bool
	level   string // "low", "medium", "high"; "" for a bool
}

func parseThink(raw json.RawMessage) (thinkMode, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return thinkMode{}, nil
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return thinkMode{set: true, on: b}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "high" && s != "medium" && s != "low" {
			return thinkMode{}, badRequest("think", "invalid think value: %q (must be \"high\", \"medium\", \"low\", true, or false)", s)
		}
		return thinkMode{set: true, on: true, level: s}, nil
	}
	return thinkMode{}, badRequest("think", "think must be a boolean or string (\"high\", \"medium\", \"low\", true, or false)")
}

// parseKeepAlive reads keep_alive as ollama does (api.Duration): a
// number of seconds or a duration string, negative for ever; nil when
// absent.
func parseKeepAlive(raw json.RawMessage) (*time.Duration, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var d time.Duration
	var secs float64
	var text string
	switch {
	case json.Unmarshal(raw, &secs) == nil:
		d = time.Duration(secs * float64(time.Second))
	case json.Unmarshal(raw, &text) == nil:
		var err error
		if d, err = time.ParseDuration(text); err != nil {
			return nil, badRequest("keep_alive", "keep_alive: %v", err)
		}
	default:
		return nil, badRequest("keep_alive", "keep_alive must be a duration (\"5m\") or a number of seconds")
	}
	if d < 0 {
		d = time.Duration(math.MaxInt64)
	}
	return &d, nil
}

// ollamaJob is a generation request of /api/chat or /api/generate and
// how its reply is returned.
type ollamaJob struct {
	m       *Model
	model   string // the model as the request named it (echoed, as ollama does)
	opts    *ollamaOptions
	g       engine.Request
	chat    bool // /api/chat's shape, else /api/generate's
	stream  bool
	think   bool // the reasoning is returned (message.thinking, thinking); otherwise dropped
	split   bool // the reasoning is split from the content (false: the server's --reasoning-format is none)
	parse   chat.ReplyOptions
	tools   *toolPlan
	gparam  string // the field whose grammar constrains the reply
	start   time.Time
	logprob bool
	topLP   int
}

// ollamaOpen decodes a chat or generate request into v (whose shared
// part is b), finds its model and reads the shared part into the chat
// path's request (sampling, format, think) and the job; on failure it
// has written the error.
func (s *Server) ollamaOpen(w http.ResponseWriter, r *http.Request, v any, b *ollamaBase, endpoint string) (*ollamaJob, *chatRequest, bool) {
	start := time.Now()
	fail := func(e *apiError) (*ollamaJob, *chatRequest, bool) {
		ollamaError(w, e)
		return nil, nil, false
	}
	if e := s.ollamaDecode(w, r, v); e != nil {
		return fail(e)
	}
	ka, e := parseKeepAlive(b.KeepAlive)
	if e != nil {
		return fail(e)
	}
	m, e := s.ollamaModel(r, b.Model)
	if e != nil {
		return fail(e)
	}
	if ka != nil {
		s.touch(m, *ka)
	}
	if modelKind(m.Engine) != "generate" {
		return fail(badRequest("model", "%q does not support %s", b.Model, endpoint))
	}
	if b.TopLogprobs < 0 || b.TopLogprobs > maxTopLogprobs {
		return fail(badRequest("top_logprobs", "top_logprobs must be between 0 and %d", maxTopLogprobs))
	}
	think, e := parseThink(b.Think)
	if e != nil {
		return fail(e)
	}
	thinks := m.Chat.ReasoningFormat() != chat.ReasoningNone
	if think.on && !thinks {
		return fail(badRequest("think", "%q does not support thinking", b.Model))
	}
	if !think.set && thinks { // ollama thinks by default when the model can
		think.on = true
	}
	opts, e := parseOllamaOptions(b.Options)
	if e != nil {
		return fail(e)
	}
	cr := &chatRequest{Model: m.Name, sampling: opts.sampling}
	switch f := strings.TrimSpace(string(b.Format)); {
	case f == "" || f == "null" || f == `""`:
	case f == `"json"`:
		cr.ResponseFormat = json.RawMessage(`{"type":"json_object"}`)
	case strings.HasPrefix(f, "{"):
		cr.ResponseFormat, _ = json.Marshal(map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "format", "schema": json.RawMessage(f), "strict": false}})
	default:
		return fail(badRequest("format", "invalid format: %s; expected \"json\" or a valid JSON Schema", f))
	}
	if len(cr.ResponseFormat) > 0 && cr.Grammar != "" {
		return fail(badRequest("format", "give one of format and options.grammar"))
	}
	// think reaches the template as chat_template_kwargs' enable_thinking
	// and reasoning_effort do (the server's own kwargs first); unset, the
	// template's default applies.
	switch {
	case think.set && !think.on:
		none := "none"
		cr.ReasoningEffort = &none
	case think.set:
		cr.ChatTemplateKwargs = json.RawMessage(`{"enable_thinking":true}`)
		if think.level != "" {
			cr.ReasoningEffort = &think.level
		}
	}
	j := &ollamaJob{m: m, model: cmpOr(b.Model, m.Name), opts: opts, chat: endpoint == "chat", stream: b.Stream == nil || *b.Stream,
		think: think.on, start: start, logprob: b.Logprobs, topLP: b.TopLogprobs}
	return j, cr, true
}

// generation sets the engine request's fields of ollama's own:
// num_predict, repeat_last_n (ollama's default 64), logprobs.
func (j *ollamaJob) generation(g *engine.Request) *apiError {
	if j.opts.numPredict > 0 {
		g.MaxTokens = j.opts.numPredict
	}
	if n := j.opts.repeatLastN; n != nil {
		switch {
		case *n == 0: // ollama: the penalties look at nothing
			g.Sample.RepeatPenalty, g.Sample.FreqPenalty, g.Sample.PresPenalty = 1, 0, 0
		case *n < 0:
			g.Sample.PenaltyLastN = j.m.Engine.CtxLen()
		default:
			g.Sample.PenaltyLastN = *n
		}
	} else {
		g.Sample.PenaltyLastN = ollamaRepeatLastN
	}
	if j.logprob {
		g.Logprobs, g.TopLogprobs = true, j.topLP
	}
	return nil
}

// ollamaField names a chat request's field as ollama does.
func ollamaField(p string) string {
	switch p {
	case "", "response_format", "json_schema":
		return "format"
	case "grammar":
		return "options.grammar"
	}
	return p
}

// ollamaDecode decodes a request body as decode does, naming a field of
// the shared part by its JSON name alone.
func (s *Server) ollamaDecode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	e := s.decode(w, r, v)
	if e != nil {
		e.Msg = strings.ReplaceAll(e.Msg, "ollamaBase.", "")
		if e.Param != nil {
			p := strings.TrimPrefix(*e.Param, "ollamaBase.")
			e.Param = &p
		}
	}
	return e
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	var req ollamaChatRequest
	j, cr, ok := s.ollamaOpen(w, r, &req, &req.ollamaBase, "chat")
	if !ok {
		return
	}
	if len(req.Messages) == 0 { // ollama: an empty conversation loads the model
		writeJSON(w, 200, ollamaChatResponse{Model: j.model, CreatedAt: time.Now().UTC(),
			Message: ollamaMessage{Role: "assistant"}, Done: true, DoneReason: "load"})
		return
	}
	for i, msg := range req.Messages {
		if len(msg.Images) > 0 {
			ollamaError(w, badRequest(fmt.Sprintf("messages[%d].images", i), "images are not supported: model %q reads text only (Loom serves no vision models)", j.model))
			return
		}
		content, _ := json.Marshal(msg.Content)
		cm := chatMessage{Role: strings.ToLower(msg.Role), Content: content, Name: msg.ToolName, ToolCallID: msg.ToolCallID, ReasoningContent: msg.Thinking}
		if len(msg.ToolCalls) > 0 {
			cm.ToolCalls = openAIToolCalls(msg.ToolCalls)
		}
		cr.Messages = append(cr.Messages, cm)
	}
	cr.Tools = req.Tools // tool_choice is auto (ollama has none): nothing is forced
	s.ollamaRun(w, r, j, cr, chatInput{})
}

// openAIToolCalls is an assistant turn's ollama tool calls as the chat
// path takes them (OpenAI's shape; the arguments stay an object, in
// their order).
func openAIToolCalls(calls []ollamaToolCall) json.RawMessage {
	type fn struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id,omitempty"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	out := make([]call, len(calls))
	for i, c := range calls {
		args := c.Function.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		out[i] = call{ID: c.ID, Type: "function", Function: fn{Name: c.Function.Name, Arguments: args}}
	}
	b, _ := json.Marshal(out)
	return b
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	var req ollamaGenerateRequest
	j, cr, ok := s.ollamaOpen(w, r, &req, &req.ollamaBase, "generate")
	if !ok {
		return
	}
	switch {
	case len(req.Images) > 0:
		ollamaError(w, badRequest("images", "images are not supported: model %q reads text only (Loom serves no vision models)", j.model))
		return
	case req.Template != "":
		ollamaError(w, badRequest("template", "custom templates are not supported by Loom: the model's chat template lays the prompt out (loom serve --chat-template), or send raw: true with the prompt laid out"))
		return
	case len(req.Context) > 0:
		// The deprecated context (the token ids of an earlier exchange,
		// which Loom's responses do not return) is refused; empty is
		// accepted.
		ollamaError(w, badRequest("context", "context is deprecated and not supported by Loom: send the conversation to /api/chat"))
		return
	case req.Suffix != "":
		ollamaError(w, badRequest("suffix", "suffix (fill-in-the-middle) is not supported by Loom"))
		return
	case req.Raw && req.System != "":
		ollamaError(w, badRequest("raw", "raw mode does not support template, system, or context"))
		return
	}
	if req.Prompt == "" { // ollama: an empty prompt loads the model
		writeJSON(w, 200, ollamaGenerateResponse{Model: j.model, CreatedAt: time.Now().UTC(), Done: true, DoneReason: "load"})
		return
	}
	if req.Raw { // the prompt as given, its special tokens read as such
		s.ollamaRun(w, r, j, cr, chatInput{raw: req.Prompt})
		return
	}
	var msgs []chat.Message
	if req.System != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: req.System})
	}
	msgs = append(msgs, chat.Message{Role: "user", Content: req.Prompt})
	s.ollamaRun(w, r, j, cr, chatInput{msgs: msgs})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ollamaRun lays the job's chat request out through the chat path
// (in: what /api/generate lays out itself), submits it and writes its
// reply: an NDJSON line per token that releases text, reasoning or calls,
// then a last line with done, done_reason and the metrics; or, not
// streamed, the last line holding the whole reply. A failed write (the
// client left) cancels the request; a failure after the first line is an
// {"error": …} line.
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, j *ollamaJob, cr *chatRequest, in chatInput) {
	in.generation, in.param = j.generation, ollamaField
	prep, e := s.prepareChat(j.m, cr, in)
	if e != nil {
		ollamaError(w, e)
		return
	}
	j.g, j.tools, j.gparam, j.split = prep.g, prep.tools, prep.gparam, prep.reasoning != ReasoningNone
	j.parse.Prompt = prep.prompt
	m, g := j.m, j.g
	ctxLen := m.Engine.CtxLen()
	if len(g.Tokens) >= ctxLen {
		param := "prompt"
		if j.chat {
			param = "messages"
		}
		ollamaError(w, badRequest(param, "the prompt has %d tokens, which does not fit model %q's context of %d tokens", len(g.Tokens), j.model, ctxLen))
		return
	}
	// num_predict beyond the context ends at the context ("length"), as
	// ollama's without its context shift.
	if g.MaxTokens == 0 || len(g.Tokens)+g.MaxTokens > ctxLen {
		g.MaxTokens = ctxLen - len(g.Tokens)
	}
	streams, cancel, e := s.submit(w, r, m, g, j.gparam)
	if e != nil {
		ollamaError(w, e)
		return
	}
	defer cancel()
	st := streams[0]
	defer func() { s.metrics.observe(m.Name, st.Result(), j.start) }()
	if j.tools != nil {
		j.parse.Tools, j.parse.Prefix = j.tools.tools, j.tools.prefix
	}
	j.parse.Reasoning = j.split
	p := m.Chat.NewReplyParser(j.parse)
	format := chat.ToolsGeneric
	if j.tools != nil {
		format = j.tools.format
	}
	ncalls := 0
	calls := func(cs []chat.ToolCall) []ollamaToolCall {
		var out []ollamaToolCall
		for _, c := range cs {
			var tc ollamaToolCall
			tc.ID = callID(format)
			tc.Function.Index, tc.Function.Name = ncalls, c.Name
			tc.Function.Arguments = json.RawMessage(c.Arguments)
			if !json.Valid(tc.Function.Arguments) || !strings.HasPrefix(strings.TrimSpace(c.Arguments), "{") {
				tc.Function.Arguments, _ = json.Marshal(map[string]string{"value": c.Arguments})
			}
			out = append(out, tc)
			ncalls++
		}
		return out
	}
	// line is one response object of the request's shape.
	line := func(d chat.Delta, lps []tokenLogprob) any {
		reasoning := d.Reasoning
		if !j.think {
			reasoning = ""
		}
		if j.chat {
			return &ollamaChatResponse{Model: j.model, CreatedAt: time.Now().UTC(), Logprobs: lps,
				Message: ollamaMessage{Role: "assistant", Content: d.Content, Thinking: reasoning, ToolCalls: calls(d.Calls)}}
		}
		return &ollamaGenerateResponse{Model: j.model, CreatedAt: time.Now().UTC(), Response: d.Content, Thinking: reasoning,
			ToolCalls: calls(d.Calls), Logprobs: lps}
	}
	var sw *streamWriter
	if j.stream {
		sw = startStream(w, "application/x-ndjson", cancel)
	} else {
		sw = &streamWriter{w: w, cancel: cancel} // one line, the whole reply
	}
	send := sw.line
	var whole chat.Delta
	var lps []tokenLogprob
	for ev := range st.Events() {
		d := p.Add(p.EventText(ev))
		var lp []tokenLogprob
		if j.logprob && ev.ID >= 0 {
			lp = []tokenLogprob{s.logprob(m.Engine, ev)}
		}
		if !j.think {
			d.Reasoning = ""
		}
		if !j.stream {
			whole.Reasoning += d.Reasoning
			whole.Content += d.Content
			whole.Calls = append(whole.Calls, d.Calls...)
			lps = append(lps, lp...)
			continue
		}
		if !d.Empty() || lp != nil {
			send(line(d, lp))
		}
	}
	res := st.Result()
	if e := resultError(res, j.gparam); e != nil {
		if j.stream {
			send(map[string]string{"error": e.Msg})
		} else {
			ollamaError(w, e)
		}
		return
	}
	d := p.Finish()
	if !j.think {
		d.Reasoning = ""
	}
	met := &ollamaMetrics{PromptEvalCount: len(g.Tokens), PromptEvalDuration: res.Prefill.Nanoseconds(),
		EvalCount: res.Generated, EvalDuration: res.Decode.Nanoseconds()}
	if j.stream {
		if !d.Empty() {
			send(line(d, nil))
		}
		met.TotalDuration = time.Since(j.start).Nanoseconds()
		last := line(chat.Delta{}, nil)
		setDone(last, finishReason(res), met)
		send(last)
		return
	}
	whole.Reasoning += d.Reasoning
	whole.Content += d.Content
	whole.Calls = append(whole.Calls, d.Calls...)
	if len(whole.Calls) > 0 {
		whole.Content = strings.TrimSpace(whole.Content)
	}
	last := line(whole, lps)
	met.TotalDuration = time.Since(j.start).Nanoseconds()
	setDone(last, finishReason(res), met)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(200)
	send(last)
}

func setDone(v any, reason string, met *ollamaMetrics) {
	switch r := v.(type) {
	case *ollamaChatResponse:
		r.Done, r.DoneReason, r.ollamaMetrics = true, reason, met
	case *ollamaGenerateResponse:
		r.Done, r.DoneReason, r.ollamaMetrics = true, reason, met
	}
}

// ---------------------------------------------------------------------------
// Models: GET /api/tags, POST /api/show, GET /api/ps

type ollamaDetails struct {
	ParentModel       string   `json:"parent_model"`
	Format            string   `json:"format"`
	Family            string   `json:"family"`
	Families          []string `json:"families"`
	ParameterSize     string   `json:"parameter_size"`
	QuantizationLevel string   `json:"quantization_level"`
}

// ollamaFacts are what the model listings say of a model file.
type ollamaFacts struct {
	size     int64
	modified time.Time
	digest   string // an identity of the file (its path, size and time), not a hash of its contents
	params   uint64
	details  ollamaDetails
}

// factsCache keeps each file's facts (keyed by path, size and time).
var factsCache sync.Map

func modelFacts(m *Model) ollamaFacts {
	e := m.Engine
	path := e.Path()
	var f ollamaFacts
	st, err := os.Stat(path)
	if err == nil {
		f.modified = st.ModTime().UTC()
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", path, stSize(st), f.modified.UnixNano())
	if v, ok := factsCache.Load(key); ok {
		return v.(ollamaFacts)
	}
	sum := sha256.Sum256([]byte(key))
	f.digest = hex.EncodeToString(sum[:])
	info := e.Info()
	f.details = ollamaDetails{Format: "gguf", Family: info.Arch, Families: []string{info.Arch}}
	var tensorBytes uint64
	types := map[string]uint64{}
	for _, t := range e.Tensors() {
		n := uint64(1)
		for _, d := range t.Dims {
			n *= d
		}
		f.params += n
		tensorBytes += t.Bytes
		if len(t.Dims) >= 2 {
			types[t.Type] += t.Bytes
		}
	}
	f.details.ParameterSize = humanNumber(f.params)
	f.size = int64(tensorBytes)
	switch {
	case err == nil && st.IsDir():
		f.details.Format = "safetensors"
	case err == nil && strings.EqualFold(filepath.Ext(path), ".gguf"):
		f.size = st.Size()
		if gf, err := gguf.Open(path); err == nil {
			if ft, err := gf.Uint("general.file_type"); err == nil {
				f.details.QuantizationLevel = quantize.FType(ft).String()
			}
			gf.Close()
		}
	case err == nil:
		f.details.Format = "llama2.c"
		f.size = st.Size()
	}
	if f.details.QuantizationLevel == "" || strings.HasPrefix(f.details.QuantizationLevel, "FType(") {
		// The weights' most common type (by bytes).
		best := ""
		for t, n := range types {
			if best == "" || n > types[best] || n == types[best] && t < best {
				best = t
			}
		}
		f.details.QuantizationLevel = strings.ToUpper(best)
	}
	factsCache.Store(key, f)
	return f
}

func stSize(st os.FileInfo) int64 {
	if st == nil {
		return 0
	}
	return st.Size()
}

// humanNumber is ollama's format.HumanNumber: 8.0B, 494.03M, 656K.
func humanNumber(n uint64) string {
	f := float64(n)
	switch {
	case n >= 1e9:
		if f/1e9 == math.Floor(f/1e9) {
			return fmt.Sprintf("%.0fB", f/1e9)
		}
		return fmt.Sprintf("%.1fB", f/1e9)
	case n >= 1e6:
		if f/1e6 == math.Floor(f/1e6) {
			return fmt.Sprintf("%.0fM", f/1e6)
		}
		return fmt.Sprintf("%.2fM", f/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.0fK", f/1e3)
	}
	return strconv.FormatUint(n, 10)
}

type ollamaListModel struct {
	Name       string        `json:"name"`
	Model      string        `json:"model"`
	ModifiedAt time.Time     `json:"modified_at"`
	Size       int64         `json:"size"`
	Digest     string        `json:"digest"`
	Details    ollamaDetails `json:"details"`
}

// ollamaTags lists the models the server serves, loaded or not (ollama
// lists the models it has); an unloaded one's details are what its file
// name and size say until it is loaded.
func (s *Server) ollamaTags(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Models []ollamaListModel `json:"models"`
	}{Models: []ollamaListModel{}}
	for _, mi := range s.catalog() {
		if mi.Model != nil {
			m := mi.Model
			f := modelFacts(m)
			out.Models = append(out.Models, ollamaListModel{Name: ollamaName(m), Model: ollamaName(m), ModifiedAt: f.modified,
				Size: f.size, Digest: f.digest, Details: f.details})
			continue
		}
		name := mi.Name + ":latest"
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", mi.Path, mi.Size, mi.Modified.UnixNano())))
		out.Models = append(out.Models, ollamaListModel{Name: name, Model: name, ModifiedAt: mi.Modified.UTC(), Size: mi.Size,
			Digest: hex.EncodeToString(sum[:]), Details: ollamaDetails{Format: "gguf"}})
	}
	writeJSON(w, 200, out)
}

type ollamaProcessModel struct {
	Name          string        `json:"name"`
	Model         string        `json:"model"`
	Size          int64         `json:"size"`
	Digest        string        `json:"digest"`
	Details       ollamaDetails `json:"details"`
	ExpiresAt     time.Time     `json:"expires_at"`
	SizeVRAM      int64         `json:"size_vram"` // 0: Loom runs on the CPU
	ContextLength int           `json:"context_length"`
}

// ollamaPS lists the loaded models, most recently used first, with when
// they unload (as far as ollama's keep_alive -1 puts it when they stay).
func (s *Server) ollamaPS(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Models []ollamaProcessModel `json:"models"`
	}{Models: []ollamaProcessModel{}}
	forever := time.Now().Add(time.Duration(math.MaxInt64)).UTC()
	for _, mi := range s.loadedModels() {
		m := mi.Model
		if m == nil {
			continue
		}
		f := modelFacts(m)
		exp := mi.ExpiresAt.UTC()
		if mi.ExpiresAt.IsZero() {
			exp = forever
		}
		out.Models = append(out.Models, ollamaProcessModel{Name: ollamaName(m), Model: ollamaName(m), Size: mi.MemoryBytes(), Digest: f.digest,
			Details: f.details, ExpiresAt: exp, ContextLength: m.Engine.CtxLen()})
	}
	writeJSON(w, 200, out)
}

type ollamaShowRequest struct {
	Model   string `json:"model"`
	Name    string `json:"name"` // deprecated: model
	Verbose bool   `json:"verbose"`
}

type ollamaShowResponse struct {
	Modelfile    string         `json:"modelfile"`
	Parameters   string         `json:"parameters"`
	Template     string         `json:"template"`
	Details      ollamaDetails  `json:"details"`
	ModelInfo    map[string]any `json:"model_info"`
	Capabilities []string       `json:"capabilities"`
	ModifiedAt   time.Time      `json:"modified_at"`
}

// ollamaShow describes a model: its GGUF metadata as model_info (arrays
// longer than 5 elements empty unless verbose, as ollama's), the keys
// ollama clients read (general.architecture, <arch>.context_length, …)
// filled from the loaded network when the file has none, its capabilities
// and its chat template (Jinja, not an ollama Go template).
func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req ollamaShowRequest
	if e := s.decode(w, r, &req); e != nil {
		ollamaError(w, e)
		return
	}
	name := cmpOr(req.Model, req.Name)
	if name == "" {
		ollamaError(w, &apiError{status: 400, Msg: "model is required"})
		return
	}
	m, e := s.ollamaModel(r, name)
	if e != nil {
		ollamaError(w, e)
		return
	}
	f := modelFacts(m)
	info := modelInfo(m, f, req.Verbose)
	params := fmt.Sprintf("%-30s %d", "num_ctx", m.Engine.CtxLen())
	mf := fmt.Sprintf("# Modelfile generated by Loom (the template is the model's Jinja chat template)\nFROM %s\nTEMPLATE \"\"\"%s\"\"\"\nPARAMETER num_ctx %d\n",
		m.Engine.Path(), m.Chat.Source, m.Engine.CtxLen())
	writeJSON(w, 200, ollamaShowResponse{Modelfile: mf, Parameters: params, Template: m.Chat.Source, Details: f.details,
		ModelInfo: info, Capabilities: ollamaCapabilities(m), ModifiedAt: f.modified})
}

// ollamaCapabilities are ollama's names for what a model does: every
// generation model takes tools (described in the system prompt when its
// template does not lay them out), thinking where the template knows
// reasoning markers.
func ollamaCapabilities(m *Model) []string {
	switch modelKind(m.Engine) {
	case "embed":
		return []string{"embedding"}
	case "rerank":
		return []string{"rerank"}
	}
	c := []string{"completion", "tools"}
	if m.Chat.ReasoningFormat() != chat.ReasoningNone {
		c = append(c, "thinking")
	}
	return c
}

func modelInfo(m *Model, f ollamaFacts, verbose bool) map[string]any {
	out := map[string]any{}
	if f.details.Format == "gguf" {
		if gf, err := gguf.Open(m.Engine.Path()); err == nil {
			for _, kv := range gf.KVs {
				out[kv.Key] = ggufJSON(kv.Value.V, verbose)
			}
			gf.Close()
		}
	}
	info := m.Engine.Info()
	arch := info.Arch
	if a, ok := out["general.architecture"].(string); ok && a != "" {
		arch = a
	}
	for k, v := range map[string]any{
		"general.architecture":                     arch,
		"general.parameter_count":                  f.params,
		arch + ".context_length":                   info.CtxLen,
		arch + ".embedding_length":                 info.Dim,
		arch + ".block_count":                      info.NLayers,
		arch + ".feed_forward_length":              info.HiddenDim,
		arch + ".attention.head_count":             info.NHeads,
		arch + ".attention.head_count_kv":          info.NKVHeads,
		arch + ".vocab_size":                       info.NVocab,
		arch + ".attention.layer_norm_rms_epsilon": finite(float64(info.Eps)),
	} {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// ggufJSON is a metadata value as JSON takes it: bytes as numbers,
// non-finite floats as null, long arrays empty unless verbose.
func ggufJSON(v any, verbose bool) any {
	switch x := v.(type) {
	case float32:
		return finite(float64(x))
	case float64:
		return finite(x)
	case gguf.Array:
		if !verbose && x.Len() > 5 {
			return []any{}
		}
		switch vals := x.Values.(type) {
		case []uint8:
			out := make([]int, len(vals))
			for i, b := range vals {
				out[i] = int(b)
			}
			return out
		case []float32:
			out := make([]any, len(vals))
			for i, f := range vals {
				out[i] = finite(float64(f))
			}
			return out
		case []float64:
			out := make([]any, len(vals))
			for i, f := range vals {
				out[i] = finite(f)
			}
			return out
		case []gguf.Array:
			out := make([]any, len(vals))
			for i, a := range vals {
				out[i] = ggufJSON(a, verbose)
			}
			return out
		}
		return x.Values
	}
	return v
}

func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

// ---------------------------------------------------------------------------
// POST /api/pull

type ollamaPullRequest struct {
	Model  string `json:"model"`
	Name   string `json:"name"` // deprecated: model
	Stream *bool  `json:"stream"`
}

type ollamaProgress struct {
	Status    string `json:"status"`
	Digest    string `json:"digest,omitempty"`
	Total     int64  `json:"total,omitempty"`
	Completed int64  `json:"completed,omitempty"`
}

// hubCacheDir is where loom pull puts models (hub.DefaultCacheDir).
func hubCacheDir() string { return hub.DefaultCacheDir() }

// ollamaPull downloads a GGUF from the Hugging Face Hub into loom pull's
// cache, as loom pull does (resumed, hash-checked): the model is
// OWNER/REPO[:QUANT] or OWNER/REPO/FILE.gguf, with or without ollama's
// hf.co/ prefix (ollama's library names are not on the Hub). Progress
// streams as ollama's: "pulling manifest", then per file "pulling FILE"
// with total and completed bytes, then "success". The pulled file is
// served once loom serve loads it (or its on-demand loading does).
func (s *Server) ollamaPull(w http.ResponseWriter, r *http.Request) {
	var req ollamaPullRequest
	if e := s.decode(w, r, &req); e != nil {
		ollamaError(w, e)
		return
	}
	name := cmpOr(req.Model, req.Name)
	if name == "" {
		ollamaError(w, &apiError{status: 400, Msg: "model is required"})
		return
	}
	spec := name
	for _, p := range []string{"hf.co/", "huggingface.co/", "https://huggingface.co/"} {
		spec = strings.TrimPrefix(spec, p)
	}
	spec = strings.TrimSuffix(spec, ":latest")
	sp, err := hub.ParseSpec(spec)
	if err != nil {
		ollamaError(w, badRequest("model", "pull %q: %v (Loom pulls GGUF files from the Hugging Face Hub: OWNER/REPO[:QUANT] or hf.co/OWNER/REPO[:QUANT]; ollama's library names are not available)", name, err))
		return
	}
	stream := req.Stream == nil || *req.Stream
	ctx, cancel := s.requestContext(r)
	defer cancel()
	c := hub.NewClient(hubCacheDir())
	sw := newStreamWriter(w, cancel)
	send := func(v any) {
		if stream {
			sw.line(v)
		}
	}
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(200)
	}
	send(ollamaProgress{Status: "pulling manifest"})
	var last time.Time
	lastFile := ""
	c.Progress = func(file string, done, total int64) {
		if now := time.Now(); file != lastFile || done == total || now.Sub(last) >= 200*time.Millisecond {
			last, lastFile = now, file
			send(ollamaProgress{Status: "pulling " + file, Digest: file, Total: total, Completed: done})
		}
	}
	paths, err := c.Pull(ctx, sp)
	if err != nil {
		msg := fmt.Sprintf("pull %s: %v", name, err)
		if ctx.Err() != nil {
			msg = fmt.Sprintf("pull %s: interrupted; the partial download is kept and the next pull resumes it", name)
		}
		if stream {
			send(map[string]string{"error": msg})
		} else {
			status := http.StatusInternalServerError
			if errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "not found") {
				status = http.StatusNotFound
			}
			ollamaError(w, &apiError{status: status, Msg: msg})
		}
		return
	}
	for _, p := range paths {
		send(ollamaProgress{Status: "verifying sha256 digest", Digest: filepath.Base(p)})
	}
	if stream {
		send(ollamaProgress{Status: "success"})
		return
	}
	writeJSON(w, 200, ollamaProgress{Status: "success"})
}

// ---------------------------------------------------------------------------
// POST /api/embeddings (ollama's legacy route)

type ollamaEmbeddingsRequest struct {
	Model     string          `json:"model"`
	Prompt    string          `json:"prompt"`
	KeepAlive json.RawMessage `json:"keep_alive"` // accepted and ignored, as in /api/chat
	Options   json.RawMessage `json:"options"`    // ignored
}

// ollamaEmbeddings is ollama's superseded POST /api/embeddings: one
// prompt's embedding as the model computes it (not normalized, unlike
// /api/embed), cut to the context when longer.
func (s *Server) ollamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollamaEmbeddingsRequest
	if e := s.decode(w, r, &req); e != nil {
		ollamaError(w, e)
		return
	}
	m, e := s.ollamaModel(r, req.Model)
	if e != nil {
		ollamaError(w, e)
		return
	}
	if e := embeddable(m, true); e != nil {
		ollamaError(w, e)
		return
	}
	if req.Prompt == "" {
		writeJSON(w, 200, map[string][]float64{"embedding": {}})
		return
	}
	in := []embedInput{m.Engine.EmbedTokens(req.Prompt)}
	embs, err := s.embed(r, m, in, engine.EmbedOptions{Norm: engine.NormNone, Truncate: true})
	if err != nil {
		ollamaError(w, s.engineError(w, err, "prompt"))
		return
	}
	vec := make([]float64, len(embs[0].Vector))
	for i, v := range embs[0].Vector {
		vec[i] = float64(v)
	}
	s.metrics.observeEmbed(m.Name, "embeddings", 1, embs[0].Tokens, start)
	writeJSON(w, 200, map[string][]float64{"embedding": vec})
}
