package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// serveModels are the files the serving tests run on: real TinyStories
// weights and realistic synthgguf shapes in two quantized types, a mixture
// of experts and GPT-2's learned positions.
func serveModels(t *testing.T) map[string]string {
	shared := testmodels.Shared(t)
	m := map[string]string{
		"TinyStories-656K-Q8_0": filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"),
		"TinyStories-656K-Q4_0": filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q4_0.gguf"),
	}
	if !testing.Short() {
		m["smollm2-135m-Q8_0"] = testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1")
		m["smollm2-135m-Q4_K_M"] = testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q4_K_M", "-seed", "1")
		// A mixture of experts: sequences batched together share expert
		// groups, which must not change any sequence's result.
		m["mixtral-mini-Q8_0"] = testmodels.Synth(t, "-model", "mixtral-mini", "-type", "Q8_0", "-seed", "1")
		m["gpt2-124m-Q8_0"] = testmodels.Synth(t, "-model", "gpt2-124m", "-type", "Q8_0", "-seed", "1")
	}
	return m
}

// tinyStories loads the real TinyStories-656K Q8_0 file.
func tinyStories(t *testing.T, o engine.Options) *engine.Engine {
	t.Helper()
	e, err := engine.Load(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

var storyStarts = []string{
	"Once upon a time",
	"The little dog ran to the park. He saw a big red ball and",
	"Lily wanted to bake a cake for her mom. She took flour, eggs and sugar, and then",
	"Tom and Sam were best friends. Every day after school they played in the garden, dug holes, looked for bugs and told stories about dragons. One day",
	"It was a sunny day.",
	"The cat",
	"A bird sat on a tree and sang a happy song. The wind was soft and the sky was blue. Down below, a small girl named Mia",
	"Max found a shiny key under his bed.",
}

// testRequests makes n requests of different prompts, lengths and
// samplers (greedy and seeded).
func testRequests(e *engine.Engine, n int) []engine.Request {
	var reqs []engine.Request
	for i := range n {
		text := storyStarts[i%len(storyStarts)]
		if i >= len(storyStarts) {
			text = storyStarts[(i*3)%len(storyStarts)] + " " + text
		}
		r := engine.Request{Tokens: e.Tokenize(text, true, false), MaxTokens: 6 + (i*7)%40}
		if i%2 == 1 {
			r.Sample = sample.Params{Temp: 0.8, TopK: 40, TopP: 0.95, Seed: uint64(100 + i)}
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// aloneEngines are engines of the files under test that evaluate a
// prompt in one forward pass (StepTokens as large as the context) and run
// one sequence at a time: the reference the batched runs must reproduce.
var aloneEngines sync.Map // path and context → *engine.Engine

// alone generates req by itself, its prompt in one forward pass, on
// another engine of e's file.
func alone(t *testing.T, e *engine.Engine, req engine.Request) []int32 {
	t.Helper()
	key := fmt.Sprint(e.Path(), e.CtxLen())
	v, ok := aloneEngines.Load(key)
	if !ok {
		a, err := engine.Load(e.Path(), engine.Options{Threads: 2, CtxLen: e.CtxLen(), StepTokens: e.CtxLen()})
		if err != nil {
			t.Fatal(err)
		}
		v, _ = aloneEngines.LoadOrStore(key, a)
	}
	a := v.(*engine.Engine)
	a.DropCached()
	st, err := a.Submit(context.Background(), engine.Request{Tokens: req.Tokens, MaxTokens: req.MaxTokens, Sample: req.Sample, IgnoreEOS: req.IgnoreEOS})
	if err != nil {
		t.Fatal(err)
	}
	_, ids, res := st[0].Collect()
	if res.FinishReason == engine.FinishError {
		t.Fatal(res.Err)
	}
	return ids
}

func submitAll(t *testing.T, s *engine.Engine, reqs []engine.Request) [][]int32 {
	t.Helper()
	out := make([][]int32, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ids, res := st[0].Collect()
			if res.FinishReason == engine.FinishError {
				t.Errorf("request %d: %v", i, res.Err)
			}
			out[i] = ids
		}()
	}
	wg.Wait()
	return out
}

// TestSchedulerMatchesAlone: 16 concurrent requests (different prompts,
// lengths, greedy and seeded sampling; small steps so prompt chunks and
// decode tokens share batches) produce exactly the tokens each produces
// alone. On these quantized files a sequence's logits inside a mixed batch
// are bit-identical to its logits alone (TestMixedBatchLogits), so the
// sampled tokens must be equal, not just close.
func TestSchedulerMatchesAlone(t *testing.T) {
	for name, path := range serveModels(t) {
		t.Run(name, func(t *testing.T) {
			e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 256, Parallel: 16, StepTokens: 48})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			reqs := testRequests(e, 16)
			got := submitAll(t, e, reqs)
			for i, r := range reqs {
				if want := alone(t, e, r); !slices.Equal(got[i], want) {
					t.Errorf("request %d (%d prompt tokens, temp %v): batched %v\nalone %v", i, len(r.Tokens), r.Sample.Temp, got[i], want)
				}
			}
			if st := e.Stats(); st.KVUsed != 0 {
				t.Errorf("%d KV blocks still held after every request ended", st.KVUsed)
			}
		})
	}
}

// TestPrefixReuse: a second request sharing a 256-token prefix computes
// only its suffix and produces what it produces without reuse.
func TestPrefixReuse(t *testing.T) {
	e := tinyStories(t, engine.Options{Threads: 2, CtxLen: 512, Parallel: 4})
	var prefix []int32
	for len(prefix) < 256 {
		prefix = append(prefix, e.Tokenize(" Once upon a time there was a girl who loved the sea and the sun.", false, false)...)
	}
	prefix = append([]int32{e.Vocab().BOS}, prefix[:255]...)
	s := e
	first := engine.Request{Tokens: append(slices.Clone(prefix), e.Tokenize(" One day she", false, false)...), MaxTokens: 8}
	second := engine.Request{Tokens: append(slices.Clone(prefix), e.Tokenize(" The end. Then a boy came and", false, false)...), MaxTokens: 20}
	for i, r := range []engine.Request{first, second} {
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		_, ids, res := st[0].Collect()
		if want := alone(t, e, r); !slices.Equal(ids, want) {
			t.Errorf("with reuse %v, without %v", ids, want)
		}
		t.Logf("prompt %d tokens: %d cached, %d computed", res.PromptTokens, res.CachedTokens, res.Computed)
		if res.CachedTokens+res.Computed != res.PromptTokens {
			t.Errorf("cached %d + computed %d != prompt %d", res.CachedTokens, res.Computed, res.PromptTokens)
		}
		if i == 1 {
			if res.CachedTokens != 256 {
				t.Errorf("second request reused %d prompt tokens, want 256", res.CachedTokens)
			}
		} else if res.CachedTokens != 0 {
			t.Errorf("first request reused %d tokens of an empty cache", res.CachedTokens)
		}
	}
}

// TestConcurrentPrefix: requests sharing a 256-token prefix that arrive
// together compute it once (the others wait for its blocks) and each
// produces what it produces alone.
func TestConcurrentPrefix(t *testing.T) {
	e := tinyStories(t, engine.Options{Threads: 2, CtxLen: 512, Parallel: 4, StepTokens: 128})
	var prefix []int32
	for len(prefix) < 256 {
		prefix = append(prefix, e.Tokenize(" The sun was warm and the birds sang in the old green tree by the river.", false, false)...)
	}
	prefix = append([]int32{e.Vocab().BOS}, prefix[:255]...)
	s := e
	var reqs []engine.Request
	for _, tail := range []string{" One day", " Then a little fox came and", " Mia said hello to", " At night the stars"} {
		reqs = append(reqs, engine.Request{Tokens: append(slices.Clone(prefix), e.Tokenize(tail, false, false)...), MaxTokens: 12})
	}
	streams := make([]*engine.Stream, len(reqs))
	for i, r := range reqs {
		st, err := s.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = st[0]
	}
	cached := 0
	for i, st := range streams {
		_, ids, res := st.Collect()
		if want := alone(t, e, reqs[i]); !slices.Equal(ids, want) {
			t.Errorf("request %d: %v, alone %v", i, ids, want)
		}
		cached += res.CachedTokens
	}
	if cached != 3*256 {
		t.Errorf("%d prompt tokens reused over 4 requests sharing 256, want %d (the prefix computed once)", cached, 3*256)
	}
}

// TestPreemption: under a KV budget far below what the requests need at
// once, every request still completes with the tokens it produces alone
// (preempted sequences are recomputed exactly), and every block returns.
func TestPreemption(t *testing.T) {
	e := tinyStories(t, engine.Options{Threads: 2, CtxLen: 256, KVTokens: 256, Parallel: 8, StepTokens: 64})
	reqs := testRequests(e, 8)
	for i := range reqs {
		reqs[i].MaxTokens = 60 + 10*i
	}
	got := submitAll(t, e, reqs)
	for i, r := range reqs {
		if want := alone(t, e, r); !slices.Equal(got[i], want) {
			t.Errorf("request %d: with preemption %v\nalone %v", i, got[i], want)
		}
	}
	st := e.Stats()
	t.Logf("%d preemptions, %d steps", st.Preemptions, st.Steps)
	if st.Preemptions == 0 {
		t.Error("no preemption: the budget does not exercise it")
	}
	if st.KVUsed != 0 {
		t.Errorf("%d KV blocks still held", st.KVUsed)
	}
}

// TestCancelFreesBlocks: requests cancelled at random points end with
// "cancelled" and leave no block held; the others are unaffected.
func TestCancelFreesBlocks(t *testing.T) {
	e := tinyStories(t, engine.Options{Threads: 2, CtxLen: 256, Parallel: 4, KVTokens: 8 * 256})
	s := e
	reqs := testRequests(e, 12)
	var wg sync.WaitGroup
	for i, r := range reqs {
		r.MaxTokens, r.IgnoreEOS = 200, true
		ctx, cancel := context.WithCancel(context.Background())
		st, err := s.Submit(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			n := 0
			for {
				_, ok := st[0].Next()
				if !ok {
					break
				}
				if n++; i%2 == 0 && n == 1+i {
					cancel()
				}
			}
			res := st[0].Result()
			if want := map[bool]string{true: "cancelled", false: "length"}[i%2 == 0]; res.FinishReason != want {
				t.Errorf("request %d finished %q, want %q", i, res.FinishReason, want)
			}
		}()
	}
	wg.Wait()
	if st := s.Stats(); st.KVUsed != 0 || st.Running != 0 {
		t.Errorf("after cancellations: %d blocks held, %d running", st.KVUsed, st.Running)
	}
}

// TestOverloaded: a full waiting queue is a clear error, not a hang.
func TestOverloaded(t *testing.T) {
	e, err := engine.Load(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"), engine.Options{Threads: 1, CtxLen: 256, Parallel: 1, MaxWaiting: 2})
	if err != nil {
		t.Fatal(err)
	}
	s := e
	ctx, cancel := context.WithCancel(context.Background())
	req := engine.Request{Tokens: e.Tokenize("Once", true, false), MaxTokens: 200, IgnoreEOS: true}
	var err2 error
	for range 10 {
		if _, err2 = s.Submit(ctx, req); err2 != nil {
			break
		}
	}
	if !errors.Is(err2, engine.ErrOverloaded) {
		t.Errorf("10 submissions to a queue of 2: %v, want ErrOverloaded", err2)
	}
	cancel()
	e.Close()
	if _, err := s.Submit(context.Background(), req); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("submit after close: %v", err)
	}
	if _, err := s.Submit(context.Background(), engine.Request{}); err == nil {
		t.Error("an empty prompt was accepted")
	}
}

// TestForks: N choices share one prompt evaluation; choice i is what a
// separate request seeded with Seed+i produces.
func TestForks(t *testing.T) {
	e := tinyStories(t, engine.Options{Threads: 2, CtxLen: 256, Parallel: 4})
	s := e
	req := engine.Request{Tokens: e.Tokenize("Tom had a red ball. He threw it and", true, false), MaxTokens: 30,
		Sample: sample.Params{Temp: 1, Seed: 7}, N: 3}
	st, err := s.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for i, stream := range st {
		_, ids, res := stream.Collect()
		one := req
		one.N, one.Sample.Seed = 1, req.Sample.Seed+uint64(i)
		if want := alone(t, e, one); !slices.Equal(ids, want) {
			t.Errorf("choice %d: %v, alone %v", i, ids, want)
		}
		if i > 0 && res.Computed != 0 && res.Computed != st[0].Result().Computed {
			t.Errorf("choice %d computed its own prompt", i)
		}
		distinct[fmt.Sprint(ids)] = true
	}
	if len(distinct) < 2 {
		t.Error("three seeded choices are all the same")
	}
}

// TestStopStrings: a stop string is never streamed, even in part, and the
// text before it is.
func TestStopStrings(t *testing.T) {
	e := tinyStories(t, engine.Options{Threads: 2, CtxLen: 256})
	s := e
	req := engine.Request{Tokens: e.Tokenize("Once upon a time", true, false), MaxTokens: 60}
	st, _ := s.Submit(context.Background(), req)
	full, _, _ := st[0].Collect()
	if len(full) < 40 {
		t.Fatalf("reference text too short: %q", full)
	}
	for _, stop := range []string{full[20:23], full[5:30], "\u2603never"} {
		r := req
		r.Stop = []string{"zzz", stop}
		st, _ := s.Submit(context.Background(), r)
		var parts []string
		for {
			ev, ok := st[0].Next()
			if !ok {
				break
			}
			parts = append(parts, ev.Text)
		}
		got, res := joinStrings(parts), st[0].Result()
		want := full
		if i := indexOf(full, stop); i >= 0 {
			want = full[:i]
			if res.FinishReason != "stop" {
				t.Errorf("stop %q: finish %q", stop, res.FinishReason)
			}
		}
		if got != want {
			t.Errorf("stop %q: streamed %q, want %q", stop, got, want)
		}
	}
}

func joinStrings(p []string) string {
	s := ""
	for _, x := range p {
		s += x
	}
	return s
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestGrammarDeadEndAtSubmit: a grammar no token can begin fails Submit
// with ErrGrammarDeadEnd (nothing queued, nothing streamed); one whose
// start is spelled runs.
func TestGrammarDeadEndAtSubmit(t *testing.T) {
	e := tinyStories(t, engine.Options{Threads: 1, CtxLen: 128})
	s := e
	for _, c := range []struct {
		gbnf string
		ok   bool
	}{
		{`root ::= [\x01-\x08]+`, false},  // control characters: no TinyStories token
		{`root ::= "{" [a-z]*`, false},    // TinyStories cannot spell "{"
		{`root ::= " Once" [\x01]`, true}, // begins fine; the dead end comes later
		{`root ::= ""`, true},             // only the end may follow: EOS is allowed
	} {
		g, err := grammar.Parse(c.gbnf)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Submit(context.Background(), engine.Request{Tokens: e.Tokenize("Once upon a time", true, false), MaxTokens: 4, Grammar: g, N: 2})
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.gbnf, err)
				continue
			}
			for _, x := range st {
				x.Collect()
			}
		} else if !errors.Is(err, engine.ErrGrammarDeadEnd) {
			t.Errorf("%s: %v, want ErrGrammarDeadEnd", c.gbnf, err)
		}
	}
	if st := s.Stats(); st.Waiting != 0 || st.Running != 0 || st.KVUsed != 0 {
		t.Errorf("after: %+v", st)
	}
}
