package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"github.com/loom-inference/loom/chat"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/server"
)

const testKey = "sk-test-123"

type fixture struct {
	srv    *server.Server
	ts     *httptest.Server
	e      *engine.Engine
	chat   *chat.Template
	client openai.Client
	model  string
}

// start serves the real TinyStories-656K Q8_0 file with an API key,
// loaded by the server (cfg.Parallel and MaxWaiting apply; o's are
// replaced).
func start(t *testing.T, cfg server.Config, o engine.Options) *fixture {
	t.Helper()
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	if o.Threads == 0 {
		o = engine.Options{Threads: 2, CtxLen: 256}
	}
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	srv := server.New(cfg)
	m, err := srv.Load("", path, o, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	f := startHTTP(t, srv)
	t.Cleanup(srv.Close) // closes the engine
	f.e, f.chat, f.model = m.Engine, m.Chat, m.Name
	return f
}

// startHTTP serves srv's handler with the test key (closed with the test),
// on the http.Server loom serve runs (its connection limits included).
func startHTTP(t *testing.T, srv *server.Server) *fixture {
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = srv.HTTPServer()
	ts.Start()
	t.Cleanup(ts.Close)
	return &fixture{srv: srv, ts: ts,
		client: openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))}
}

func (f *fixture) chatParams(text string, maxTokens int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: f.model, MaxTokens: openai.Int(maxTokens), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}}
}

