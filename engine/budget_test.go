package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// TestReasoningBudget: with a prompt that opens the block (it ends in
// Start), the reply thinks Tokens tokens, then Message and End are forced;
// a budget of 0 closes the block at once; a block the model closes itself
// within the budget is left alone (the reply equals the reply without a
// budget); an End seen ends the counting.
func TestReasoningBudget(t *testing.T) {
	e, err := engine.Load(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"), engine.Options{Threads: 1, CtxLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	prompt := e.Tokenize("Once upon a time, there was a little", true, false)
	gen := func(b *engine.ReasoningBudget) []int32 {
		t.Helper()
		st, err := e.Submit(ctx, engine.Request{Tokens: prompt, MaxTokens: 16, IgnoreEOS: true, Sample: sample.Params{Temp: 0}, ReasoningBudget: b})
		if err != nil {
			t.Fatal(err)
		}
		_, toks, _ := st[0].Collect()
		return toks
	}
	free := gen(nil)
	start := prompt[len(prompt)-1:] // the prompt "opened" the block
	end, msg := []int32{free[0] + 1, free[0] + 2}, []int32{7}
	for _, c := range []struct {
		name string
		b    engine.ReasoningBudget
		want func(got []int32) bool
	}{
		{"3 tokens, then message and end", engine.ReasoningBudget{Start: start, End: end, Tokens: 3, Message: msg},
			func(g []int32) bool {
				return slices.Equal(g[:3], free[:3]) && slices.Equal(g[3:6], slices.Concat(msg, end))
			}},
		{"0 tokens", engine.ReasoningBudget{Start: start, End: end, Tokens: 0},
			func(g []int32) bool { return slices.Equal(g[:2], end) }},
		{"a budget never reached", engine.ReasoningBudget{Start: start, End: end, Tokens: 100},
			func(g []int32) bool { return slices.Equal(g, free) }},
		{"a block never opened", engine.ReasoningBudget{Start: []int32{free[5] + 3}, End: end, Tokens: 0},
			func(g []int32) bool { return slices.Equal(g, free) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := gen(&c.b); !c.want(got) {
				t.Errorf("reply %v (free %v)", got, free)
			}
		})
	}
	if _, err := e.Submit(ctx, engine.Request{Tokens: prompt, ReasoningBudget: &engine.ReasoningBudget{Start: start, End: []int32{1 << 30}}}); err == nil {
		t.Error("a budget with an end token outside the vocabulary was accepted")
	}
}
