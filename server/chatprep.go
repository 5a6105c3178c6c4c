package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
)

// One chat path for every protocol. A chat request of any protocol
// (OpenAI's chat completions and Responses, Anthropic's Messages,
// ollama's /api/chat and /api/generate) is first translated into the
// chatRequest it means; prepareChat then takes it, always in the same
// steps, to the engine request and to what its reply is parsed with:
//
//  1. the messages, converted and validated;
//  2. the generation's fields: sampling, grammar (response_format,
//     json_schema, grammar), speculation, LoRA adapters, the reasoning
//     budget, log-probabilities, then the protocol's own fields;
//  3. the tools and tool_choice (the tool plan);
//  4. the reasoning format and the template's variables
//     (chat_template_kwargs, reasoning_effort);
//  5. the tools laid into the prompt (a required call constrained by its
//     grammar), the chat template rendered and tokenized, then the text
//     the reply must continue (a call's marker, a prefill).
//
// What differs between protocols comes in as data (chatInput), and the
// reply is written in each protocol's shape by its own file.

// chatInput is what a protocol brings to prepareChat besides its
// chatRequest.
type chatInput struct {
	// msgs is the conversation when the protocol lays it out itself
	// (ollama's /api/generate: its system prompt and prompt); nil: the
	// request's messages.
	msgs []chat.Message
	// raw is a prompt used as given, its special tokens read as such,
	// without the chat template (ollama's raw: true); "": none.
	raw string
	// prefill is text the reply continues (Anthropic's final assistant
	// message): it ends the prompt.
	prefill string
	// count lays the prompt out without the generation's fields
	// (Anthropic's count_tokens).
	count bool
	// generation sets the protocol's own generation fields, after the
	// chat request's (nil: none).
	generation func(g *engine.Request) *apiError
	// param names a chat request's field as the protocol does, in
	// errors and as the grammar's field (nil: chat's own names).
	param func(string) string
}

// chatPrep is a chat request laid out for the engine.
type chatPrep struct {
	g         engine.Request
	tools     *toolPlan // nil without tools (or with tool_choice none)
	prompt    string    // the rendered prompt and the prefill: what the reply continues
	reasoning string    // the reasoning format (ReasoningAuto, …)
	gparam    string    // the field whose grammar constrains the reply, named in its errors
}

// prepareChat lays req out for m (see the steps above); an error is the
// request's, its field named as the protocol names it.
func (s *Server) prepareChat(m *Model, req *chatRequest, in chatInput) (*chatPrep, *apiError) {
	p, err := s.layOutChat(m, req, in)
	if err != nil {
		e, ok := err.(*apiError)
		if !ok {
			e = badRequest("", "%v", err)
		}
		if in.param != nil && e.Param != nil {
			name := in.param(*e.Param)
			e.Param = &name
		}
		return nil, e
	}
	if in.param != nil {
		p.gparam = in.param(p.gparam)
	}
	return p, nil
}

func (s *Server) layOutChat(m *Model, req *chatRequest, in chatInput) (*chatPrep, error) {
	p := &chatPrep{}
	// 1. The messages.
	msgs := in.msgs
	if msgs == nil && in.raw == "" {
		var err error
		if msgs, err = req.messages(); err != nil {
			return nil, err
		}
	}
	// 2. The generation's fields.
	if !in.count {
		if err := s.generation(m, req, &p.g); err != nil {
			return nil, err
		}
		if in.generation != nil {
			if e := in.generation(&p.g); e != nil {
				return nil, e
			}
		}
	}
	// 3. The tools.
	plan, err := req.toolPlan(m.Chat)
	if err != nil {
		return nil, err
	}
	// 4. The reasoning format and the template's variables.
	var aerr *apiError
	if p.reasoning, aerr = req.reasoningFormat(s.cfg); aerr != nil {
		return nil, aerr
	}
	extra, aerr := req.templateKwargs(s.cfg)
	if aerr != nil {
		return nil, aerr
	}
	// 5. The prompt.
	opts := &chat.Options{AddGenerationPrompt: true}
	if plan != nil {
		if msgs, opts, err = plan.apply(m.Chat, msgs, &p.g); err != nil {
			return nil, err
		}
	}
	var ids []int32
	if in.raw != "" {
		ids, p.prompt = m.Engine.Tokenize(in.raw, true, true), in.raw
	} else {
		opts.Extra = extra
		if s.cfg.Now != nil {
			opts.Now = s.cfg.Now()
		}
		if ids, p.prompt, err = m.Chat.Prompt(msgs, *opts); err != nil {
			return nil, badRequest("messages", "the chat template failed: %v", err)
		}
	}
	if plan != nil && plan.prefix != "" { // the call marker starts the reply
		ids = append(ids, m.Engine.Tokenize(plan.prefix, false, true)...)
	}
	if in.prefill != "" { // the reply continues the final assistant message
		ids = append(ids, m.Engine.Tokenize(in.prefill, false, false)...)
		p.prompt += in.prefill
	}
	p.g.Tokens, p.tools = ids, plan
	p.gparam = req.grammarFrom
	if plan != nil && plan.choice != "auto" {
		p.gparam = "tools"
	}
	return p, nil
}

