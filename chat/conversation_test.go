package chat_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// TestConversationKeepsCache: a conversation's second turn evaluates only
// what the first did not leave in its Sequence, gives the same reply as a
// fresh conversation with the same history (greedy), and a Sequence is
// one request's at a time.
func TestConversationKeepsCache(t *testing.T) {
	e, err := engine.Load(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"), engine.Options{Threads: 2, CtxLen: 512, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tp, err := chat.ForModel(e, "chatml")
	if err != nil {
		t.Fatal(err)
	}
	req := engine.Request{MaxTokens: 12, Sample: sample.Params{Temp: 0}}
	c := chat.NewConversation(e, tp, "You tell stories.")
	defer c.Close()
	if _, _, err := c.Reply(context.Background(), "Once upon a time", req, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	first := c.Computed
	reply, res, err := c.Reply(context.Background(), "Then what happened?", req, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("turn 1 computed %d; turn 2 computed %d, reused %d of %d", first, c.Computed, c.Reused, res.PromptTokens)
	if c.Reused == 0 || c.Reused+c.Computed != res.PromptTokens || c.Reused < first-2 {
		t.Errorf("turn 2 reused %d and computed %d of %d prompt tokens (turn 1 computed %d)", c.Reused, c.Computed, res.PromptTokens, first)
	}
	// The same history in a fresh conversation: the same reply.
	d := chat.NewConversation(e, tp, "")
	defer d.Close()
	d.Msgs = slices.Clone(c.Msgs[:len(c.Msgs)-2])
	again, _, err := d.Reply(context.Background(), "Then what happened?", req, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if again != reply {
		t.Errorf("reply with the kept cache %q, fresh %q", reply, again)
	}
	// One request at a time per Sequence.
	seq := e.NewSequence()
	defer seq.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := e.Submit(ctx, engine.Request{Prompt: "Once", MaxTokens: 300, IgnoreEOS: true, Sequence: seq}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Submit(ctx, engine.Request{Prompt: "Once", Sequence: seq}); !errors.Is(err, engine.ErrSequenceBusy) {
		t.Errorf("second request on a busy Sequence: %v, want ErrSequenceBusy", err)
	}
}

// TestConversationReasoning: a thinking model's reply reaches onText
// without its reasoning, which goes to OnReasoning, and the turn keeps
// both (the reply forced by a grammar on a random-weight model laid out
// by Qwen3's template); with Reasoning off the reasoning stays in the
// answer.
func TestConversationReasoning(t *testing.T) {
	e, err := engine.Load(testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1"), engine.Options{Threads: 2, CtxLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tp, err := chat.ForModel(e, filepath.Join("testdata", "modern", "templates", "Qwen-Qwen3-0.6B.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	text := "<think>\nA greeting.\n</think>\n\nHello!"
	g, err := grammar.Parse("root ::= " + grammar.Literal(text))
	if err != nil {
		t.Fatal(err)
	}
	req := engine.Request{MaxTokens: 64, Sample: sample.Params{Temp: 0}, Grammar: g}
	c := chat.NewConversation(e, tp, "")
	defer c.Close()
	var shown, thought string
	c.OnReasoning = func(s string) error { thought += s; return nil }
	answer, _, err := c.Reply(context.Background(), "Hi", req, func(s string) error { shown += s; return nil })
	if err != nil {
		t.Fatal(err)
	}
	last := c.Msgs[len(c.Msgs)-1]
	if answer != "Hello!" || shown != "Hello!" || thought != "A greeting." || last.Content != "Hello!" || last.ReasoningContent != "A greeting." {
		t.Errorf("answer %q shown %q reasoning %q, turn %+v", answer, shown, thought, last)
	}
	c.Reset("")
	c.Reasoning = false
	if answer, _, err = c.Reply(context.Background(), "Hi", req, func(string) error { return nil }); err != nil || answer != text {
		t.Errorf("Reasoning off: %q %v", answer, err)
	}
}

// TestConversationDropsOldestTurns: with the engine's context shift on, a
// conversation that outgrows the context drops its oldest whole turns
// (the system message stays) and goes on; without it, the same turn is
// the clear error that names /reset.
func TestConversationDropsOldestTurns(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	long := strings.Repeat("The little dog ran to the park and played with a red ball. ", 8)
	req := engine.Request{MaxTokens: 8, Sample: sample.Params{Temp: 0}}
	for _, shift := range []bool{false, true} {
		e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 512, ContextShift: shift})
		if err != nil {
			t.Fatal(err)
		}
		tp, err := chat.ForModel(e, "chatml")
		if err != nil {
			t.Fatal(err)
		}
		c := chat.NewConversation(e, tp, "You tell stories.")
		var turns, dropped int
		var lastErr error
		for turns = 0; turns < 12; turns++ {
			if _, _, lastErr = c.Reply(context.Background(), long, req, func(string) error { return nil }); lastErr != nil {
				break
			}
			if c.Dropped > 0 {
				dropped += c.Dropped
				if c.Msgs[0].Role != "system" || c.Msgs[1].Role != "user" {
					t.Errorf("after dropping %d messages the conversation starts %s, %s", c.Dropped, c.Msgs[0].Role, c.Msgs[1].Role)
				}
				if n := len(c.Tokens()); n >= e.CtxLen() {
					t.Errorf("after dropping, the cache holds %d tokens of a %d context", n, e.CtxLen())
				}
			}
		}
		c.Close()
		e.Close()
		switch {
		case !shift && (lastErr == nil || !strings.Contains(lastErr.Error(), "/reset")):
			t.Errorf("without context shift, %d turns of ~%d tokens each in a 512 context: error %v", turns, len(e.Tokenize(long, false, false)), lastErr)
		case shift && (lastErr != nil || dropped == 0):
			t.Errorf("with context shift, turn %d: %v (%d messages dropped in all)", turns+1, lastErr, dropped)
		}
		t.Logf("context shift %v: %d turns, %d messages dropped, %v", shift, turns, dropped, lastErr)
	}
}
