package engine_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestContextShift: with ContextShift a greedy generation runs past a
// 64-position context (shifting several times, keeping its first Keep
// tokens) and every block goes back to the pool; without it the request
// ends at the context; models that cannot shift are refused at load.
// (decoder's TestShiftRerotates checks the moved and re-rotated keys.)
func TestContextShift(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K.f16.gguf")
	const ctx, keep = 64, 5
	prompt := []int32{1, 504, 330, 92, 77, 140, 18, 220, 500, 81}
	greedy := func(e *engine.Engine, toks []int32, n int) ([]int32, engine.Result) {
		t.Helper()
		streams, err := e.Submit(context.Background(), engine.Request{Tokens: toks, MaxTokens: n, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		var out []int32
		for ev := range streams[0].Events() {
			if ev.ID >= 0 {
				out = append(out, ev.ID)
			}
		}
		return out, streams[0].Result()
	}
	plain, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, res := greedy(plain, prompt, 200); res.Detail != engine.DetailContext || res.Generated != ctx-len(prompt) {
		t.Errorf("without context shift: %d tokens, finish %s (%s); want %d, context", res.Generated, res.FinishReason, res.Detail, ctx-len(prompt))
	}
	shifting, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: ctx, ContextShift: true, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer shifting.Close()
	_, res := greedy(shifting, prompt, 200)
	if res.Generated != 200 || res.ContextShifts < 3 {
		t.Fatalf("with context shift: %d tokens, %d shifts, finish %s (%s, %v); want 200 tokens and several shifts", res.Generated, res.ContextShifts, res.FinishReason, res.Detail, res.Err)
	}
	if u := shifting.Cache().Used; u != 0 {
		t.Errorf("%d blocks still held after the request ended", u)
	}
	gpt2 := testmodels.Synth(t, "-model", "gpt2-124m", "-type", "Q8_0", "-seed", "1")
	if _, err := engine.Load(gpt2, engine.Options{CtxLen: 64, ContextShift: true}); err == nil || !strings.Contains(err.Error(), "positions") {
		t.Errorf("GPT-2 with context shift: error %v, want one saying it learns absolute positions", err)
	}
}