// generation validates the chat request's generation fields into g.
func (s *Server) generation(m *Model, req *chatRequest, g *engine.Request) error {
	var err error
	if *g, err = req.request(m, req.Model); err != nil {
		return err
	}
	b, aerr := s.reasoningBudget(m, req)
	if aerr != nil {
		return aerr
	}
	g.ReasoningBudget = b
	if req.TopLogp != nil {
		if *req.TopLogp < 0 || *req.TopLogp > maxTopLogprobs {
			return badRequest("top_logprobs", "top_logprobs must be between 0 and %d", maxTopLogprobs)
		}
		if !req.Logprobs {
			return badRequest("top_logprobs", "top_logprobs requires logprobs: true")
		}
		g.TopLogprobs = *req.TopLogp
	}
	g.Logprobs = req.Logprobs
	return nil
}

// fitContext refuses a request whose prompt, with the tokens it asks
// for, does not fit m's context (OpenAI's context_length_exceeded, the
// fields named as the protocol names them: param, the prompt's name in
// the message, the maximum's field), and gives one that asks for no
// maximum the rest of the context.
func fitContext(m *Model, g *engine.Request, param, prompt, maxField string) *apiError {
	ctxLen := m.Engine.CtxLen()
	if len(g.Tokens) >= ctxLen || (g.MaxTokens > 0 && len(g.Tokens)+g.MaxTokens > ctxLen) {
		return withCode(badRequest(param, "this model's context is %d tokens; the %s has %d and %s asks for %d more", ctxLen, prompt, len(g.Tokens), maxField, g.MaxTokens), "context_length_exceeded")
	}
	if g.MaxTokens == 0 {
		g.MaxTokens = ctxLen - len(g.Tokens)
	}
	return nil
}

// submit starts g on m for a request of any protocol. The generation is
// cancelled when the client goes away, when the server closes, or by
// cancel, which the caller calls when it is done (and when a write to
// the client fails). The engine's refusals come back as errors with
// their statuses, for the caller to write in its protocol's shape; a
// full queue sets Retry-After.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, m *Model, g engine.Request, gparam string) ([]*engine.Stream, func(), *apiError) {
	ctx, cancel := s.requestContext(r)
	streams, err := m.Engine.Submit(ctx, g)
	if err != nil {
		cancel()
		if errors.Is(err, engine.ErrGrammarDeadEnd) || errors.Is(err, grammar.ErrLimit) {
			return nil, nil, badRequest(gparam, "%v", err)
		}
		return nil, nil, s.engineError(w, err, "")
	}
	return streams, cancel, nil
}

// request validates the sampling fields shared by chat and completions
// into an engine request for m: sampling and grammar, speculation, and
// the adapters (of the request's lora list, else those its model name,
// as requested, implies).
func (sp *sampling) request(m *Model, requested string) (engine.Request, error) {
	g, err := sp.params(m.Engine.Vocab().Len())
	if err != nil {
		return g, err
	}
	if g.Spec, err = sp.speculation(m); err != nil {
		return g, err
	}
	if g.LoRA, err = sp.adapters(m, requested); err != nil {
		return g, err
	}
	return g, nil
}

// streamWriter writes a streamed response (server-sent events or NDJSON
// lines), flushing each write. The first write that fails (the client
// left) cancels the request, and later writes are dropped.
type streamWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher // nil: not flushed (a whole response)
	cancel  func()
	failed  bool
}

// startStream sends the headers of a stream of contentType, unbuffered
// by proxies, and returns its writer.
func startStream(w http.ResponseWriter, contentType string, cancel func()) *streamWriter {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(200)
	return newStreamWriter(w, cancel)
}

func newStreamWriter(w http.ResponseWriter, cancel func()) *streamWriter {
	f, _ := w.(http.Flusher)
	return &streamWriter{w: w, flusher: f, cancel: cancel}
}

func (sw *streamWriter) printf(format string, args ...any) {
	if sw.failed {
		return
	}
	if _, err := fmt.Fprintf(sw.w, format, args...); err != nil {
		sw.failed = true
		sw.cancel()
		return
	}
	if sw.flusher != nil {
		sw.flusher.Flush()
	}
}

// data writes v as a server-sent event's data.
func (sw *streamWriter) data(v any) {
	b, _ := json.Marshal(v)
	sw.printf("data: %s\n\n", b)
}

// line writes v as an NDJSON line.
func (sw *streamWriter) line(v any) {
	b, _ := json.Marshal(v)
	sw.printf("%s\n", b)
}
