package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/server"
)

// TestOnePath: one greedy request gives the same text and the same
// finish through every caller — `loom run` (raw and --chat), the library's
// Generate, a chat.Conversation, and the server's /v1/completions and
// /v1/chat/completions — because all of them submit the same
// engine.Request to the engine's scheduler. Models: the real TinyStories
// weights (its stories end with EOS: "stop") and two synthgguf shapes
// with their own chat templates (cut at max tokens: "length").
func TestOnePath(t *testing.T) {
	const prompt = "Once upon a time, a little bird"
	cases := []struct {
		name, path string
		n          int
		finish     string // the wire finish_reason of the raw prompt
	}{
		{"TinyStories-656K-Q8_0", filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"), 400, "stop"},
		{"smollm2-135m-Q8_0", testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1"), 24, "length"},
		{"qwen2.5-0.5b-Q4_K_M", testmodels.Synth(t, "-model", "qwen2.5-0.5b", "-type", "Q4_K_M", "-seed", "1"), 16, "length"},
	}
	if testing.Short() {
		cases = cases[:1]
	}
	finishRE := regexp.MustCompile(`finish: (\w+)( \((\w+)\))?`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The CLI: its text on stdout, its finish on stderr.
			cli := func(args ...string) (string, string) {
				out, errOut, err := loom(t, append([]string{"run", c.path, "-p", prompt, "-n", itoa(c.n), "--temp", "0", "-t", "2", "-c", "1024"}, args...)...)
				if err != nil {
					t.Fatalf("loom run %v: %v\n%s", args, err, errOut)
				}
				m := finishRE.FindStringSubmatch(errOut)
				if m == nil {
					t.Fatalf("no finish line in %q", errOut)
				}
				return strings.TrimSuffix(out, "\n"), m[1]
			}
			runText, runFinish := cli()
			chatText, chatFinish := cli("--chat")

			// The library and the server, on one engine.
			srv := server.New(server.Config{Parallel: 2})
			m, err := srv.Load("m", c.path, engine.Options{Threads: 2, CtxLen: 1024}, "")
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			srv.Ready()
			ts := httptest.NewServer(srv.HTTPServer().Handler)
			defer ts.Close()
			e := m.Engine
			greedy := engine.Request{Prompt: prompt, MaxTokens: c.n, Sample: sample.Params{Temp: 0}}
			var lib strings.Builder
			res, err := e.Generate(context.Background(), greedy, func(s string) error { lib.WriteString(s); return nil })
			if err != nil {
				t.Fatal(err)
			}
			conv := chat.NewConversation(e, m.Chat, "")
			defer conv.Close()
			greedy.Prompt = ""
			convText, convRes, err := conv.Reply(context.Background(), prompt, greedy, func(string) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			post := func(path string, body map[string]any) (string, string) {
				b, _ := json.Marshal(body)
				resp, err := http.Post(ts.URL+path, "application/json", bytes.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var r struct {
					Choices []struct {
						Text    string
						Message struct{ Content string }
						Finish  string `json:"finish_reason"`
					}
				}
				if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 || len(r.Choices) != 1 {
					t.Fatalf("%s: %d, %v", path, resp.StatusCode, err)
				}
				return r.Choices[0].Text + r.Choices[0].Message.Content, r.Choices[0].Finish
			}
			apiText, apiFinish := post("/v1/completions", map[string]any{"model": "m", "prompt": prompt, "max_tokens": c.n, "temperature": 0})
			apiChat, apiChatFinish := post("/v1/chat/completions", map[string]any{"model": "m", "max_tokens": c.n, "temperature": 0,
				"messages": []map[string]string{{"role": "user", "content": prompt}}})

			t.Logf("raw: %d tokens, %s (%s): %.60q", res.Generated, res.FinishReason, res.Detail, lib.String())
			for _, x := range []struct{ what, got, want string }{
				{"loom run", runText, lib.String()},
				{"/v1/completions", apiText, lib.String()},
				{"loom run finish", runFinish, res.FinishReason},
				{"/v1/completions finish", apiFinish, res.FinishReason},
				{"raw finish", res.FinishReason, c.finish},
				{"loom run --chat", chatText, convText},
				{"/v1/chat/completions", apiChat, convText},
				{"loom run --chat finish", chatFinish, convRes.FinishReason},
				{"/v1/chat/completions finish", apiChatFinish, convRes.FinishReason},
			} {
				if x.got != x.want {
					t.Errorf("%s: %q, want %q", x.what, x.got, x.want)
				}
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
