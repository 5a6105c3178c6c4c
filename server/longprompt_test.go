package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/server"
)

// TestLongPromptDisconnectMidPrefill: a client whose 3,000-token prompt
// is prefilling beside 8 streaming clients disconnects; the server sees
// it, and the prompt stops at the chunk in flight: no further chunk is
// evaluated, the prefill's KV blocks return, and the 8 streams, which
// received tokens while it prefilled, go on to the end. The scheduler's
// passes are observed by the engine's Embeddings hook; the test holds the
// scheduler inside the cut-th chunk pass until the server has seen the
// disconnect, so it asserts counts, never durations.
func TestLongPromptDisconnectMidPrefill(t *testing.T) {
	// maxTokens: every stream must still be decoding during the prefill.
	// The model writes thousands of tokens a second and the streams start
	// one after another, so with 400 the first stream had written ~270 when
	// the long prompt came, and sometimes finished during its prefill: the
	// test then waited for its tokens in vain and saw a chunk one position
	// longer than n − streams (it quarantined the test for a session).
	const streams, step, cut, long, maxTokens = 8, 64, 4, 3000, 2400
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	srv := server.New(server.Config{APIKey: testKey, Parallel: streams + 1})
	m, err := srv.Load("", path, engine.Options{Threads: 2, CtxLen: 4096, StepTokens: step}, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	t.Cleanup(srv.Close)
	e := m.Engine

	// The long request's server-side context: gone is closed once the
	// server has cancelled it (context.Cause waits for the cancellation
	// to reach the contexts derived from it, the one Submit got among
	// them: it takes the same lock).
	gone := make(chan struct{})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer()
	inner := ts.Config.Handler
	ts.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Long") != "" {
			go func() {
				<-r.Context().Done()
				_ = context.Cause(r.Context())
				close(gone)
			}()
		}
		inner.ServeHTTP(w, r)
	})
	ts.Start()
	t.Cleanup(ts.Close)

	var mu sync.Mutex
	got := make([]int, streams) // tokens each client received
	counts := func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), got...) }
	// waitFor polls for ok; the deadline only bounds a broken server.
	waitFor := func(what string, ok func() bool) bool {
		for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("timed out waiting for %s", what)
				return false
			}
		}
		return true
	}

	// The scheduler's passes: once armed, one of more than 8 tokens
	// carries the long prompt's chunk (the streams decode one token each).
	var (
		hmu      sync.Mutex
		armed    bool
		sizes    []int
		base     []int // the clients' tokens during the first chunk pass
		after    int   // chunk passes once the server saw the disconnect
		seenGone bool
	)
	lctx, lcancel := context.WithCancel(context.Background())
	defer lcancel()
	dim := e.Info().Dim
	e.SetHooks(&engine.Hooks{Embeddings: func(x []float32) {
		n := len(x) / dim
		hmu.Lock()
		defer hmu.Unlock()
		if !armed || n <= streams {
			return
		}
		if seenGone {
			after++
			return
		}
		sizes = append(sizes, n)
		if len(sizes) == 1 {
			base = counts()
		}
		if len(sizes) < cut {
			return
		}
		// Held inside the cut-th chunk pass: the prompt is mid-prefill.
		// Each stream decoded in the cut−1 chunk steps before this one
		// (tokens the server has pushed to the clients by now)…
		waitFor("the streams' tokens during the prefill", func() bool {
			c := counts()
			for i := range c {
				if c[i] < base[i]+cut-1 {
					return false
				}
			}
			return true
		})
		// …and the client leaves.
		lcancel()
		select {
		case <-gone:
		case <-time.After(time.Minute):
			t.Error("the server did not notice the disconnect")
		}
		seenGone = true
	}})

	post := func(ctx context.Context, body map[string]any, long bool) (*http.Response, error) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(string(b)))
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		if long {
			req.Header.Set("X-Test-Long", "1")
		}
		return http.DefaultClient.Do(req)
	}

	var wg sync.WaitGroup
	finish := make([]string, streams)
	for i := range streams {
		resp, err := post(context.Background(), map[string]any{"prompt": strings.Repeat("Once upon a time ", i+1), "max_tokens": maxTokens,
			"temperature": 0, "ignore_eos": true, "stream": true, "logprobs": 0}, false)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: status %d", i, resp.StatusCode)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok || data == "[DONE]" {
					continue
				}
				// With logprobs every token has its event, even one
				// releasing no text.
				var ev struct {
					Choices []struct {
						FinishReason *string `json:"finish_reason"`
						Logprobs     *struct {
							Tokens []string `json:"tokens"`
						} `json:"logprobs"`
					} `json:"choices"`
				}
				if json.Unmarshal([]byte(data), &ev) != nil || len(ev.Choices) == 0 {
					continue
				}
				mu.Lock()
				if fr := ev.Choices[0].FinishReason; fr != nil && *fr != "" {
					finish[i] = *fr
				}
				if lp := ev.Choices[0].Logprobs; lp != nil {
					got[i] += len(lp.Tokens)
				}
				mu.Unlock()
			}
		}()
	}
	if !waitFor("the 8 streams to start", func() bool {
		for _, n := range counts() {
			if n == 0 {
				return false
			}
		}
		return true
	}) {
		t.FailNow()
	}
	before := e.Stats()
	hmu.Lock()
	armed = true
	hmu.Unlock()

	ids := []int32{1}
	for len(ids) < long {
		ids = append(ids, int32(100+len(ids)*7%400))
	}
	resp, err := post(lctx, map[string]any{"prompt": ids, "max_tokens": 8, "temperature": 0, "stream": true}, true)
	if err == nil {
		// The headers came before the prefill; the body never comes.
		_, _ = bufio.NewReader(resp.Body).ReadString('\n')
		resp.Body.Close()
	}
	if !waitFor("the long request to leave", func() bool { return e.Stats().Running <= streams }) {
		t.FailNow()
	}
	mid := e.Stats()
	hmu.Lock()
	nSizes, nAfter := len(sizes), after
	chunks := 0
	for _, n := range sizes {
		chunks += n - streams
	}
	hmu.Unlock()
	t.Logf("the client left during chunk pass %d: %d prompt positions computed of %d, %d chunk passes after", nSizes, mid.ComputedTokens-before.ComputedTokens, long, nAfter)
	if nSizes != cut || nAfter != 0 {
		t.Errorf("%d chunk passes before the server saw the disconnect, %d after (want %d and 0: the chunk in flight is the last)", nSizes, nAfter, cut)
	}
	if c := mid.ComputedTokens - before.ComputedTokens; c != int64(chunks) || chunks >= long {
		t.Errorf("%d prompt positions computed, want the %d of the %d chunks evaluated (of %d)", c, chunks, cut, long)
	}

	wg.Wait()
	for i, fr := range finish {
		if n := counts()[i]; fr != "length" || n != maxTokens {
			t.Errorf("stream %d: %d tokens, finish %q (want %d, length)", i, n, fr, maxTokens)
		}
	}
	if !waitFor("the KV blocks to return", func() bool { ci, st := e.Cache(), e.Stats(); return ci.Used == 0 && st.Running == 0 }) {
		t.Logf("stats: %+v", e.Stats())
	}
}
