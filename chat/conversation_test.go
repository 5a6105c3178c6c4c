package chat_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
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
