package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/server"
)

// The golden files' -update flag, registered here unless another test
// file of the package already did (golden tests share it).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files under testdata")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	b, _ := g.Get().(bool)
	return b
}

// bearer adds the test key to every request (ollama's client sends none).
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// ollamaClient is the official ollama Go client for f's server.
func ollamaClient(t *testing.T, f *fixture) *api.Client {
	t.Helper()
	u, err := url.Parse(f.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	return api.NewClient(u, &http.Client{Transport: bearer{testKey}})
}

// statusError is the client's error for an HTTP error, which the test
// requires.
func statusError(t *testing.T, err error, status int, msg string) {
	t.Helper()
	var se api.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want a StatusError %d", err, err, status)
	}
	if se.StatusCode != status || !strings.Contains(se.ErrorMessage, msg) {
		t.Fatalf("StatusError %d %q, want %d containing %q", se.StatusCode, se.ErrorMessage, status, msg)
	}
}

var (
	goldenTime     = regexp.MustCompile(`"(created_at|modified_at|expires_at)":"[^"]*"`)
	goldenDuration = regexp.MustCompile(`"(total_duration|load_duration|prompt_eval_duration|eval_duration)":\d+`)
	goldenCallID   = regexp.MustCompile(`"id":"call_[A-Za-z0-9]+"`)
	goldenDigest   = regexp.MustCompile(`"digest":"[0-9a-f]{64}"`)
	goldenLogprob  = regexp.MustCompile(`"logprob":-?[0-9.e+-]+`) // the kernels' rounding may differ by machine
)

