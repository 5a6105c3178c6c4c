package server_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/server"
)

var (
	loadDuration = flag.Duration("load.duration", 3*time.Second, "TestLoad: how long the clients run")
	loadClients  = flag.Int("load.clients", 16, "TestLoad: concurrent clients")
)

// TestLoad runs concurrent clients with random prompts, lengths, streaming
// or not, and random disconnects against a live server, then checks: no
// unexpected error, every KV block back in the pool, the goroutine count
// back to where it started, and reports peak RSS. CI runs a short version;
// go test -run TestLoad -load.duration 10m -load.clients 64 ./server is the
// long one.
func TestLoad(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	f := start(t, server.Config{Parallel: 8, MaxWaiting: 4 * *loadClients}, engine.Options{Threads: 2, CtxLen: 512, Parallel: 8})
	starts := []string{"Once upon a time", "The dog", "Lily and Tom went to the park.", "A big red ball", "It was a cold winter day and", "The little bird sang"}
	var requests, completed, disconnects, tokens, unexpected atomic.Int64
	var firstErr atomic.Value
	tr := &http.Transport{MaxIdleConnsPerHost: *loadClients}
	client := &http.Client{Transport: tr}
	deadline := time.Now().Add(*loadDuration)
	var wg sync.WaitGroup
	for c := range *loadClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for time.Now().Before(deadline) {
				requests.Add(1)
				prompt := strings.Repeat(starts[rng.IntN(len(starts))]+" ", 1+rng.IntN(8))
				stream := rng.IntN(2) == 0
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":%d,"temperature":%.2f,"stream":%v}`,
					prompt, 1+rng.IntN(96), rng.Float64(), stream)
				ctx, cancel := context.WithCancel(context.Background())
				leave := rng.IntN(5) == 0 // one request in five: the client disconnects
				if leave {
					time.AfterFunc(time.Duration(rng.IntN(40))*time.Millisecond, cancel)
				}
				req, _ := http.NewRequestWithContext(ctx, "POST", f.ts.URL+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testKey)
				resp, err := client.Do(req)
				if err != nil {
					cancel()
					if leave {
						disconnects.Add(1)
						continue
					}
					unexpected.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				switch {
				case err != nil && leave:
					disconnects.Add(1)
				case err != nil || resp.StatusCode != 200:
					unexpected.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d: %v %.200s", resp.StatusCode, err, b))
				default:
					completed.Add(1)
					tokens.Add(int64(strings.Count(string(b), "data: {") + strings.Count(string(b), `"completion_tokens"`)))
				}
			}
		}()
	}
	wg.Wait()
	tr.CloseIdleConnections()
	// Every request has ended: the cache is empty and nothing runs.
	settle := time.Now().Add(10 * time.Second)
	for time.Now().Before(settle) {
		if st := f.srv.Stats(); st.Running == 0 && st.Waiting == 0 && st.KVUsed == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := f.srv.Stats()
	if st.Running != 0 || st.Waiting != 0 || st.KVUsed != 0 {
		t.Errorf("after the load: %d running, %d waiting, %d KV blocks held", st.Running, st.Waiting, st.KVUsed)
	}
	if n := unexpected.Load(); n > 0 {
		t.Errorf("%d unexpected errors (first: %v)", n, firstErr.Load())
	}
	f.ts.CloseClientConnections()
	f.ts.Close()
	f.srv.Close()
	var now int
	for range 200 {
		if now = runtime.NumGoroutine(); now <= goroutines+2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if now > goroutines+2 {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the load, %d before:\n%s", now, goroutines, buf[:runtime.Stack(buf, true)])
	}
	t.Logf("LOAD %v, %d clients: %d requests, %d completed, %d disconnected by the client, %d unexpected; %d tokens generated (%.1f tok/s); %d preemptions; peak RSS %s",
		*loadDuration, *loadClients, requests.Load(), completed.Load(), disconnects.Load(), unexpected.Load(),
		st.GeneratedTokens, float64(st.GeneratedTokens)/loadDuration.Seconds(), st.Preemptions, peakRSS())
}

// peakRSS reads the process's high-water resident set (Linux).
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
