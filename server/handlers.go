package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/loom-inference/loom/chat"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	if err := generative(m); err != nil {
		writeError(w, err)
		return
	}
	msgs, err := req.messages()
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	g, err := req.params(m.Engine.Vocab().Len())
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if g.Spec, err = req.speculation(m); err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if g.LoRA, err = req.adapters(m, req.Model); err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if b, e := s.reasoningBudget(m, &req); e != nil {
		writeError(w, e)
		return
	} else {
		g.ReasoningBudget = b
	}
	if req.TopLogp != nil {
		if *req.TopLogp < 0 || *req.TopLogp > maxTopLogprobs {
			writeError(w, badRequest("top_logprobs", "top_logprobs must be between 0 and %d", maxTopLogprobs))
			return
		}
		if !req.Logprobs {
			writeError(w, badRequest("top_logprobs", "top_logprobs requires logprobs: true"))
			return
		}
		g.TopLogprobs = *req.TopLogp
	}
	g.Logprobs = req.Logprobs
	plan, err := req.toolPlan(m.Chat)
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	reasoning, aerr := req.reasoningFormat(s.cfg)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	extra, aerr := req.templateKwargs(s.cfg)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	opts := &chat.Options{AddGenerationPrompt: true}
	if plan != nil {
		if msgs, opts, err = plan.apply(m.Chat, msgs, &g); err != nil {
			writeError(w, err.(*apiError))
			return
		}
	}
	opts.Extra = extra
	ids, prompt, err := m.Chat.Prompt(msgs, *opts)
	if err != nil {
		writeError(w, badRequest("messages", "the chat template failed: %v", err))
		return
	}
	if plan != nil && plan.prefix != "" { // the call marker starts the reply
		ids = append(ids, m.Engine.Tokenize(plan.prefix, false, true)...)
	}
	g.Tokens = ids
	gparam := req.grammarFrom
	if plan != nil && plan.choice != "auto" {
		gparam = "tools"
	}
	s.run(w, r, m, g, runOpts{stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		chat: true, tools: plan, grammarParam: gparam, prompt: prompt, reasoning: reasoning})
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	if err := generative(m); err != nil {
		writeError(w, err)
		return
	}
	g, err := req.params(m.Engine.Vocab().Len())
	if err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if g.Spec, err = req.speculation(m); err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if g.LoRA, err = req.adapters(m, req.Model); err != nil {
		writeError(w, err.(*apiError))
		return
	}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > maxTopLogprobs {
			writeError(w, badRequest("logprobs", "logprobs must be between 0 and %d", maxTopLogprobs))
			return
		}
		g.Logprobs, g.TopLogprobs = true, *req.Logprobs
	}
	ids, text, aerr := promptTokens(m.Engine, req.Prompt)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	g.Tokens = ids
	echo := ""
	if req.Echo {
		echo = text
	}
	s.run(w, r, m, g, runOpts{stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		echo: echo, grammarParam: req.grammarFrom})
}

// promptTokens reads a completion prompt: a string, one token array, or a
// one-element array of either.
func promptTokens(e *engine.Engine, raw json.RawMessage) ([]int32, string, *apiError) {
	return promptTokensIn(e, raw, false)
}

// promptTokensIn reads a prompt, or (not yet nested) a one-element list of
// one: deeper nesting is refused without being decoded level by level.
func promptTokensIn(e *engine.Engine, raw json.RawMessage, nested bool) ([]int32, string, *apiError) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, "", badRequest("prompt", "prompt must not be empty")
		}
		return e.Tokenize(s, true, true), s, nil
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		for i, id := range ids {
			if id < 0 || int(id) >= e.Vocab().Len() {
				return nil, "", badRequest("prompt", "prompt[%d] = %d is outside the vocabulary (%d)", i, id, e.Vocab().Len())
			}
		}
		return ids, e.Vocab().Decode(ids), nil
	}
	var list []json.RawMessage
	if !nested && json.Unmarshal(raw, &list) == nil {
		if len(list) != 1 {
			return nil, "", badRequest("prompt", "one prompt per request (got %d): send several requests, they are batched", len(list))
		}
		return promptTokensIn(e, list[0], true)
	}
	return nil, "", badRequest("prompt", "prompt must be a string, an array of token ids, or a one-element array of either")
}

// runOpts are how a request is answered.
type runOpts struct {
	stream, includeUsage, chat bool
	echo                       string    // completions: the prompt, echoed
	tools                      *toolPlan // chat: nil without tools
	grammarParam               string    // the field whose grammar constrains the reply, named in its errors
	prompt                     string    // chat: the rendered prompt
	reasoning                  string    // chat: the reasoning format (ReasoningAuto, …)
}

