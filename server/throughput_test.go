package server_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	benchURL      = flag.String("bench.url", "", "TestThroughput: an OpenAI-compatible server (loom serve or llama-server), e.g. http://127.0.0.1:8080")
	benchClients  = flag.Int("bench.clients", 8, "TestThroughput: concurrent clients")
	benchRequests = flag.Int("bench.requests", 4, "TestThroughput: requests per client")
	benchTokens   = flag.Int("bench.tokens", 64, "TestThroughput: tokens generated per request")
)

// noKeepAlive opens a connection per request: llama-server closes idle
// keep-alive connections on its own schedule, and a POST sent on one it just
// closed fails (Go does not retry it).
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// TestThroughput measures a running server the same way whichever engine it
// is: each client sends streaming /v1/completions requests one after another
// (its own ~64-token prompt, greedy, ignore_eos so every request generates
// bench.tokens); it reports aggregate generated tokens per second over the
// whole run and time to first token p50/p99. Skipped unless -bench.url is set.
func TestThroughput(t *testing.T) {
	if *benchURL == "" {
		t.Skip("set -bench.url to measure a running server")
	}
	words := strings.Fields("the a cat dog sun moon tree house little big red blue girl boy ran jumped saw happy sad day night water")
	var mu sync.Mutex
	var ttfts []float64
	tokens, errs := 0, 0
	var wg sync.WaitGroup
	t0 := time.Now()
	for c := range *benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for range *benchRequests {
				var p []string
				for range 64 {
					p = append(p, words[rng.IntN(len(words))])
				}
				body, _ := json.Marshal(map[string]any{"prompt": strings.Join(p, " "), "max_tokens": *benchTokens,
					"temperature": 0, "stream": true, "ignore_eos": true})
				start := time.Now()
				resp, err := noKeepAlive.Post(*benchURL+"/v1/completions", "application/json", strings.NewReader(string(body)))
				if err != nil || resp.StatusCode != 200 {
					mu.Lock()
					errs++
					if errs == 1 {
						if err == nil {
							b := make([]byte, 300)
							n, _ := resp.Body.Read(b)
							err = fmt.Errorf("%s: %s", resp.Status, b[:n])
						}
						t.Logf("first error: %v", err)
					}
					mu.Unlock()
					if resp != nil {
						resp.Body.Close()
					}
					continue
				}
				n, first := 0, 0.0
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(make([]byte, 1<<20), 1<<20)
				for sc.Scan() {
					line, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok || line == "[DONE]" {
						continue
					}
					var ch struct {
						Choices []struct{ Text string } `json:"choices"`
					}
					if json.Unmarshal([]byte(line), &ch) == nil && len(ch.Choices) > 0 && ch.Choices[0].Text != "" {
						if n == 0 {
							first = time.Since(start).Seconds()
						}
						n++
					}
				}
				resp.Body.Close()
				mu.Lock()
				tokens += n
				ttfts = append(ttfts, first)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	secs := time.Since(t0).Seconds()
	sort.Float64s(ttfts)
	pct := func(p float64) float64 {
		if len(ttfts) == 0 {
			return 0
		}
		return ttfts[min(len(ttfts)-1, int(p*float64(len(ttfts))))]
	}
	out, _ := json.Marshal(map[string]any{"url": *benchURL, "clients": *benchClients, "requests": len(ttfts), "errors": errs,
		"gen_tok_s": float64(tokens) / secs, "ttft_p50_ms": pct(0.5) * 1000, "ttft_p99_ms": pct(0.99) * 1000})
	fmt.Println("THROUGHPUT", string(out))
	if errs > 0 {
		t.Errorf("%d requests failed", errs)
	}
}
