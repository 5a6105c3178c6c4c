package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/server"
)

// specMetric reads a counter of /metrics for the fixture's model.
func specMetric(t *testing.T, f *fixture, name string) float64 {
	t.Helper()
	resp, err := http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + `\{model_name="` + regexp.QuoteMeta(f.model) + `"\} (\S+)$`)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("/metrics has no %s for %s", name, f.model)
	return 0
}

// TestSpeculativeRequests: llama.cpp's speculative.n_max, n_min and p_min
// and Loom's speculative.mode change how many forward passes a request
// takes, never its output: completions and chats, whole and streamed, give
// the text they give without them; the drafts show in timings (draft_n,
// draft_n_accepted) and in vLLM's spec_decode counters; invalid values are
// 400 naming the field.
func TestSpeculativeRequests(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf")
	// The model drafts for itself (every greedy draft is accepted); the
	// server's speculation is off, with fixed drafting for requests that
	// turn it on, so that drafts are made whatever the timings say.
	f := start(t, server.Config{}, engine.Options{Threads: 1, CtxLen: 256,
		DraftModel: filepath.Join(dir, "TinyStories-656K-Q8_0.gguf"), Spec: engine.SpecParams{Mode: engine.SpecOff, Max: 4, Fixed: true}})
	comp, chat := f.ts.URL+"/v1/completions", f.ts.URL+"/v1/chat/completions"
	const prompt = `"prompt":"Once upon a time, there was a little girl named Lily. Lily","max_tokens":48,"temperature":0`
	const msgs = `"messages":[{"role":"user","content":"Tell me a story about a cat."}],"max_tokens":40,"temperature":0`
	text := func(body map[string]any) string {
		ch, _ := body["choices"].([]any)
		if len(ch) != 1 {
			t.Fatalf("choices in %v", body)
		}
		c := ch[0].(map[string]any)
		if m, ok := c["message"].(map[string]any); ok {
			return m["content"].(string)
		}
		return c["text"].(string)
	}
	draftN := func(body map[string]any) (float64, float64) {
		tm, _ := body["timings"].(map[string]any)
		n, _ := tm["draft_n"].(float64)
		a, _ := tm["draft_n_accepted"].(float64)
		return n, a
	}
	for _, c := range []struct{ url, base string }{{comp, prompt}, {chat, msgs}} {
		resp, plain := post(t, c.url, testKey, `{`+c.base+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v", c.url, resp.StatusCode, plain)
		}
		want := text(plain)
		if n, _ := draftN(plain); n != 0 {
			t.Errorf("%s without speculation: draft_n %v", c.url, n)
		}
		before := specMetric(t, f, "vllm:spec_decode_num_draft_tokens_total")
		accBefore := specMetric(t, f, "vllm:spec_decode_num_accepted_tokens_total")
		draftsBefore := specMetric(t, f, "vllm:spec_decode_num_drafts_total")
		for _, spec := range []string{
			`"speculative.mode":"draft"`,
			`"speculative.mode":"draft","speculative.n_max":3,"speculative.n_min":1,"speculative.p_min":0`,
			`"speculative.mode":"ngram","speculative.n_max":8`,
			`"speculative.mode":"off"`,
			`"speculative.n_max":0`,
		} {
			resp, body := post(t, c.url, testKey, `{`+c.base+`,`+spec+`}`)
			if resp.StatusCode != 200 {
				t.Fatalf("%s %s: %d %v", c.url, spec, resp.StatusCode, body)
			}
			if got := text(body); got != want {
				t.Errorf("%s with %s: %q, without %q", c.url, spec, got, want)
			}
			n, a := draftN(body)
			switch {
			case strings.Contains(spec, `"draft"`) && (n == 0 || a != n):
				t.Errorf("%s with %s: draft_n %v, draft_n_accepted %v: want drafts, all accepted (the model drafts for itself)", c.url, spec, n, a)
			case (strings.Contains(spec, `"off"`) || strings.Contains(spec, `n_max":0`)) && n != 0:
				t.Errorf("%s with %s: draft_n %v", c.url, spec, n)
			}
			// Streamed: the same text.
			st := streamText(t, c.url, `{`+c.base+`,`+spec+`,"stream":true}`)
			if st != want {
				t.Errorf("%s streamed with %s: %q, without %q", c.url, spec, st, want)
			}
		}
		after := specMetric(t, f, "vllm:spec_decode_num_draft_tokens_total")
		accAfter := specMetric(t, f, "vllm:spec_decode_num_accepted_tokens_total")
		drafts := specMetric(t, f, "vllm:spec_decode_num_drafts_total")
		if after <= before || accAfter <= accBefore || drafts <= draftsBefore || accAfter-accBefore > after-before {
			t.Errorf("%s: draft tokens %v → %v, accepted %v → %v, drafts %v → %v: want all to grow, accepted ≤ drafted", c.url, before, after, accBefore, accAfter, draftsBefore, drafts)
		}
		if loom := specMetric(t, f, "loom_spec_decode_draft_tokens_total"); loom != after {
			t.Errorf("loom_spec_decode_draft_tokens_total %v, vllm's %v", loom, after)
		}
	}
	if st := f.srv.Stats(); st.SpecDraftTokens == 0 || st.SpecAccepted == 0 {
		t.Errorf("server stats %+v: no speculation counted", st)
	}
	for _, c := range []struct{ name, body, param string }{
		{"unknown mode", `"speculative.mode":"eagle"`, "speculative.mode"},
		{"mode type", `"speculative.mode":1`, "speculative.mode"},
		{"n_max negative", `"speculative.n_max":-1`, "speculative.n_max"},
		{"n_max over 64", `"speculative.n_max":65`, "speculative.n_max"},
		{"n_min negative", `"speculative.n_min":-2`, "speculative.n_min"},
		{"p_min over 1", `"speculative.p_min":1.5`, "speculative.p_min"},
		{"p_min negative", `"speculative.p_min":-0.1`, "speculative.p_min"},
	} {
		for _, u := range []struct{ url, base string }{{comp, prompt}, {chat, msgs}} {
			resp, body := post(t, u.url, testKey, `{`+u.base+`,`+c.body+`}`)
			e, _ := body["error"].(map[string]any)
			if resp.StatusCode != 400 || e == nil || e["param"] != c.param {
				t.Errorf("%s on %s: %d %v, want 400 naming %s", c.name, u.url, resp.StatusCode, body, c.param)
			}
		}
	}
	// A model without a draft model refuses speculative.mode "draft"
	// (ngram needs none).
	g := start(t, server.Config{}, engine.Options{})
	resp, body := post(t, g.ts.URL+"/v1/completions", testKey, `{`+prompt+`,"speculative.mode":"draft"}`)
	if e, _ := body["error"].(map[string]any); resp.StatusCode != 400 || e == nil || e["param"] != "speculative.mode" || !strings.Contains(fmt.Sprint(e["message"]), "draft model") {
		t.Errorf("draft mode without a draft model: %d %v", resp.StatusCode, body)
	}
	if resp, body := post(t, g.ts.URL+"/v1/completions", testKey, `{`+prompt+`,"speculative.mode":"ngram"}`); resp.StatusCode != 200 {
		t.Errorf("ngram without a draft model: %d %v", resp.StatusCode, body)
	}
	// An engine given to Add: the server does not know its options, the
	// engine does; speculative.mode "draft" works with its draft model,
	// and the fields are checked all the same.
	e, err := engine.Load(filepath.Join(dir, "TinyStories-656K-Q8_0.gguf"), engine.Options{Threads: 1, CtxLen: 256, DraftModel: filepath.Join(dir, "TinyStories-656K-Q4_0.gguf")})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{APIKey: testKey})
	if _, err := srv.Add("added", e, nil); err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	h := startHTTP(t, srv)
	t.Cleanup(srv.Close)
	_, want := post(t, h.ts.URL+"/v1/completions", testKey, `{`+prompt+`}`)
	for _, spec := range []string{`"speculative.mode":"draft","speculative.p_min":0`, `"speculative.n_max":3`} {
		resp, body := post(t, h.ts.URL+"/v1/completions", testKey, `{`+prompt+`,`+spec+`}`)
		if resp.StatusCode != 200 || text(body) != text(want) {
			t.Errorf("added engine, %s: %d %v, want %q", spec, resp.StatusCode, body, text(want))
		}
	}
	if resp, body := post(t, h.ts.URL+"/v1/completions", testKey, `{`+prompt+`,"speculative.n_max":99}`); resp.StatusCode != 400 {
		t.Errorf("added engine, n_max 99: %d %v", resp.StatusCode, body)
	}
}

// streamText posts a streaming request and joins its text deltas.
func streamText(t *testing.T, url, body string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text  string `json:"text"`
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := jsonUnmarshal(data, &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			b.WriteString(c.Text + c.Delta.Content)
		}
	}
	return b.String()
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