// run submits g and writes the response (streamed or whole) in the chat or
// completion shape.
func (s *Server) run(w http.ResponseWriter, r *http.Request, m *Model, g engine.Request, o runOpts) {
	stream, includeUsage, isChat, echo, tools := o.stream, o.includeUsage, o.chat, o.echo, o.tools
	ctxLen := m.Engine.CtxLen()
	if len(g.Tokens) >= ctxLen || (g.MaxTokens > 0 && len(g.Tokens)+g.MaxTokens > ctxLen) {
		param := "messages"
		if !isChat {
			param = "prompt"
		}
		writeError(w, withCode(badRequest(param, "this model's context is %d tokens; the prompt has %d and max_tokens asks for %d more", ctxLen, len(g.Tokens), g.MaxTokens), "context_length_exceeded"))
		return
	}
	if g.MaxTokens == 0 {
		g.MaxTokens = ctxLen - len(g.Tokens)
	}
	// Cancelled when the client goes away, when a stream write fails, or
	// when the server closes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.stop, cancel)()
	start := time.Now()
	streams, err := m.Engine.Submit(ctx, g)
	switch {
	case errors.Is(err, engine.ErrClosed):
		writeError(w, &apiError{status: 503, Msg: "the server is shutting down", Type: "server_error"})
		return
	case errors.Is(err, engine.ErrOverloaded):
		w.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter.Seconds()+0.5)))
		writeError(w, withCode(&apiError{status: 429, Msg: "the server is overloaded: too many requests waiting; retry later", Type: "rate_limit_error"}, "overloaded"))
		return
	case errors.Is(err, engine.ErrGrammarDeadEnd), errors.Is(err, grammar.ErrLimit):
		writeError(w, badRequest(o.grammarParam, "%v", err))
		return
	case err != nil:
		writeError(w, badRequest("", "%v", err))
		return
	}
	id := newID(map[bool]string{true: "chatcmpl-", false: "cmpl-"}[isChat])
	created := time.Now().Unix()
	rp := &reply{m: m, streams: streams, id: id, created: created, chat: isChat, echo: echo, nPrompt: len(g.Tokens),
		logprobs: g.Logprobs || g.TopLogprobs > 0, includeUsage: includeUsage, tools: tools, grammarParam: o.grammarParam,
		prompt: o.prompt, reasoning: o.reasoning}
	if stream {
		s.stream(w, rp, cancel)
	} else {
		s.whole(w, rp)
	}
	for _, st := range streams {
		s.metrics.observe(m.Name, st.Result(), start)
	}
}

// resultError is the error of a generation that failed or was cancelled
// (nil otherwise). A grammar that no token can continue, or whose
// matching passes one of the grammar package's bounds, is the request's
// fault.
func resultError(res engine.Result, grammarParam string) *apiError {
	if res.FinishReason != engine.FinishError && res.FinishReason != engine.FinishCancelled {
		return nil
	}
	if errors.Is(res.Err, engine.ErrGrammarDeadEnd) || errors.Is(res.Err, grammar.ErrLimit) {
		return badRequest(grammarParam, "%v", res.Err)
	}
	msg := "the request was cancelled"
	if res.Err != nil {
		msg = res.Err.Error()
	}
	return &apiError{status: 500, Msg: msg, Type: "server_error"}
}

// finishReason is OpenAI's: "length" at max_tokens or the context,
// "stop" otherwise (an end-of-generation token, a stop string, a complete
// grammar); the caller makes it "tool_calls" when the reply held calls.
func finishReason(res engine.Result) string {
	if res.FinishReason == engine.FinishLength {
		return engine.FinishLength
	}
	return engine.FinishStop
}

func (s *Server) logprob(e *engine.Engine, ev engine.TokenEvent) tokenLogprob {
	lp := tokenLogprob{topLogprob: piece(e, ev.ID, ev.Logprob), TopLogprobs: []topLogprob{}}
	for _, t := range ev.Top {
		lp.TopLogprobs = append(lp.TopLogprobs, piece(e, t.ID, t.Logprob))
	}
	return lp
}

func piece(e *engine.Engine, id int32, lp float32) topLogprob {
	b := e.Vocab().Piece(id, true)
	bs := make([]int, len(b))
	for i, c := range b {
		bs[i] = int(c)
	}
	return topLogprob{Token: string(b), Logprob: lp, Bytes: bs}
}

