package server

import (
	"encoding/json"
	"errors"
	"github.com/loom-inference/loom/chat"
	"net/http"
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
	p, err := s.prepareChat(m, &req, chatInput{})
	if err != nil {
		writeError(w, err)
		return
	}
	s.run(w, r, m, p.g, runOpts{stream: req.Stream, includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage,
		chat: true, tools: p.tools, grammarParam: p.gparam, prompt: p.prompt, reasoning: p.reasoning})
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
	g, err := req.request(m, req.Model)
	if err != nil {
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
	param := "messages"
	if !isChat {
		param = "prompt"
	}
	if e := fitContext(m, &g, param, "prompt", "max_tokens"); e != nil {
		writeError(w, e)
		return
	}
	start := time.Now()
	streams, cancel, aerr := s.submit(w, r, m, g, o.grammarParam)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	defer cancel()
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
	sw := startStream(w, "text/event-stream", cancel)
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
	send := sw.data
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
	sw.printf("data: [DONE]\n\n")
}
