package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestSchedulerGrammarChecksBounded: Submit runs at most cap(checks)
// grammar checks at once however many callers submit; a caller waiting
// for a slot returns its context's error as soon as the context ends; a
// closed scheduler refuses a grammar request before checking it.
func TestSchedulerGrammarChecksBounded(t *testing.T) {
	e, err := Load(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"), Options{Threads: 1, CtxLen: 128, MaxWaiting: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	g, err := grammar.Parse(`root ::= " Once" [a-z ]*`)
	if err != nil {
		t.Fatal(err)
	}
	prompt := e.Tokenize("Once upon a time", true, false)
	s := e.sched
	bound := cap(s.checks)

	// Many concurrent Submits of a (simulated) costly check.
	var inflight, peak, calls atomic.Int32
	s.checkHook = func() {
		calls.Add(1)
		n := inflight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(10 * time.Millisecond)
		inflight.Add(-1)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*bound)
	for range 4 * bound {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: 1, Grammar: g})
			if err != nil {
				errs <- err
				return
			}
			for _, x := range st {
				x.Collect()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if calls.Load() != int32(4*bound) || peak.Load() > int32(bound) {
		t.Errorf("%d checks, at most %d at once; want %d, at most %d", calls.Load(), peak.Load(), 4*bound, bound)
	}
	t.Logf("bound %d, peak %d", bound, peak.Load())

	// Every slot held: a waiting Submit gives up with its context.
	hold, held := make(chan struct{}), make(chan struct{}, bound)
	calls.Store(0)
	s.checkHook = func() {
		calls.Add(1)
		held <- struct{}{}
		<-hold
	}
	for range bound {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: 1, Grammar: g}); err != nil {
				t.Error(err)
			} else {
				for _, x := range st {
					x.Collect()
				}
			}
		}()
	}
	for range bound {
		<-held
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	t0 := time.Now()
	_, err = e.Submit(ctx, Request{Tokens: prompt, MaxTokens: 1, Grammar: g})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
		t.Errorf("waiting Submit: %v after %v, want the context's deadline promptly", err, time.Since(t0))
	}
	if calls.Load() != int32(bound) {
		t.Errorf("%d checks ran, want %d (the cancelled one must not run)", calls.Load(), bound)
	}
	close(hold)
	wg.Wait()

	// Admission comes before the check.
	s.close()
	calls.Store(0)
	if _, err := e.Submit(context.Background(), Request{Tokens: prompt, MaxTokens: 1, Grammar: g}); !errors.Is(err, ErrClosed) || calls.Load() != 0 {
		t.Errorf("closed: %v, %d checks", err, calls.Load())
	}
}

// TestMatcherPoolDropsFailed: a matcher that hit a limit (Err) is not
// pooled; a healthy one is, with its bytes counted, and comes back.
func TestMatcherPoolDropsFailed(t *testing.T) {
	var pieces [][]byte
	for n := 1; n <= 300; n++ {
		pieces = append(pieces, []byte(strings.Repeat("(", n)))
	}
	pieces = append(pieces, []byte(")"))
	ix := grammar.NewIndex(pieces, nil)
	paren := `root ::= "(" root ")" | ""`

	var p matcherPool
	ok, err := grammar.Parse(paren)
	if err != nil {
		t.Fatal(err)
	}
	m := p.get(ok)
	m.Mask(ix)
	if m.Err() != nil {
		t.Fatal(m.Err())
	}
	p.put(m)
	if n, b := p.pooled(); n != 1 || b <= 0 {
		t.Errorf("healthy matcher: pool holds %d matchers, %d bytes", n, b)
	}
	if p.get(ok) != m {
		t.Error("healthy matcher not reused")
	}
	if n, b := p.pooled(); n != 0 || b != 0 {
		t.Errorf("after get: pool holds %d matchers, %d bytes", n, b)
	}

	bad, err := grammar.ParseLimits(paren, grammar.Limits{MaxCallWork: 100})
	if err != nil {
		t.Fatal(err)
	}
	m = p.get(bad)
	for range 200 { // a call per byte: within the budget
		if err := m.Accept([]byte("(")); err != nil {
			t.Fatal(err)
		}
	}
	m.Mask(ix)
	if !errors.Is(m.Err(), grammar.ErrLimit) {
		t.Fatalf("mask within the budget: %v", m.Err())
	}
	p.put(m)
	if n, b := p.pooled(); n != 0 || b != 0 {
		t.Errorf("failed matcher pooled: %d matchers, %d bytes", n, b)
	}
	if p.get(bad) == m {
		t.Error("failed matcher reused")
	}
}