func usageOf(prompt int, results []engine.Result) *usage {
	u := &usage{PromptTokens: prompt}
	for _, r := range results {
		u.CompletionTokens += r.Generated
	}
	if len(results) > 0 {
		u.PromptTokensDetails.CachedTokens = results[0].CachedTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// reply is what the response writers need.
type reply struct {
	m                      *Model
	streams                []*engine.Stream
	id                     string
	created                int64
	chat                   bool
	echo                   string
	nPrompt                int
	logprobs, includeUsage bool
	tools                  *toolPlan // nil: no tools (chat only)
	grammarParam           string
	prompt                 string // (chat) the rendered prompt, whose end may open the reasoning
	reasoning              string // (chat) the reasoning format
}

// parser starts parsing one choice's streamed reply (chat): its
// reasoning apart unless the format says otherwise (deepseek-legacy
// streams it in the content, as llama.cpp does), its tool calls among the
// request's, a forced call marker first.
func (rp *reply) parser() *chat.ReplyParser {
	extract := rp.reasoning != ReasoningNone && rp.reasoning != ReasoningDeepSeekLegacy
	return rp.m.Chat.NewReplyParser(rp.replyOptions(extract))
}

// whole collects every choice and writes one response.
func (s *Server) whole(w http.ResponseWriter, rp *reply) {
	m, streams, id, created, isChat, echo, nPrompt := rp.m, rp.streams, rp.id, rp.created, rp.chat, rp.echo, rp.nPrompt
	texts := make([]strings.Builder, len(streams))
	lps := make([][]engine.TokenEvent, len(streams))
	results := make([]engine.Result, len(streams))
	done := make(chan int, len(streams))
	for i, st := range streams {
		var p *chat.ReplyParser // only for EventText
		if isChat {
			p = rp.parser()
		}
		go func() {
			for ev := range st.Events() {
				if p != nil {
					texts[i].WriteString(p.EventText(ev))
				} else {
					texts[i].WriteString(ev.Text)
				}
				if ev.ID >= 0 {
					lps[i] = append(lps[i], ev)
				}
			}
			results[i] = st.Result()
			done <- i
		}()
	}
	for range streams {
		<-done
	}
	for _, res := range results {
		if e := resultError(res, rp.grammarParam); e != nil {
			writeError(w, e)
			return
		}
	}
	logprobs := rp.logprobs
	if isChat {
		resp := chatResponse{ID: id, Object: "chat.completion", Created: created, Model: m.Name, Usage: usageOf(nPrompt, results), Timings: timingsOf(results[0])}
		for i := range streams {
			c := chatChoice{Index: i, FinishReason: finishReason(results[i])}
			pr := rp.parseWhole(texts[i].String())
			c.Message.Role, c.Message.Content = "assistant", &pr.content
			if pr.reasoning != "" {
				c.Message.ReasoningContent = &pr.reasoning
			}
			if len(pr.calls) > 0 {
				c.Message.ToolCalls = toolCalls(rp.tools.format, pr.calls, 0, false)
				c.FinishReason = "tool_calls"
				if pr.content == "" {
					c.Message.Content = nil
				}
			}
			if logprobs {
				c.Logprobs = &chatLogprobs{Content: []tokenLogprob{}}
				for _, ev := range lps[i] {
					c.Logprobs.Content = append(c.Logprobs.Content, s.logprob(m.Engine, ev))
				}
			}
			resp.Choices = append(resp.Choices, c)
		}
		writeJSON(w, 200, resp)
		return
	}
	resp := completionResponse{ID: id, Object: "text_completion", Created: created, Model: m.Name, Usage: usageOf(nPrompt, results), Timings: timingsOf(results[0])}
	for i := range streams {
		fr := finishReason(results[i])
		c := completionChoice{Index: i, Text: echo + texts[i].String(), FinishReason: &fr}
		if logprobs {
			c.Logprobs = completionLP(m.Engine, lps[i], len(echo))
		}
		resp.Choices = append(resp.Choices, c)
	}
	writeJSON(w, 200, resp)
}

func completionLP(e *engine.Engine, evs []engine.TokenEvent, offset int) *completionLogprobs {
	out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []*float32{}, TopLogprobs: []map[string]float32{}, TextOffset: []int{}}
	for _, ev := range evs {
		p := string(e.Vocab().Piece(ev.ID, true))
		lp := ev.Logprob
		out.Tokens = append(out.Tokens, p)
		out.TokenLogprobs = append(out.TokenLogprobs, &lp)
		top := map[string]float32{}
		for _, t := range ev.Top {
			top[string(e.Vocab().Piece(t.ID, true))] = t.Logprob
		}
		out.TopLogprobs = append(out.TopLogprobs, top)
		out.TextOffset = append(out.TextOffset, offset)
		offset += len(p)
	}
	return out
}

// stream writes server-sent events: one chunk per token and choice, a final
// chunk with the finish reason, optionally a usage chunk, then [DONE]. A
// write error (the client left) cancels the request.
func (s *Server) stream(w http.ResponseWriter, rp *reply, cancel func()) {
	m, streams, id, created, isChat, echo, nPrompt, includeUsage := rp.m, rp.streams, rp.id, rp.created, rp.chat, rp.echo, rp.nPrompt, rp.includeUsage
	flusher, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(200)
	type item struct {
		i   int
		ev  engine.TokenEvent
		end bool
		res engine.Result
	}
	ch := make(chan item, 64)
	for i, st := range streams {
		go func() {
			for ev := range st.Events() {
				ch <- item{i: i, ev: ev}
			}
			ch <- item{i: i, end: true, res: st.Result()}
		}()
	}
	failed := false
	send := func(v any) {
		if failed {
			return
		}
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			failed = true
			cancel()
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
	}
	// First chunk: the role (chat) or the echoed prompt (completions).
	for i := range streams {
		if isChat {
			send(chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: m.Name,
				Choices: []chunkChoice{{Index: i, Delta: chunkDelta{Role: "assistant"}}}})
		} else if echo != "" {
			send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: m.Name,
				Choices: []completionChoice{{Index: i, Text: echo}}})
		}
	}
	results := make([]engine.Result, len(streams))
	parsers := make([]*chat.ReplyParser, len(streams))
	ncalls := make([]int, len(streams))
	if isChat {
		for i := range streams {
			parsers[i] = rp.parser()
		}
	}
	// sendDelta releases a choice's reasoning and text (with the
	// log-probabilities of the token that released them, when asked) and
	// its completed calls as deltas.
	sendDelta := func(i int, d chat.Delta, lp *chatLogprobs) {
		if d.Reasoning != "" || d.Content != "" || lp != nil {
			send(chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: m.Name,
				Choices: []chunkChoice{{Index: i, Delta: chunkDelta{Content: d.Content, ReasoningContent: d.Reasoning}, Logprobs: lp}}})
		}
		if len(d.Calls) == 0 {
			return
		}
		format := chat.ToolsGeneric
		if rp.tools != nil {
			format = rp.tools.format
		}
		for _, tc := range toolCalls(format, d.Calls, ncalls[i], true) {
			send(chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: m.Name,
				Choices: []chunkChoice{{Index: i, Delta: chunkDelta{ToolCalls: []toolCallJSON{tc}}}}})
		}
		ncalls[i] += len(d.Calls)
	}
	for left := len(streams); left > 0; {
		it := <-ch
		if it.end {
			left--
			results[it.i] = it.res
			fr := finishReason(it.res)
			if e := resultError(it.res, rp.grammarParam); e != nil {
				send(map[string]*apiError{"error": e})
				continue
			}
			if isChat {
				sendDelta(it.i, parsers[it.i].Finish(), nil)
				if ncalls[it.i] > 0 {
					fr = "tool_calls"
				}
				send(chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: m.Name,
					Choices: []chunkChoice{{Index: it.i, FinishReason: &fr}}})
			} else {
				send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: m.Name,
					Choices: []completionChoice{{Index: it.i, FinishReason: &fr}}})
			}
			continue
		}
		ev := it.ev
		hasLP := ev.ID >= 0 && rp.logprobs
		if isChat {
			var lp *chatLogprobs
			if hasLP {
				lp = &chatLogprobs{Content: []tokenLogprob{s.logprob(m.Engine, ev)}}
			}
			p := parsers[it.i]
			sendDelta(it.i, p.Add(p.EventText(ev)), lp)
			continue
		}
		if ev.Text == "" && !hasLP {
			continue
		}
		c := completionChoice{Index: it.i, Text: ev.Text}
		if hasLP {
			c.Logprobs = completionLP(m.Engine, []engine.TokenEvent{ev}, 0)
		}
		send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: m.Name, Choices: []completionChoice{c}})
	}
	if includeUsage {
		u := usageOf(nPrompt, results)
		if isChat {
			send(chatChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: m.Name, Choices: []chunkChoice{}, Usage: u})
		} else {
			send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: m.Name, Choices: []completionChoice{}, Usage: u})
		}
	}
	if !failed {
		fmt.Fprint(w, "data: [DONE]\n\n")
		if flusher != nil {
			flusher.Flush()
		}
	}
}
