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
	// Computed and Reused count the last turn's prompt tokens evaluated
	// and taken from the cache.
	Computed, Reused int
}

// NewConversation starts a conversation on e laid out by t (system may be
// empty).
func NewConversation(e *engine.Engine, t *Template, system string) *Conversation {
	c := &Conversation{e: e, t: t, seq: e.NewSequence(), Opts: Options{AddGenerationPrompt: true}}
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
// onText) and records it. req gives the generation's settings (its
// prompt and Sequence are the conversation's). A cancelled ctx ends the
// reply early; what was generated stays in the conversation.
func (c *Conversation) Reply(ctx context.Context, user string, req engine.Request, onText func(string) error) (string, engine.Result, error) {
	msgs := append(slices.Clone(c.Msgs), Message{Role: "user", Content: user})
	ids, _, err := c.t.Prompt(msgs, c.Opts)
	if err != nil {
		return "", engine.Result{}, err
	}
	if len(ids) >= c.e.CtxLen() {
		return "", engine.Result{}, fmt.Errorf("chat: the conversation (%d tokens) no longer fits the context of %d; /reset starts over", len(ids), c.e.CtxLen())
	}
	req.Prompt, req.Tokens, req.Sequence, req.N = "", ids, c.seq, 0
	var reply strings.Builder
	res, err := c.e.Generate(ctx, req, func(s string) error {
		reply.WriteString(s)
		return onText(s)
	})
	c.Reused, c.Computed = res.CachedTokens, res.Computed
	if res.FinishReason == "" { // never submitted
		return "", res, err
	}
	c.Msgs = append(msgs, Message{Role: "assistant", Content: reply.String()})
	return reply.String(), res, err
}