// alone is what the engine generates for the same prompt by itself.
func (f *fixture) alone(t *testing.T, ids []int32, maxTokens int, p sample.Params) string {
	t.Helper()
	var b strings.Builder
	_, err := f.e.Generate(context.Background(), engine.Request{Tokens: ids, MaxTokens: maxTokens, Sample: p},
		func(s string) error { b.WriteString(s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestSDKChat: the official SDK's chat call, whole and streamed, gets the
// engine's own greedy continuation of the template-rendered prompt, with
// exact usage counts.
func TestSDKChat(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	ctx := context.Background()
	params := f.chatParams("Tell me a story about a dog.", 40)
	resp, err := f.client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	ids, _, _ := f.chat.Prompt([]chat.Message{{Role: "user", Content: "Tell me a story about a dog."}}, chat.Options{AddGenerationPrompt: true})
	want := f.alone(t, ids, 40, sample.Params{Temp: 0})
	if got := resp.Choices[0].Message.Content; got != want {
		t.Errorf("content %q, engine alone %q", got, want)
	}
	if resp.Usage.PromptTokens != int64(len(ids)) || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage %+v, prompt has %d tokens", resp.Usage, len(ids))
	}
	if resp.Choices[0].FinishReason != "length" && resp.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason %q", resp.Choices[0].FinishReason)
	}
	// Streamed: the deltas add up to the same text; usage arrives last.
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := f.client.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	var text strings.Builder
	chunks := 0
	for st.Next() {
		c := st.Current()
		acc.AddChunk(c)
		for _, ch := range c.Choices {
			text.WriteString(ch.Delta.Content)
		}
		chunks++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if text.String() != want || chunks < 3 {
		t.Errorf("streamed %q in %d chunks, want %q", text.String(), chunks, want)
	}
	if acc.Usage.CompletionTokens != resp.Usage.CompletionTokens {
		t.Errorf("streamed usage %+v, whole %+v", acc.Usage, resp.Usage)
	}
}

// TestSDKCompletions: text completions with a string prompt, token ids,
// echo and logprobs consistent with the engine's logits.
func TestSDKCompletions(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	ctx := context.Background()
	resp, err := f.client.Completions.New(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(f.model),
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(16), Temperature: openai.Float(0), Logprobs: openai.Int(3), Echo: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	ids := f.e.Tokenize("Once upon a time", true, true)
	want := f.alone(t, ids, 16, sample.Params{Temp: 0})
	if got := resp.Choices[0].Text; got != "Once upon a time"+want {
		t.Errorf("text %q, want the echoed prompt and %q", got, want)
	}
	// The first token's log-probability is the engine's log-softmax.
	logits, err := f.e.NextLogits(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	lse := sample.LogSumExp(logits)
	top := sample.TopK(logits, 1)[0]
	lp := resp.Choices[0].Logprobs
	if len(lp.TokenLogprobs) == 0 || math.Abs(lp.TokenLogprobs[0]-(float64(top.Logit)-lse)) > 1e-5 {
		t.Errorf("first token logprob %v, engine %v", lp.TokenLogprobs, float64(top.Logit)-lse)
	}
	if len(lp.TopLogprobs) == 0 || len(lp.TopLogprobs[0]) != 3 {
		t.Errorf("top_logprobs %v, want 3 entries", lp.TopLogprobs)
	}
	// Token-id prompt: the same continuation.
	ids64 := make([]int64, len(ids))
	for i, id := range ids {
		ids64[i] = int64(id)
	}
	resp2, err := f.client.Completions.New(ctx, openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(f.model),
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: ids64}, MaxTokens: openai.Int(16), Temperature: openai.Float(0)})
	if err != nil {
		t.Fatal(err)
	}
	if resp2.Choices[0].Text != want {
		t.Errorf("token prompt: %q, want %q", resp2.Choices[0].Text, want)
	}
}

// TestSDKChoicesSeedsStops: n choices, reproducible with a seed; stop
// strings end the text before them.
func TestSDKChoicesSeedsStops(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	ctx := context.Background()
	p := f.chatParams("Once upon a time", 30)
	p.Temperature, p.N, p.Seed = openai.Float(1), openai.Int(3), openai.Int(42)
	a, err := f.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.client.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Choices) != 3 {
		t.Fatalf("%d choices, want 3", len(a.Choices))
	}
	distinct := map[string]bool{}
	for i := range a.Choices {
		if a.Choices[i].Message.Content != b.Choices[i].Message.Content {
			t.Errorf("choice %d differs between two requests with seed 42", i)
		}
		distinct[a.Choices[i].Message.Content] = true
	}
	if len(distinct) < 2 {
		t.Error("three sampled choices are identical")
	}
	// Stop: cut where the greedy text has "the".
	full, err := f.client.Chat.Completions.New(ctx, f.chatParams("Once upon a time", 60))
	if err != nil {
		t.Fatal(err)
	}
	text := full.Choices[0].Message.Content
	i := strings.Index(text, " the")
	if i < 0 {
		t.Skipf("no ' the' in %q", text)
	}
	sp := f.chatParams("Once upon a time", 60)
	sp.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{" the", "zzz"}}
	stopped, err := f.client.Chat.Completions.New(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	if got := stopped.Choices[0].Message.Content; got != text[:i] || stopped.Choices[0].FinishReason != "stop" {
		t.Errorf("with stop: %q (%s), want %q", got, stopped.Choices[0].FinishReason, text[:i])
	}
}

// TestCachedTokens: a repeated long prompt reports its reused prefix.
func TestCachedTokens(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	long := strings.Repeat("The cat sat on the mat and looked at the sun. ", 12)
	var cached []int64
	for range 2 {
		r, err := f.client.Chat.Completions.New(context.Background(), f.chatParams(long, 4))
		if err != nil {
			t.Fatal(err)
		}
		cached = append(cached, r.Usage.PromptTokensDetails.CachedTokens)
	}
	if cached[0] != 0 || cached[1] < 64 {
		t.Errorf("cached tokens %v, want 0 then most of the prompt", cached)
	}
}

func post(t *testing.T, url, key, body string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

// TestErrors: every bad input gets an OpenAI-style error body with the
// right status.
func TestErrors(t *testing.T) {
	f := start(t, server.Config{MaxBodyBytes: 1 << 16}, engine.Options{})
	chat := f.ts.URL + "/v1/chat/completions"
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		name, url, key, body string
		status               int
		code                 string
	}{
		{"malformed JSON", chat, testKey, `{"messages": [`, 400, ""},
		{"wrong type", chat, testKey, `{"messages": "hi"}`, 400, ""},
		{"wrong field type", chat, testKey, `{` + msgs + `,"max_tokens":"ten"}`, 400, ""},
		{"empty messages", chat, testKey, `{"messages": []}`, 400, ""},
		{"invalid role", chat, testKey, `{"messages":[{"role":"wizard","content":"hi"}]}`, 400, ""},
		{"missing content", chat, testKey, `{"messages":[{"role":"user"}]}`, 400, ""},
		{"invalid UTF-8", chat, testKey, "{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 400, ""},
		{"context exceeded", chat, testKey, `{` + msgs + `,"max_tokens":100000}`, 400, "context_length_exceeded"},
		{"prompt exceeds context", chat, testKey, `{"messages":[{"role":"user","content":"` + strings.Repeat("word ", 600) + `"}]}`, 400, "context_length_exceeded"},
		{"body too large", chat, testKey, `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 70000) + `"}]}`, 413, ""},
		{"unknown model", chat, testKey, `{"model":"gpt-4",` + msgs + `}`, 404, "model_not_found"},
		{"no key", chat, "", `{` + msgs + `}`, 401, "invalid_api_key"},
		{"wrong key", chat, "sk-wrong", `{` + msgs + `}`, 401, "invalid_api_key"},
		{"negative temperature", chat, testKey, `{` + msgs + `,"temperature":-1}`, 400, ""},
		{"reasoning budget below -1", chat, testKey, `{` + msgs + `,"reasoning_budget_tokens":-5}`, 400, ""},
		{"reasoning budget as text", chat, testKey, `{` + msgs + `,"reasoning_budget_tokens":"lots"}`, 400, ""},
		{"top_p over 1", chat, testKey, `{` + msgs + `,"top_p":2}`, 400, ""},
		{"too many choices", chat, testKey, `{` + msgs + `,"n":100}`, 400, ""},
		{"five stops", chat, testKey, `{` + msgs + `,"stop":["a","b","c","d","e"]}`, 400, ""},
		{"logit_bias key", chat, testKey, `{` + msgs + `,"logit_bias":{"999999":1}}`, 400, ""},
		{"json_schema", chat, testKey, `{` + msgs + `,"response_format":{"type":"json_schema"}}`, 400, ""},
		{"top_logprobs without logprobs", chat, testKey, `{` + msgs + `,"top_logprobs":3}`, 400, ""},
		{"empty prompt", f.ts.URL + "/v1/completions", testKey, `{"prompt":""}`, 400, ""},
		{"prompt token out of range", f.ts.URL + "/v1/completions", testKey, `{"prompt":[1,99999999]}`, 400, ""},
		{"detokenize out of range", f.ts.URL + "/detokenize", testKey, `{"tokens":[-1]}`, 400, ""},
	} {
		resp, body := post(t, c.url, c.key, c.body)
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != c.status || e == nil || e["message"] == "" || e["type"] == "" {
			t.Errorf("%s: status %d body %v, want %d with an error object", c.name, resp.StatusCode, body, c.status)
			continue
		}
		if c.code != "" && e["code"] != c.code {
			t.Errorf("%s: code %v, want %s", c.name, e["code"], c.code)
		}
	}
	// Unknown fields are ignored, as OpenAI does; /health needs no key.
	if resp, _ := post(t, chat, testKey, `{`+msgs+`,"max_tokens":2,"user":"u","frobnicate":true}`); resp.StatusCode != 200 {
		t.Errorf("unknown fields: status %d", resp.StatusCode)
	}
	if resp, err := http.Get(f.ts.URL + "/health"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/health: %v %v", resp, err)
	}
	// The SDK sees a typed error with the status.
	_, err := f.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "nope",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("SDK error for an unknown model: %v", err)
	}
}

// TestOverload: a full queue answers 429 with Retry-After, and the
// requests that were accepted still finish.
func TestOverload(t *testing.T) {
	f := start(t, server.Config{Parallel: 1, MaxWaiting: 1}, engine.Options{Threads: 1, CtxLen: 256})
	body := `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":200,"temperature":1}`
	var wg sync.WaitGroup
	codes := make(chan int, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := post(t, f.ts.URL+"/v1/chat/completions", testKey, body)
			if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	seen := map[int]int{}
	for c := range codes {
		seen[c]++
	}
	if seen[429] == 0 || seen[200] == 0 || seen[200]+seen[429] != 12 {
		t.Errorf("status counts %v: want some 200 and some 429, nothing else", seen)
	}
}

// TestDisconnect: a client that leaves mid-stream cancels its request and
// its KV blocks return; a reader that does not read blocks nobody.
func TestDisconnect(t *testing.T) {
	f := start(t, server.Config{Parallel: 2}, engine.Options{Threads: 2, CtxLen: 4096})
	body := `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":4000,"ignore_eos":true,"temperature":1,"stream":true}`
	// A stalled reader: opened, never read.
	stalledReq, _ := http.NewRequest("POST", f.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	stalledReq.Header.Set("Authorization", "Bearer "+testKey)
	stalled, err := http.DefaultClient.Do(stalledReq)
	if err != nil {
		t.Fatal(err)
	}
	// Meanwhile others are served.
	start := time.Now()
	if _, err := f.client.Chat.Completions.New(context.Background(), f.chatParams("Hello", 8)); err != nil {
		t.Fatal(err)
	}
	t.Logf("a request beside a stalled stream took %v", time.Since(start))
	stalled.Body.Close()
	// A reader that leaves after two events.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", f.ts.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 4 && sc.Scan(); n++ {
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st := f.srv.Stats(); st.Running == 0 && st.KVUsed == 0 {
			// Two 4000-token requests were cut short, not run to the end.
			if st.GeneratedTokens > 4000 {
				t.Errorf("%d tokens generated: the disconnected requests ran on", st.GeneratedTokens)
			}
			t.Logf("after the disconnects: %d tokens generated in all", st.GeneratedTokens)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("after disconnects: %+v", f.srv.Stats())
}

// TestModelsTokenizeMetrics: the small endpoints.
func TestModelsTokenizeMetrics(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	page, err := f.client.Models.List(context.Background())
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != f.model {
		t.Fatalf("models: %v %v", page, err)
	}
	_, tok := post(t, f.ts.URL+"/tokenize", testKey, `{"content":"Once upon a time","add_special":true}`)
	got := []int32{}
	for _, v := range tok["tokens"].([]any) {
		got = append(got, int32(v.(float64)))
	}
	if want := f.e.Tokenize("Once upon a time", true, true); !slices.Equal(got, want) {
		t.Errorf("tokenize %v, want %v", got, want)
	}
	_, det := post(t, f.ts.URL+"/detokenize", testKey, `{"tokens":[`+strings.Trim(strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(strings.Trim(jsonOf(got[1:]), "[]"), ",", " "), " ")), ","), ",")+`]}`)
	if !strings.Contains(det["content"].(string), "upon a time") {
		t.Errorf("detokenize %v", det)
	}
	f.client.Chat.Completions.New(context.Background(), f.chatParams("Hi", 3))
	resp, err := http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	text := b.String()
	for _, name := range append([]string{"loom_requests_running", "loom_kv_cache_usage_ratio", "loom_time_to_first_token_seconds_bucket",
		"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes"}, server.VLLMMetricNames...) {
		if !strings.Contains(text, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if !strings.Contains(text, `vllm:generation_tokens_total{model_name="`+f.model+`"}`) {
		t.Error("vllm:generation_tokens_total lacks the model_name label")
	}
}

func jsonOf(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestTwoModels: several models are served side by side, each named by its
// file, chosen by the request's model.
func TestTwoModels(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf")
	srv := server.New(server.Config{})
	var engines []*engine.Engine
	defer srv.Close() // closes the engines
	for _, f := range []string{"TinyStories-656K-Q8_0.gguf", "TinyStories-656K-Q4_0.gguf"} {
		m, err := srv.Load("", filepath.Join(dir, f), engine.Options{Threads: 1, CtxLen: 128}, "")
		if err != nil {
			t.Fatal(err)
		}
		engines = append(engines, m.Engine)
	}
	srv.Ready()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	page, err := client.Models.List(context.Background())
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("models: %v %v", page, err)
	}
	for i, name := range []string{"TinyStories-656K-Q8_0", "TinyStories-656K-Q4_0"} {
		r, err := client.Completions.New(context.Background(), openai.CompletionNewParams{Model: openai.CompletionNewParamsModel(name),
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")}, MaxTokens: openai.Int(12), Temperature: openai.Float(0)})
		if err != nil {
			t.Fatal(err)
		}
		var want strings.Builder
		engines[i].Generate(context.Background(), engine.Request{Tokens: engines[i].Tokenize("Once upon a time", true, true), MaxTokens: 12, Sample: sample.Params{Temp: 0}},
			func(s string) error { want.WriteString(s); return nil })
		if r.Model != name || r.Choices[0].Text != want.String() {
			t.Errorf("%s: model %q text %q, want %q", name, r.Model, r.Choices[0].Text, want.String())
		}
	}
	if resp, _ := post(t, ts.URL+"/v1/completions", "", `{"prompt":"x"}`); resp.StatusCode != 400 {
		t.Errorf("no model named with two served: status %d, want 400", resp.StatusCode)
	}
}

// TestClose: Close cancels the requests in flight, waits for their
// handlers, then closes the engine (once: the fixture's cleanup closes
// again); requests after it are refused with 503.
func TestClose(t *testing.T) {
	f := start(t, server.Config{Parallel: 2}, engine.Options{Threads: 2, CtxLen: 4096})
	body := `{"prompt":"Once upon a time","max_tokens":4000,"ignore_eos":true,"stream":true}`
	req, _ := http.NewRequest("POST", f.ts.URL+"/v1/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil { // the stream has started
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { f.srv.Close(); close(closed) }()
	rest, _ := io.ReadAll(r) // the handler ends: the request was cancelled
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if s := string(rest); !strings.Contains(s, `"error"`) || !strings.HasSuffix(strings.TrimSpace(s), "data: [DONE]") || strings.Count(s, `"text"`) >= 4000 {
		t.Errorf("the cancelled stream: %d chunks, ends %q", strings.Count(s, `"text"`), s[max(0, len(s)-200):])
	}
	if resp, _ := post(t, f.ts.URL+"/v1/completions", testKey, `{"prompt":"x","max_tokens":1}`); resp.StatusCode != 503 {
		t.Errorf("a request after Close: status %d, want 503", resp.StatusCode)
	}
	if _, err := f.e.Submit(context.Background(), engine.Request{Prompt: "x", MaxTokens: 1}); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("the engine after Close: %v, want ErrClosed", err)
	}
	f.srv.Close() // again: nothing
}
