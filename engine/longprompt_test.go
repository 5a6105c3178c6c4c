package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// chunkWatch observes the forward passes (Hooks.Embeddings, in the
// scheduler's goroutine): once armed, a pass of more than decoding
// tokens carries a prompt chunk. After cut such passes it calls cancel
// (during the cut-th pass) and counts the chunk passes that follow.
type chunkWatch struct {
	dim, decoding, cut int
	cancel             func()

	mu        sync.Mutex
	armed     bool
	sizes     []int     // tokens of each chunk pass up to the cut
	first     time.Time // during the first chunk pass
	cancelled time.Time // during the cut-th, when cancel was called
	after     int       // chunk passes after the cut
}

func (w *chunkWatch) hooks() *engine.Hooks {
	return &engine.Hooks{Embeddings: func(x []float32) {
		n := len(x) / w.dim
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.armed || n <= w.decoding {
			return
		}
		if !w.cancelled.IsZero() {
			w.after++
			return
		}
		w.sizes = append(w.sizes, n)
		if len(w.sizes) == 1 {
			w.first = time.Now()
		}
		if len(w.sizes) == w.cut {
			w.cancelled = time.Now()
			w.cancel()
		}
	}}
}

// TestLongPromptCancelledMidPrefill: a 3,000-token prompt beside 8
// decoding streams is evaluated in chunks, each step carrying every
// stream's next token too, so the streams produce a token per chunk; its
// context cancelled during the third chunk, it stops there: no further
// chunk is evaluated, its stream ends cancelled with exactly the three
// chunks computed, and its KV blocks return to the pool (none used once
// the streams end too). Counts and orders of events only, no durations.
func TestLongPromptCancelledMidPrefill(t *testing.T) {
	path := testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1")
	const long, streams, step, cut = 3000, 8, 128, 3
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: long + 64, Parallel: streams + 1, StepTokens: step, KVTokens: long + 64 + streams*512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	lctx, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	w := &chunkWatch{dim: e.Info().Dim, decoding: streams, cut: cut, cancel: lcancel}
	e.SetHooks(w.hooks())

	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	var mu sync.Mutex
	stamps := make([][]time.Time, streams)
	results := make([]engine.Result, streams)
	var wg sync.WaitGroup
	for i := range streams {
		st, err := e.Submit(sctx, engine.Request{Tokens: e.Tokenize(strings.Repeat("a b c ", i+1), true, false), MaxTokens: 500, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range st[0].Events() {
				mu.Lock()
				stamps[i] = append(stamps[i], ev.At)
				mu.Unlock()
			}
			results[i] = st[0].Result()
		}()
	}
	// Every stream is decoding before the long prompt arrives: from then
	// on, a pass of more than 8 tokens carries its chunk.
	for deadline := time.Now().Add(time.Minute); ; {
		mu.Lock()
		ready := true
		for _, s := range stamps {
			ready = ready && len(s) > 0
		}
		mu.Unlock()
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the 8 streams did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.mu.Lock()
	w.armed = true
	w.mu.Unlock()
	before := e.Stats()
	ids := []int32{e.Vocab().BOS}
	for len(ids) < long {
		ids = append(ids, int32(200+len(ids)*7%5000))
	}
	lst, err := e.Submit(lctx, engine.Request{Tokens: ids, MaxTokens: 1, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	_, gen, res := lst[0].Collect()
	mid := e.Stats() // the streams still run
	w.mu.Lock()
	sizes, first, cancelled, after := w.sizes, w.first, w.cancelled, w.after
	w.mu.Unlock()

	if res.FinishReason != engine.FinishCancelled || len(gen) != 0 {
		t.Fatalf("the cancelled long prompt: finish %q (%v), %d tokens generated", res.FinishReason, res.Err, len(gen))
	}
	if len(sizes) != cut || after != 0 {
		t.Fatalf("%d chunk passes before the cancellation, %d after it (want %d and 0: the chunk in flight is the last)", len(sizes), after, cut)
	}
	// Each chunk pass: the 8 streams' next tokens and a chunk filling the
	// rest of the step (the prompt is longer than the three chunks).
	chunks := 0
	for i, n := range sizes {
		if n != step {
			t.Errorf("chunk pass %d evaluated %d tokens, want the step's %d (%d decoding + a chunk of %d)", i, n, step, streams, step-streams)
		}
		chunks += n - streams
	}
	if res.Computed != chunks || mid.ComputedTokens-before.ComputedTokens != int64(chunks) {
		t.Errorf("computed %d prompt positions (the scheduler counted %d), want the %d of the chunks evaluated up to the cancellation",
			res.Computed, mid.ComputedTokens-before.ComputedTokens, chunks)
	}
	t.Logf("cancelled during chunk pass %d of %v tokens: %d prompt positions computed of %d, %d chunk passes after", cut, sizes, res.Computed, long, after)
	// The streams produced a token in every chunk's step: the tokens of
	// chunk passes 1 … cut−1 come after the first's start and before the
	// cut-th's (the scheduler stamps them in its own goroutine).
	mu.Lock()
	for i, s := range stamps {
		during := 0
		for _, at := range s {
			if at.After(first) && at.Before(cancelled) {
				during++
			}
		}
		if during != cut-1 {
			t.Errorf("stream %d: %d tokens between the first chunk and the cancellation, want %d (one per chunk step)", i, during, cut-1)
		}
	}
	mu.Unlock()

	scancel()
	wg.Wait()
	for i, r := range results {
		if r.FinishReason != engine.FinishCancelled {
			t.Errorf("stream %d: finish %q, want cancelled", i, r.FinishReason)
		}
	}
	// Cache waits for the step that ended the streams (it holds the
	// engine), and that step published its statistics before it ended.
	if ci, st := e.Cache(), e.Stats(); ci.Used != 0 || st.Running != 0 || st.KVUsed != 0 {
		t.Errorf("after every request ended: %d KV blocks used, %d running (%d blocks in the statistics)", ci.Used, st.Running, st.KVUsed)
	}
}

// TestShortPromptOvertakesLongPrefill: a short request that arrives while
// a long prompt is being prefilled in chunks gets its prompt into the
// next step (shortest remaining prompt first) and its token long before
// the long prompt's, instead of waiting behind the whole prefill as it
// would in admission order. The order of the two tokens is the
// scheduler's (it stamps both), ~15 steps apart.
func TestShortPromptOvertakesLongPrefill(t *testing.T) {
	path := testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1")
	const long, step = 1000, 64
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: long + 64, Parallel: 2, StepTokens: step, KVTokens: 2 * (long + 64)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	started := make(chan struct{})
	var once sync.Once
	e.SetHooks(&engine.Hooks{Embeddings: func([]float32) { once.Do(func() { close(started) }) }})

	ids := []int32{e.Vocab().BOS}
	for len(ids) < long {
		ids = append(ids, int32(200+len(ids)*7%5000))
	}
	lst, err := e.Submit(context.Background(), engine.Request{Tokens: ids, MaxTokens: 1, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	<-started // the long prompt's first chunk is in flight
	sst, err := e.Submit(context.Background(), engine.Request{Tokens: e.Tokenize("Once upon a time, there was a", true, false), MaxTokens: 1, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	last := func(st *engine.Stream) (time.Time, engine.Result) {
		var at time.Time
		for ev := range st.Events() {
			at = ev.At
		}
		return at, st.Result()
	}
	sAt, sRes := last(sst[0])
	lAt, lRes := last(lst[0])
	if sRes.Err != nil || lRes.Err != nil || sAt.IsZero() || lAt.IsZero() {
		t.Fatalf("short: %v, long: %v", sRes.Err, lRes.Err)
	}
	if !sAt.Before(lAt) {
		t.Fatalf("the short request's token came %v after the long prompt's: it waited behind the %d-token prefill", sAt.Sub(lAt), long)
	}
	t.Logf("short request's token %v before the long prompt's (TTFT %v vs %v)", lAt.Sub(sAt), sRes.TTFT, lRes.TTFT)
}
