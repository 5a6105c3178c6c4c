package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// TestSlidingWindowCache: on Gemma 3 (window 8 on 5 of 6 layers) the KV
// pool keeps only the sliding layers' window, and nothing changes but the
// memory: four concurrent requests (two sharing a 320-token prefix, one
// sampled) produce what each produces alone on a pool that keeps every
// position; a later request sharing the prefix reuses all of it (the
// blocks of its window are still cached), and a kept sequence's second
// turn computes only what is new. The cache takes at least 4× less memory
// per position at an 8k context than a pool that keeps every layer whole.
func TestSlidingWindowCache(t *testing.T) {
	// Q8_0: a sequence's logits in a mixed batch are bit-identical to its
	// logits alone (F16 weights take the batched GEMM order), so sampled
	// tokens must match too.
	path := testmodels.Synth(t, "-model", "gemma3-mini", "-type", "Q8_0", "-seed", "1")
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 8192, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ci := e.Cache()
	full := 2 * 6 * 256 * 2 // K, V × 6 layers × KV width 256 × F16
	t.Logf("cache: %d bytes per position in the global layers, %d bytes of window per sequence, %d bytes in all for %d positions", ci.BytesPerToken, ci.WindowBytes, ci.Bytes, ci.Blocks*ci.BlockSize)
	if ci.WindowBytes == 0 || ci.Bytes*4 > int64(full)*int64(ci.Blocks*ci.BlockSize) {
		t.Fatalf("cache of %d bytes for %d positions: not 4× below %d bytes per position", ci.Bytes, ci.Blocks*ci.BlockSize, full)
	}
	var prefix []int32
	for len(prefix) < 320 {
		prefix = append(prefix, e.Tokenize(" The capital of France is Paris. The capital of Italy is Rome.", false, false)...)
	}
	prefix = append([]int32{e.Vocab().BOS}, prefix[:319]...)
	reqs := []engine.Request{
		{Tokens: append(slices.Clone(prefix), e.Tokenize(" And Spain", false, false)...), MaxTokens: 40},
		{Tokens: append(slices.Clone(prefix), e.Tokenize(" Germany's is", false, false)...), MaxTokens: 60},
		{Tokens: e.Tokenize("Once upon a time", true, false), MaxTokens: 80, Sample: sample.Params{Temp: 0.8, Seed: 7}},
		{Tokens: e.Tokenize("A short one.", true, false), MaxTokens: 20},
	}
	got := submitAll(t, e, reqs)
	for i, r := range reqs {
		if want := alone(t, e, r); !slices.Equal(got[i], want) {
			t.Errorf("request %d: with the window kept %v\nwith every position %v", i, got[i], want)
		}
	}
	// The prefix again, alone: every block of it reused.
	r := engine.Request{Tokens: append(slices.Clone(prefix), e.Tokenize(" Portugal's capital is", false, false)...), MaxTokens: 30}
	st, err := e.Submit(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	_, ids, res := st[0].Collect()
	if res.CachedTokens != 320 {
		t.Errorf("a request sharing the 320-token prefix (of %d) reused %d tokens", len(r.Tokens), res.CachedTokens)
	}
	if want := alone(t, e, r); !slices.Equal(ids, want) {
		t.Errorf("after reuse %v, without %v", ids, want)
	}
	// A kept sequence: the second turn extends the first.
	q := e.NewSequence()
	defer q.Close()
	turn := func(toks []int32, n int) ([]int32, engine.Result) {
		st, err := e.Submit(context.Background(), engine.Request{Tokens: toks, MaxTokens: n, Sequence: q})
		if err != nil {
			t.Fatal(err)
		}
		_, ids, res := st[0].Collect()
		return ids, res
	}
	one := append(slices.Clone(prefix[:200]), e.Tokenize(" Tell me more.", false, false)...)
	ids1, _ := turn(one, 50)
	two := append(append(slices.Clone(one), ids1...), e.Tokenize(" And then?", false, false)...)
	ids2, res2 := turn(two, 30)
	t.Logf("second turn: %d prompt tokens, %d cached, %d computed", res2.PromptTokens, res2.CachedTokens, res2.Computed)
	if res2.Computed > len(two)-len(one)-len(ids1)+2 {
		t.Errorf("second turn computed %d of %d prompt tokens: the first turn was not reused", res2.Computed, res2.PromptTokens)
	}
	if want := alone(t, e, engine.Request{Tokens: two, MaxTokens: 30}); !slices.Equal(ids2, want) {
		t.Errorf("second turn %v, alone %v", ids2, want)
	}
	if st := e.Stats(); st.KVUsed > 0 {
		t.Logf("%d blocks held by the kept sequence", st.KVUsed)
	}
}