// TestOllamaGolden: each testdata/ollama/NAME.json request ({"method",
// "path", "body"}) gets the response in NAME.golden (status, content
// type, then the body with times, durations, digests, call ids and
// log-probabilities blanked), on TinyStories
// at temperature 0; -update rewrites them. The streamed chat and
// generate are also checked against the engine's own greedy output.
func TestOllamaGolden(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	files, err := filepath.Glob(filepath.Join("testdata", "ollama", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden requests: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var req struct {
				Method, Path string
				Body         json.RawMessage
			}
			if err := json.Unmarshal(b, &req); err != nil {
				t.Fatal(err)
			}
			var body io.Reader
			if len(req.Body) > 0 {
				body = bytes.NewReader(req.Body)
			}
			hr, _ := http.NewRequest(req.Method, f.ts.URL+req.Path, body)
			hr.Header.Set("Authorization", "Bearer "+testKey)
			resp, err := http.DefaultClient.Do(hr)
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			norm := goldenTime.ReplaceAll(out, []byte(`"$1":"2000-01-01T00:00:00Z"`))
			norm = goldenDuration.ReplaceAll(norm, []byte(`"$1":0`))
			norm = goldenCallID.ReplaceAll(norm, []byte(`"id":"ID"`))
			norm = goldenDigest.ReplaceAll(norm, []byte(`"digest":"DIGEST"`))
			norm = goldenLogprob.ReplaceAll(norm, []byte(`"logprob":-1`))
			got := fmt.Sprintf("%d %s\n\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), norm)
			golden := filepath.Join("testdata", "ollama", name+".golden")
			if updating() {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestOllamaGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("response differs from %s:\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
	// The golden stream is the engine's greedy continuation of the
	// rendered prompt (ollama's repeat_penalty 1.1 over the last 64).
	p := sample.Params{Temp: 0, TopK: 40, TopP: 0.9, RepeatPenalty: 1.1, PenaltyLastN: 64}
	ids, _, _ := f.chat.Prompt([]chat.Message{{Role: "user", Content: "Once upon a time"}}, chat.Options{AddGenerationPrompt: true})
	want := f.alone(t, ids, 16, p)
	var text strings.Builder
	for _, line := range goldenLines(t, "chat_stream") {
		var r api.ChatResponse
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		text.WriteString(r.Message.Content)
	}
	if text.String() != want {
		t.Errorf("chat_stream.golden streams %q, the engine alone %q", text.String(), want)
	}
	text.Reset()
	for _, line := range goldenLines(t, "generate_raw_stream") {
		var r api.GenerateResponse
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		text.WriteString(r.Response)
	}
	if want := f.alone(t, f.e.Tokenize("Once upon a time", true, true), 16, p); text.String() != want {
		t.Errorf("generate_raw_stream.golden streams %q, the engine alone %q", text.String(), want)
	}
}

// goldenLines are the body lines of a golden file.
func goldenLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "ollama", name+".golden"))
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(b), "\n\n")
	return strings.Split(strings.TrimSpace(body), "\n")
}

// TestOllamaClient: the official client's chat (streamed, one line per
// token, and whole), generate (templated, raw, with a system prompt),
// list, show, running models, version and heartbeat against TinyStories;
// bad requests are the client's StatusErrors with ollama's messages.
func TestOllamaClient(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	c := ollamaClient(t, f)
	ctx := context.Background()
	no := false
	opts := map[string]any{"temperature": 0, "num_predict": 20}
	chatReq := &api.ChatRequest{Model: f.model, Messages: []api.Message{{Role: "user", Content: "Tell me a story about a dog."}}, Options: opts}
	var streamed strings.Builder
	var last api.ChatResponse
	lines := 0
	if err := c.Chat(ctx, chatReq, func(r api.ChatResponse) error {
		if last.Done {
			t.Errorf("a line after done")
		}
		streamed.WriteString(r.Message.Content)
		last = r
		lines++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ids, _, _ := f.chat.Prompt([]chat.Message{{Role: "user", Content: "Tell me a story about a dog."}}, chat.Options{AddGenerationPrompt: true})
	if !last.Done || last.DoneReason != "length" || last.EvalCount != 20 || last.PromptEvalCount != len(ids) || last.Message.Role != "assistant" {
		t.Errorf("last line %+v (prompt %d tokens)", last, len(ids))
	}
	if last.TotalDuration <= 0 || last.EvalDuration <= 0 || last.PromptEvalDuration <= 0 || last.Model != f.model || last.CreatedAt.IsZero() {
		t.Errorf("metrics %+v", last.Metrics)
	}
	if lines < 10 {
		t.Errorf("%d lines for 20 tokens", lines)
	}
	chatReq.Stream = &no
	var whole []api.ChatResponse
	if err := c.Chat(ctx, chatReq, func(r api.ChatResponse) error { whole = append(whole, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(whole) != 1 || !whole[0].Done || whole[0].Message.Content != streamed.String() || whole[0].EvalCount != 20 {
		t.Errorf("whole %+v, streamed %q", whole, streamed.String())
	}
	// ollama's defaults: greedy at temperature 0 is the engine's.
	if want := f.alone(t, ids, 20, sample.Params{Temp: 0, RepeatPenalty: 1.1}); streamed.String() != want {
		t.Errorf("chat %q, engine alone %q", streamed.String(), want)
	}

	// Generate: templated with a system prompt as a chat of two turns,
	// raw as given, stop strings.
	gen := func(req *api.GenerateRequest) (string, api.GenerateResponse) {
		t.Helper()
		var b strings.Builder
		var end api.GenerateResponse
		if err := c.Generate(ctx, req, func(r api.GenerateResponse) error { b.WriteString(r.Response); end = r; return nil }); err != nil {
			t.Fatal(err)
		}
		return b.String(), end
	}
	got, end := gen(&api.GenerateRequest{Model: f.model, Prompt: "The cat", System: "Be brief.", Options: opts})
	ids, _, _ = f.chat.Prompt([]chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "The cat"}}, chat.Options{AddGenerationPrompt: true})
	if end.PromptEvalCount != len(ids) || !end.Done {
		t.Errorf("generate: %+v, prompt %d tokens", end, len(ids))
	}
	raw, end := gen(&api.GenerateRequest{Model: f.model, Prompt: "The cat", Raw: true, Options: opts, Stream: &no})
	if want := f.alone(t, f.e.Tokenize("The cat", true, true), 20, sample.Params{Temp: 0, RepeatPenalty: 1.1}); raw != want || raw == got {
		t.Errorf("raw %q, engine alone %q, templated %q", raw, want, got)
	}
	if len(raw) > 4 {
		stop := strings.TrimSpace(raw[2:6])
		cut, end := gen(&api.GenerateRequest{Model: f.model, Prompt: "The cat", Raw: true, Options: map[string]any{"temperature": 0, "num_predict": 20, "stop": []string{stop}}})
		if strings.Contains(cut, stop) || !strings.HasPrefix(raw, cut) || end.DoneReason != "stop" {
			t.Errorf("stop %q: %q (%s), unstopped %q", stop, cut, end.DoneReason, raw)
		}
	}
	// An empty prompt or conversation loads the model.
	if _, end := gen(&api.GenerateRequest{Model: f.model}); !end.Done || end.DoneReason != "load" {
		t.Errorf("empty prompt: %+v", end)
	}

	// The model listings.
	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 1 || list.Models[0].Name != f.model+":latest" || list.Models[0].Size <= 0 || len(list.Models[0].Digest) != 64 ||
		list.Models[0].Details.Format != "gguf" || list.Models[0].Details.Family != "llama" || list.Models[0].Details.QuantizationLevel != "Q8_0" ||
		list.Models[0].Details.ParameterSize == "" {
		t.Errorf("list %+v", list.Models)
	}
	ps, err := c.ListRunning(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Models) != 1 || ps.Models[0].ContextLength != 256 || ps.Models[0].SizeVRAM != 0 || ps.Models[0].Digest != list.Models[0].Digest {
		t.Errorf("ps %+v", ps.Models)
	}
	for _, name := range []string{f.model, f.model + ":latest", strings.ToLower(f.model)} {
		show, err := c.Show(ctx, &api.ShowRequest{Model: name})
		if err != nil {
			t.Fatalf("show %s: %v", name, err)
		}
		if show.ModelInfo["general.architecture"] != "llama" || show.ModelInfo["llama.context_length"] == nil ||
			show.Template != f.chat.Source || show.Details.Family != "llama" || !strings.Contains(show.Modelfile, "FROM ") {
			t.Errorf("show %s: %+v", name, show)
		}
		caps := fmt.Sprint(show.Capabilities)
		if caps != "[completion tools]" {
			t.Errorf("capabilities %s", caps)
		}
		if toks, _ := show.ModelInfo["tokenizer.ggml.tokens"].([]any); len(toks) != 0 {
			t.Errorf("tokens listed without verbose")
		}
	}
	verbose, err := c.Show(ctx, &api.ShowRequest{Model: f.model, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if toks, _ := verbose.ModelInfo["tokenizer.ggml.tokens"].([]any); len(toks) != f.e.Vocab().Len() {
		t.Errorf("verbose: %d tokens, vocabulary %d", len(toks), f.e.Vocab().Len())
	}
	v, err := c.Version(ctx)
	if err != nil || v == "" {
		t.Errorf("version %q %v", v, err)
	}
	if err := c.Heartbeat(ctx); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	// Version and heartbeat need no key.
	for _, m := range []string{"GET /api/version", "HEAD /"} {
		method, path, _ := strings.Cut(m, " ")
		req, _ := http.NewRequest(method, f.ts.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("%s without a key: %v %v", m, resp.Status, err)
		}
		resp.Body.Close()
	}

	// Errors, as the client sees them.
	for _, c2 := range []struct {
		req    *api.ChatRequest
		status int
		msg    string
	}{
		{&api.ChatRequest{Model: "nope", Messages: chatReq.Messages}, 404, "model 'nope' not found"},
		{&api.ChatRequest{Model: f.model, Messages: []api.Message{{Role: "user", Content: "hi", Images: []api.ImageData{[]byte("png")}}}}, 400, "images are not supported"},
		{&api.ChatRequest{Model: f.model, Messages: chatReq.Messages, Think: &api.ThinkValue{Value: true}}, 400, "does not support thinking"},
		{&api.ChatRequest{Model: f.model, Messages: chatReq.Messages, Format: json.RawMessage(`"xml"`)}, 400, "invalid format"},
		{&api.ChatRequest{Model: f.model, Messages: chatReq.Messages, Options: map[string]any{"num_predict": "ten"}}, 400, `option "num_predict" must be of type integer`},
		{&api.ChatRequest{Model: f.model, Messages: chatReq.Messages, Options: map[string]any{"temperature": 7}}, 400, "temperature"},
		{&api.ChatRequest{Model: f.model, Messages: []api.Message{{Role: "wizard", Content: "hi"}}}, 400, "role"},
		{&api.ChatRequest{Model: f.model, Messages: []api.Message{{Role: "user", Content: strings.Repeat("dog ", 300)}}}, 400, "context of 256 tokens"},
	} {
		err := c.Chat(ctx, c2.req, func(api.ChatResponse) error { return nil })
		statusError(t, err, c2.status, c2.msg)
	}
	for _, c2 := range []struct {
		req *api.GenerateRequest
		msg string
	}{
		{&api.GenerateRequest{Model: f.model, Prompt: "x", Template: "{{ .Prompt }}"}, "custom templates are not supported"},
		{&api.GenerateRequest{Model: f.model, Prompt: "x", Suffix: "y"}, "suffix"},
		{&api.GenerateRequest{Model: f.model, Prompt: "x", Context: []int{1, 2}}, "context is deprecated"},
		{&api.GenerateRequest{Model: f.model, Prompt: "x", Raw: true, System: "s"}, "raw mode does not support"},
		{&api.GenerateRequest{Model: f.model, Prompt: "x", Images: []api.ImageData{[]byte("png")}}, "images are not supported"},
	} {
		err := c.Generate(ctx, c2.req, func(api.GenerateResponse) error { return nil })
		statusError(t, err, 400, c2.msg)
	}
	_, err = c.Show(ctx, &api.ShowRequest{Model: "nope"})
	statusError(t, err, 404, "model 'nope' not found")
	// An invalid think value: the client refuses to send it; raw, 400.
	resp, body := post(t, f.ts.URL+"/api/chat", testKey, `{"model":"`+f.model+`","messages":[{"role":"user","content":"hi"}],"think":"max"}`)
	if resp.StatusCode != 400 || !strings.Contains(fmt.Sprint(body["error"]), "invalid think value") {
		t.Errorf("think max: %d %v", resp.StatusCode, body)
	}
	resp, body = post(t, f.ts.URL+"/api/chat", testKey, `{"model":"`+f.model+`","messages":[{"role":"user","content":"hi"}],"keep_alive":"forever"}`)
	if resp.StatusCode != 400 {
		t.Errorf("keep_alive forever: %d %v", resp.StatusCode, body)
	}
	resp, body = post(t, f.ts.URL+"/api/chat", "wrong", `{"model":"`+f.model+`","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 401 {
		t.Errorf("wrong key: %d %v", resp.StatusCode, body)
	}
	// Copying, deleting, creating and pushing models: 501.
	statusError(t, c.Copy(ctx, &api.CopyRequest{Source: f.model, Destination: "x"}), 501, "not supported by Loom")
	statusError(t, c.Delete(ctx, &api.DeleteRequest{Model: f.model}), 501, "not supported by Loom")
	statusError(t, c.Create(ctx, &api.CreateRequest{Model: "x", From: f.model}, func(api.ProgressResponse) error { return nil }), 501, "not supported by Loom")
	statusError(t, c.Push(ctx, &api.PushRequest{Model: "x"}, func(api.ProgressResponse) error { return nil }), 501, "not supported by Loom")
}

// TestOllamaFormat: format "json" and a JSON Schema constrain the reply
// (whole and streamed) to valid JSON, the schema's.
func TestOllamaFormat(t *testing.T) {
	// A random-weight model whose vocabulary spells any JSON (TinyStories'
	// has no braces).
	e, err := engine.Load(testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1"), engine.Options{Threads: 2, CtxLen: 1024, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := chat.ForModel(e, "chatml")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(server.Config{APIKey: testKey})
	m, err := srv.Add("", e, tp)
	if err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	f := serve(t, srv, e, m.Name)
	c := ollamaClient(t, f)
	schema := `{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":1,"maximum":99}},"required":["name","age"],"additionalProperties":false}`
	compiled := compileSchema(t, schema)
	for _, format := range []string{schema, `"json"`} {
		for _, stream := range []bool{false, true} {
			var text strings.Builder
			var end api.ChatResponse
			opts := map[string]any{"temperature": 0, "num_predict": 120}
			if format == `"json"` { // any object: a seed whose random-weight reply closes it
				opts = map[string]any{"temperature": 1, "seed": 3, "num_predict": 120}
			}
			req := &api.ChatRequest{Model: f.model, Stream: &stream, Format: json.RawMessage(format), Options: opts,
				Messages: []api.Message{{Role: "user", Content: "Give me a name and an age as JSON."}}}
			if err := c.Chat(context.Background(), req, func(r api.ChatResponse) error { text.WriteString(r.Message.Content); end = r; return nil }); err != nil {
				t.Fatal(err)
			}
			if end.DoneReason != "stop" {
				t.Fatalf("format %s: %s after %q", format, end.DoneReason, text.String())
			}
			if format == schema {
				validate(t, compiled, text.String())
			} else if !json.Valid([]byte(text.String())) || !strings.HasPrefix(strings.TrimSpace(text.String()), "{") {
				t.Errorf("format json: %q", text.String())
			}
		}
	}
	// And generate.
	var text strings.Builder
	if err := c.Generate(context.Background(), &api.GenerateRequest{Model: f.model, Prompt: "A person:", Format: json.RawMessage(schema),
		Options: map[string]any{"temperature": 0, "num_predict": 120}}, func(r api.GenerateResponse) error { text.WriteString(r.Response); return nil }); err != nil {
		t.Fatal(err)
	}
	validate(t, compiled, text.String())
}

// TestOllamaThinkTools: on a Qwen3-templated model, a reply's reasoning
// comes back as message.thinking (thinking for generate) and its calls
// as tool_calls with object arguments, streamed and whole; think false
// turns the template's thinking off and returns no thinking; a history
// with calls, thinking and tool results is laid out. The reply's text is
// forced with options.grammar (Loom's extension).
func TestOllamaThinkTools(t *testing.T) {
	f := reasoningServer(t, "Qwen-Qwen3-0.6B.jinja", server.Config{})
	c := ollamaClient(t, f)
	ctx := context.Background()
	forced := func(text string) map[string]any {
		return map[string]any{"grammar": "root ::= " + grammar.Literal(text), "num_predict": 200, "temperature": 0}
	}
	tools := api.Tools{}
	if err := json.Unmarshal([]byte(`[{"type":"function","function":{"name":"get_weather","description":"Get the weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`), &tools); err != nil {
		t.Fatal(err)
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: f.model})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(show.Capabilities) != "[completion tools thinking]" {
		t.Errorf("capabilities %v", show.Capabilities)
	}
	type reply struct {
		content, thinking string
		calls             []string
		done              string
		prompt            int
	}
	chatOnce := func(req *api.ChatRequest) reply {
		t.Helper()
		var r reply
		if err := c.Chat(ctx, req, func(cr api.ChatResponse) error {
			r.content += cr.Message.Content
			r.thinking += cr.Message.Thinking
			for _, tc := range cr.Message.ToolCalls {
				r.calls = append(r.calls, tc.Function.Name+tc.Function.Arguments.String())
			}
			if cr.Done {
				r.done, r.prompt = cr.DoneReason, cr.PromptEvalCount
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	msgs := []api.Message{{Role: "user", Content: "Hi"}}
	oneTurn := 0
	for _, stream := range []bool{true, false} {
		think := chatOnce(&api.ChatRequest{Model: f.model, Messages: msgs, Stream: &stream, Options: forced("<think>\nI am thinking\n</think>\n\nHello there")})
		if think.thinking != "I am thinking" || think.content != "Hello there" || think.done != "stop" {
			t.Errorf("stream %v: think by default: %+v", stream, think)
		}
		oneTurn = think.prompt
		level := chatOnce(&api.ChatRequest{Model: f.model, Messages: msgs, Stream: &stream, Think: &api.ThinkValue{Value: "high"}, Options: forced("<think>\nHm\n</think>\n\nYes")})
		if level.thinking != "Hm" || level.content != "Yes" {
			t.Errorf("stream %v: think high: %+v", stream, level)
		}
		off := chatOnce(&api.ChatRequest{Model: f.model, Messages: msgs, Stream: &stream, Think: &api.ThinkValue{Value: false}, Options: forced("Hello there")})
		if off.thinking != "" || off.content != "Hello there" || off.prompt <= think.prompt {
			t.Errorf("stream %v: think false: %+v (prompt %d tokens, thinking %d)", stream, off, off.prompt, think.prompt)
		}
		call := chatOnce(&api.ChatRequest{Model: f.model, Messages: msgs, Stream: &stream, Tools: tools,
			Options: forced("<think>\nweather\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")})
		if call.thinking != "weather" || call.content != "" || strings.Join(call.calls, ";") != `get_weather{"city":"Paris"}` || call.done != "stop" {
			t.Errorf("stream %v: tool call: %+v", stream, call)
		}
	}
	// A conversation with a call, its result and the earlier thinking.
	args := api.NewToolCallFunctionArguments()
	args.Set("city", "Paris")
	history := []api.Message{{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", Thinking: "Need the tool.", ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "get_weather", Arguments: args}}}},
		{Role: "tool", ToolName: "get_weather", Content: "sunny"}}
	got := chatOnce(&api.ChatRequest{Model: f.model, Messages: history, Tools: tools, Options: forced("<think>\nok\n</think>\n\nIt is sunny.")})
	if got.content != "It is sunny." || got.thinking != "ok" {
		t.Errorf("after a tool result: %+v", got)
	}
	if got.prompt <= oneTurn+10 {
		t.Errorf("the history's prompt has %d tokens, one turn %d", got.prompt, oneTurn)
	}
	// Generate splits the thinking too.
	var resp, thinking string
	if err := c.Generate(ctx, &api.GenerateRequest{Model: f.model, Prompt: "Hi", Options: forced("<think>\nabc\n</think>\n\nxyz")}, func(r api.GenerateResponse) error {
		resp += r.Response
		thinking += r.Thinking
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if resp != "xyz" || thinking != "abc" {
		t.Errorf("generate: response %q thinking %q", resp, thinking)
	}
}

// TestOllamaPull: a pull streams ollama's progress lines while loom
// pull's code downloads from the Hub (a fake one here) into its cache;
// an unreachable Hub is a clean error line (streamed) or a 500, and a
// name that is no Hub repository a 400.
func TestOllamaPull(t *testing.T) {
	payload := bytes.Repeat([]byte("gguf"), 1<<14)
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/models/owner/repo":
			fmt.Fprintf(w, `{"siblings":[{"rfilename":"model-Q8_0.gguf","size":%d},{"rfilename":"README.md","size":5}]}`, len(payload))
		case "/owner/repo/resolve/main/model-Q8_0.gguf":
			w.Write(payload)
		default:
			http.NotFound(w, r)
		}
	}))
	defer hubSrv.Close()
	cache := t.TempDir()
	t.Setenv("LOOM_HUB_CACHE", cache)
	t.Setenv("HF_ENDPOINT", hubSrv.URL)
	f := start(t, server.Config{}, engine.Options{})
	c := ollamaClient(t, f)
	ctx := context.Background()
	var statuses []string
	var completed int64
	if err := c.Pull(ctx, &api.PullRequest{Model: "hf.co/owner/repo:Q8_0"}, func(p api.ProgressResponse) error {
		if len(statuses) == 0 || statuses[len(statuses)-1] != p.Status {
			statuses = append(statuses, p.Status)
		}
		completed = max(completed, p.Completed)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(statuses, "|") != "pulling manifest|pulling model-Q8_0.gguf|verifying sha256 digest|success" || completed != int64(len(payload)) {
		t.Errorf("progress %q, %d bytes", statuses, completed)
	}
	if b, err := os.ReadFile(filepath.Join(cache, "owner", "repo", "model-Q8_0.gguf")); err != nil || !bytes.Equal(b, payload) {
		t.Errorf("pulled file: %v", err)
	}
	statusError(t, c.Pull(ctx, &api.PullRequest{Model: "llama3.2"}, func(api.ProgressResponse) error { return nil }), 400, "Hugging Face Hub")
	err := c.Pull(ctx, &api.PullRequest{Model: "owner/missing"}, func(api.ProgressResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("missing repository: %v", err)
	}
	// No Hub at all.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("HF_ENDPOINT", dead)
	err = c.Pull(ctx, &api.PullRequest{Model: "owner/other"}, func(api.ProgressResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "pull owner/other") {
		t.Errorf("unreachable Hub, streamed: %v", err)
	}
	no := false
	statusError(t, c.Pull(ctx, &api.PullRequest{Model: "owner/other", Stream: &no}, func(api.ProgressResponse) error { return nil }), 500, "pull owner/other")
}

// TestOllamaStreamLines: the raw stream is NDJSON with ollama's content
// type, a line per token and a last line with done.
func TestOllamaStreamLines(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	req, _ := http.NewRequest("POST", f.ts.URL+"/api/generate", strings.NewReader(`{"model":"`+f.model+`","prompt":"Once","raw":true,"options":{"temperature":0,"num_predict":8}}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	n := 0
	var last map[string]any
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		n++
	}
	if n < 5 || last["done"] != true || last["eval_count"] != float64(8) || last["done_reason"] != "length" {
		t.Errorf("%d lines, last %v", n, last)
	}
}

// TestOllamaEmbeddings: the legacy /api/embeddings is the model's
// unnormalized vector; /api/embed's normalized.
func TestOllamaEmbeddings(t *testing.T) {
	srv := server.New(server.Config{APIKey: testKey})
	m, err := srv.Load("bert", embedModel(t, "bert-mini"), engine.Options{Threads: 2}, "")
	if err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	f := serve(t, srv, m.Engine, m.Name)
	c := ollamaClient(t, f)
	got, err := c.Embeddings(context.Background(), &api.EmbeddingRequest{Model: "bert", Prompt: "the quick brown fox"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Engine.EmbedTexts(context.Background(), []string{"the quick brown fox"}, engine.EmbedOptions{Norm: engine.NormNone})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Embedding) != len(want[0].Vector) || len(got.Embedding) == 0 {
		t.Fatalf("%d values, want %d", len(got.Embedding), len(want[0].Vector))
	}
	for i, v := range want[0].Vector {
		if float32(got.Embedding[i]) != v {
			t.Fatalf("[%d] = %v, want %v", i, got.Embedding[i], v)
		}
	}
	show, err := c.Show(context.Background(), &api.ShowRequest{Model: "bert"})
	if err != nil || fmt.Sprint(show.Capabilities) != "[embedding]" {
		t.Errorf("show: %v %v", show, err)
	}
	err = c.Chat(context.Background(), &api.ChatRequest{Model: "bert", Messages: []api.Message{{Role: "user", Content: "hi"}}}, func(api.ChatResponse) error { return nil })
	statusError(t, err, 400, `"bert" does not support chat`)
}

// TestOllamaDisconnect: a client that stops reading a stream (the
// official client's callback returning an error) cancels the request:
// its KV blocks return long before its num_predict.
func TestOllamaDisconnect(t *testing.T) {
	f := start(t, server.Config{Parallel: 2}, engine.Options{Threads: 2, CtxLen: 4096})
	c := ollamaClient(t, f)
	stop := errors.New("enough")
	lines := 0
	err := c.Generate(context.Background(), &api.GenerateRequest{Model: f.model, Prompt: "Once upon a time", Raw: true,
		Options: map[string]any{"temperature": 1, "num_predict": 4000}}, func(api.GenerateResponse) error {
		if lines++; lines == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("error %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if st := f.srv.Stats(); st.Running == 0 && st.KVUsed == 0 {
			t.Logf("%d tokens generated", st.GeneratedTokens)
			if st.GeneratedTokens > 2000 {
				t.Errorf("%d tokens generated: the request ran on", st.GeneratedTokens)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("after the disconnect: %+v", f.srv.Stats())
}
