package chat

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/loom-inference/loom/engine"
)

// Conversation is a chat that keeps its KV cache across turns (a
// Sequence): each turn renders the whole conversation and the scheduler
// evaluates only the tokens past what the cache already agrees with.
type Conversation struct {
	e    *engine.Engine
	t    *Template
	seq  *engine.Sequence
	Msgs []Message
	Opts Options
	// Reasoning splits each reply's reasoning from its answer (the
	// default): the answer goes to Reply's onText, the reasoning to
	// OnReasoning (nil: not shown), and the turn keeps both. Without it
	// the reasoning stays in the answer, markers and all.
	Reasoning   bool
	OnReasoning func(string) error
	// Computed and Reused count the last turn's prompt tokens evaluated
	// and taken from the cache.
	Computed, Reused int
	// Dropped counts the messages the last turn dropped from the front
	// of the conversation to fit the context (engine.Options.ContextShift).
	Dropped int
}

// NewConversation starts a conversation on e laid out by t (system may be
// empty).
func NewConversation(e *engine.Engine, t *Template, system string) *Conversation {
	c := &Conversation{e: e, t: t, seq: e.NewSequence(), Opts: Options{AddGenerationPrompt: true}, Reasoning: true}
	if system != "" {
		c.Msgs = append(c.Msgs, Message{Role: "system", Content: system})
	}
	return c
}

// Tokens are the tokens the conversation's cache holds.
func (c *Conversation) Tokens() []int32 { return c.seq.Tokens() }

// Close frees the conversation's cache.
func (c *Conversation) Close() { c.seq.Close() }

// Reset forgets the turns (keeping a system message) and the cache.
func (c *Conversation) Reset(system string) {
	c.Msgs = c.Msgs[:0]
	if system != "" {
		c.Msgs = append(c.Msgs, Message{Role: "system", Content: system})
	}
	c.seq.Reset()
}

// Reply adds a user turn, generates the assistant's answer (streamed to
// onText, its reasoning to OnReasoning) and records it. req gives the
// generation's settings (its prompt and Sequence are the conversation's).
// A cancelled ctx ends the reply early; what was generated stays in the
// conversation.
func (c *Conversation) Reply(ctx context.Context, user string, req engine.Request, onText func(string) error) (string, engine.Result, error) {
	msgs := append(slices.Clone(c.Msgs), Message{Role: "user", Content: user})
	ids, prompt, err := c.t.Prompt(msgs, c.Opts)
	if err != nil {
		return "", engine.Result{}, err
	}
	c.Dropped = 0
	if len(ids) >= c.e.CtxLen() && c.e.ContextShift() {
		if msgs, ids, prompt, err = c.dropOldest(msgs, ids, prompt); err != nil {
			return "", engine.Result{}, err
		}
	}
	if len(ids) >= c.e.CtxLen() {
		hint := "/reset starts over"
		if !c.e.ContextShift() {
			hint += " (or --context-shift drops the oldest turns)"
		}
		return "", engine.Result{}, fmt.Errorf("chat: the conversation (%d tokens) no longer fits the context of %d; %s", len(ids), c.e.CtxLen(), hint)
	}
	req.Prompt, req.Tokens, req.Sequence, req.N = "", ids, c.seq, 0
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streams, err := c.e.Submit(ctx, req)
	if err != nil {
		return "", engine.Result{}, err
	}
	st := streams[0]
	p := c.t.NewReplyParser(ReplyOptions{Reasoning: c.Reasoning, Prompt: prompt})
	var answer, reasoning strings.Builder
	emit := func(d Delta) error {
		reasoning.WriteString(d.Reasoning)
		answer.WriteString(d.Content)
		if d.Reasoning != "" && c.OnReasoning != nil {
			if err := c.OnReasoning(d.Reasoning); err != nil {
				return err
			}
		}
		if d.Content != "" {
			return onText(d.Content)
		}
		return nil
	}
	var werr error
	for ev := range st.Events() {
		if werr == nil {
			if werr = emit(p.Add(p.EventText(ev))); werr != nil {
				cancel()
			}
		}
	}
	if werr == nil {
		werr = emit(p.Finish())
	}
	res := st.Result()
	c.Reused, c.Computed = res.CachedTokens, res.Computed
	if werr == nil && (res.FinishReason == engine.FinishError || res.Err != nil) {
		werr = res.Err
	}
	c.Msgs = append(msgs, Message{Role: "assistant", Content: answer.String(), ReasoningContent: reasoning.String()})
	return answer.String(), res, werr
}

// dropOldest is the chat's context shift: a conversation that outgrew the
// context loses its oldest turns — whole ones, from a user message up to
// the next, after a leading system message, which stays — until its
// prompt takes at most half the context (llama.cpp's shift drops half,
// leaving the reply room), or only the newest user turn is left. Within a
// reply, a full context shifts the cache itself (the engine's
// Options.ContextShift); the turns dropped here are gone from Msgs too,
// so later turns share the cache again.
func (c *Conversation) dropOldest(msgs []Message, ids []int32, prompt string) ([]Message, []int32, string, error) {
	first := 0
	if len(msgs) > 0 && msgs[0].Role == "system" {
		first = 1
	}
	for len(ids) > c.e.CtxLen()/2 {
		next := first + 1 // the end of the oldest turn: the next user message
		for next < len(msgs) && msgs[next].Role != "user" {
			next++
		}
		if next >= len(msgs) { // the newest user turn is all that is left
			break
		}
		cut := slices.Delete(slices.Clone(msgs), first, next)
		nids, nprompt, err := c.t.Prompt(cut, c.Opts)
		if err != nil {
			return nil, nil, "", err
		}
		c.Dropped += next - first
		msgs, ids, prompt = cut, nids, nprompt
	}
	return msgs, ids, prompt, nil
}
