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

// TestGenerateDoesNotStallStreams: a library Generate of a 2,000-token
// prompt shares the scheduler with 8 running streams: its prompt is
// evaluated in chunks between their decode steps, so every stream keeps
// producing tokens while it prefills (before the scheduler, Generate held
// the engine for one unchunked prefill and every stream stopped).
func TestGenerateDoesNotStallStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2,000-token prefill: .ci/test's one-path step runs it")
	}
	path := testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1")
	const long = 2000
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: long + 64, Parallel: 9, KVTokens: long + 64 + 8*512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	stamps := make([][]time.Time, 8)
	var wg sync.WaitGroup
	for i := range 8 {
		st, err := e.Submit(ctx, engine.Request{Tokens: e.Tokenize(strings.Repeat("a b c ", i+1), true, false), MaxTokens: 400, IgnoreEOS: true})
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
		}()
	}
	// Every stream is decoding before the long prompt arrives.
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
	ids := []int32{e.Vocab().BOS}
	for len(ids) < long {
		ids = append(ids, int32(200+len(ids)*7%5000))
	}
	t0 := time.Now()
	res, err := e.Generate(context.Background(), engine.Request{Tokens: ids, MaxTokens: 1, IgnoreEOS: true}, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t1 := t0.Add(res.TTFT)
	if res.Computed != long {
		t.Fatalf("the prompt computed %d of %d positions", res.Computed, long)
	}
	cancel()
	wg.Wait()
	for i, s := range stamps {
		during := 0
		for _, at := range s {
			if at.After(t0) && at.Before(t1) {
				during++
			}
		}
		t.Logf("stream %d: %d tokens during the %v prefill", i, during, res.TTFT.Round(time.Millisecond))
		// 2,000 tokens in steps of 256 with 8 decode tokens each: 8 or 9
		// steps, each giving every stream a token.
		if during < 4 {
			t.Errorf("stream %d produced %d tokens while Generate prefilled %d tokens: it stalled", i, during, long)
		}
	}
}
