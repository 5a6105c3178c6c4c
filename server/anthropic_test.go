package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// The Messages API's tests: golden requests and responses (whole and
// streamed) in testdata/anthropic, the official Go SDK end to end, and
// the content-block events of a scripted reply with reasoning and a tool
// call. "go test ./server -run Anthropic -update" rewrites the golden
// files.

func init() {
	// The -update flag of this package's golden files; registered once
	// whichever test file of the binary gets here first.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite the golden files")
	}
}

func anthropicUpdating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

const anthropicTestKey = "sk-ant-test-123"

// anthropicFixture serves TinyStories ("stories", plain text), a
// random-weight model laid out by Qwen3's template ("qwen3": tools and
// thinking) and an embedding model ("bert").
type anthropicFixture struct {
	srv           *Server
	ts            *httptest.Server
	client        anthropic.Client
	stories, qwen *Model
}

func anthropicStart(t *testing.T) *anthropicFixture {
	t.Helper()
	shared := testmodels.Shared(t)
	srv := New(Config{APIKey: anthropicTestKey})
	t.Cleanup(srv.Close)
	f := &anthropicFixture{srv: srv}
	var err error
	f.stories, err = srv.Load("stories", filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"),
		engine.Options{Threads: 2, CtxLen: 256}, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Load(testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "2"), engine.Options{Threads: 2, CtxLen: 2048, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := chat.ForModel(e, filepath.Join("..", "chat", "testdata", "modern", "templates", "Qwen-Qwen3-0.6B.jinja"))
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	if f.qwen, err = srv.Add("qwen3", e, tp); err != nil {
		e.Close()
		t.Fatal(err)
	}
	if _, err := srv.Load("bert", testmodels.EmbedModel(t, "modelgen -model bert-mini -type F16 -seed 1"), engine.Options{Threads: 2}, ""); err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	f.ts = httptest.NewUnstartedServer(nil)
	f.ts.Config = srv.HTTPServer()
	f.ts.Start()
	t.Cleanup(f.ts.Close)
	f.client = anthropic.NewClient(option.WithBaseURL(f.ts.URL), option.WithAPIKey(anthropicTestKey), option.WithMaxRetries(0))
	return f
}

// post sends body to path with the key as x-api-key and returns the
// status and the body.
func (f *anthropicFixture) post(t *testing.T, path, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", f.ts.URL+path, strings.NewReader(body))
	req.Header.Set("x-api-key", anthropicTestKey)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("content-type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

var (
	anthropicMsgID  = regexp.MustCompile(`msg_[0-9a-f]{24}`)
	anthropicToolID = regexp.MustCompile(`toolu_[A-Za-z0-9]{24}`)
)

// anthropicNormalize replaces the random ids.
func anthropicNormalize(s string) string {
	s = anthropicMsgID.ReplaceAllString(s, "msg_ID")
	return anthropicToolID.ReplaceAllString(s, "toolu_ID")
}

// anthropicGolden compares got with the golden file (or rewrites it).
func anthropicGolden(t *testing.T, path, got string) {
	t.Helper()
	if anthropicUpdating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to rewrite it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestAnthropicGolden: each request of testdata/anthropic (count_*:
// to count_tokens) answered whole and, when it succeeds, streamed, on the
// deterministic test models at temperature 0; the stream, accumulated by
// the SDK, is the whole message.
func TestAnthropicGolden(t *testing.T) {
	f := anthropicStart(t)
	files, err := filepath.Glob(filepath.Join("testdata", "anthropic", "*.request.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no requests: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".request.json")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			path := "/v1/messages"
			if strings.HasPrefix(name, "count_") {
				path = "/v1/messages/count_tokens"
			}
			status, out := f.post(t, path, string(body))
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, []byte(out), "", "  "); err != nil {
				t.Fatalf("status %d, not JSON: %q", status, out)
			}
			anthropicGolden(t, filepath.Join("testdata", "anthropic", name+".response.golden"),
				anthropicNormalize(fmt.Sprintf("HTTP %d\n%s", status, pretty.String())))
			if strings.HasPrefix(name, "error_") {
				var e anthropicErrorBody
				if json.Unmarshal([]byte(out), &e); status < 400 || status >= 500 || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" {
					t.Errorf("status %d, body %s: want a 4xx Anthropic error", status, out)
				}
			}
			if status != 200 || path != "/v1/messages" {
				return
			}
			var whole anthropic.Message
			if err := json.Unmarshal([]byte(out), &whole); err != nil {
				t.Fatal(err)
			}
			streamBody := "{\"stream\": true," + strings.TrimPrefix(strings.TrimSpace(string(body)), "{")
			status, sse := f.post(t, path, streamBody)
			if status != 200 {
				t.Fatalf("streamed: status %d %s", status, sse)
			}
			anthropicGolden(t, filepath.Join("testdata", "anthropic", name+".stream.golden"), anthropicNormalize(sse))
			acc := anthropicAccumulate(t, sse)
			anthropicSameMessage(t, acc, whole)
		})
	}
}

// anthropicAccumulate reads an event stream with the SDK's accumulator,
// checking the order of the events.
func anthropicAccumulate(t *testing.T, sse string) anthropic.Message {
	t.Helper()
	var acc anthropic.Message
	var types []string
	sc := bufio.NewScanner(strings.NewReader(sse))
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev anthropic.MessageStreamEventUnion
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%s: %v", data, err)
		}
		if ev.Type != event && !(event == "ping" && strings.Contains(data, `"ping"`)) {
			t.Fatalf("event %q carries type %q", event, ev.Type)
		}
		types = append(types, event)
		if event == "ping" {
			continue
		}
		if err := acc.Accumulate(ev); err != nil {
			t.Fatalf("accumulating %s: %v", data, err)
		}
	}
	n := len(types)
	if n < 6 || types[0] != "message_start" || types[1] != "ping" || types[n-2] != "message_delta" || types[n-1] != "message_stop" {
		t.Fatalf("events %v", types)
	}
	return acc
}

// anthropicSameMessage: a streamed message, accumulated, is the whole one.
func anthropicSameMessage(t *testing.T, got, want anthropic.Message) {
	t.Helper()
	if got.StopReason != want.StopReason || got.StopSequence != want.StopSequence || got.Usage.InputTokens != want.Usage.InputTokens ||
		got.Usage.OutputTokens != want.Usage.OutputTokens || got.Model != want.Model || len(got.Content) != len(want.Content) {
		t.Fatalf("streamed %s\nwhole %s", got.RawJSON(), want.RawJSON())
	}
	for i, w := range want.Content {
		g := got.Content[i]
		if g.Type != w.Type || g.Text != w.Text || g.Thinking != w.Thinking || g.Name != w.Name || !anthropicSameJSON(g.Input, w.Input) {
			t.Errorf("block %d: streamed %s, whole %s", i, g.RawJSON(), w.RawJSON())
		}
	}
}

func anthropicSameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	json.Unmarshal(a, &x)
	json.Unmarshal(b, &y)
	return fmt.Sprint(x) == fmt.Sprint(y)
}

// anthropicGreedy is what the engine alone generates for ids.
func anthropicGreedy(t *testing.T, e *engine.Engine, ids []int32, maxTokens int) string {
	t.Helper()
	var b strings.Builder
	_, err := e.Generate(context.Background(), engine.Request{Tokens: ids, MaxTokens: maxTokens},
		func(s string) error { b.WriteString(s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestAnthropicSDK: the official SDK's Messages calls, whole and
// streamed (accumulated by its helper), get the engine's own greedy
// continuation of the template-rendered prompt, with exact usage;
// count_tokens counts that prompt; stop_sequences end the text before the
// first one and name it; the key is taken as x-api-key or Bearer.
func TestAnthropicSDK(t *testing.T) {
	f := anthropicStart(t)
	ctx := context.Background()
	const system, user = "You are a storyteller.", "Tell me a story about a dog."
	params := anthropic.MessageNewParams{Model: "stories", MaxTokens: 40, Temperature: anthropic.Float(0),
		System:   []anthropic.TextBlockParam{{Text: system}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))}}
	ids, _, err := f.stories.Chat.Prompt([]chat.Message{{Role: "system", Content: system}, {Role: "user", Content: user}}, chat.Options{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	want := anthropicGreedy(t, f.stories.Engine, ids, 40)
	if strings.TrimSpace(want) == "" || len(want) < 20 {
		t.Fatalf("the engine alone wrote %q", want)
	}
	msg, err := f.client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "text" || msg.Content[0].Text != want {
		t.Fatalf("content %s, engine alone %q", msg.RawJSON(), want)
	}
	if !strings.HasPrefix(msg.ID, "msg_") || msg.Model != "stories" || msg.Role != "assistant" || msg.Type != "message" {
		t.Errorf("message %s", msg.RawJSON())
	}
	if msg.Usage.InputTokens != int64(len(ids)) || msg.Usage.OutputTokens < 1 || msg.Usage.OutputTokens > 40 {
		t.Errorf("usage %s, prompt has %d tokens", msg.Usage.RawJSON(), len(ids))
	}
	if msg.StopReason != anthropic.StopReasonEndTurn && msg.StopReason != anthropic.StopReasonMaxTokens {
		t.Errorf("stop_reason %q", msg.StopReason)
	}
	// Streamed, accumulated with the SDK's helper.
	st := f.client.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	var types []string
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	anthropicSameMessage(t, acc, *msg)
	if types[0] != "message_start" || types[1] != "content_block_start" || types[len(types)-1] != "message_stop" || len(types) < 6 {
		t.Errorf("events %v", types) // ping is not an event of the SDK's union
	}
	// count_tokens: the same prompt.
	n, err := f.client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "stories",
		System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String(system)},
		Messages: params.Messages})
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens != int64(len(ids)) {
		t.Errorf("count_tokens %d, prompt %d", n.InputTokens, len(ids))
	}
	// stop_sequences: a piece of the greedy text from its middle.
	k := len(want) / 2
	for strings.Index(want, want[k:k+4]) != k {
		k++
	}
	stop := want[k : k+4]
	params.StopSequences = []string{"never there", stop}
	sm, err := f.client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if sm.Content[0].Text != want[:k] || sm.StopReason != anthropic.StopReasonStopSequence || sm.StopSequence != stop {
		t.Errorf("stop %q: %s, want text %q", stop, sm.RawJSON(), want[:k])
	}
	st = f.client.Messages.NewStreaming(ctx, params)
	acc = anthropic.Message{}
	for st.Next() {
		acc.Accumulate(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	anthropicSameMessage(t, acc, *sm)
	// Authorization: Bearer works too; a wrong key is a 401 the SDK reads.
	status, body := f.post(t, "/v1/messages/count_tokens", `{"model":"stories","messages":[{"role":"user","content":"hi"}]}`,
		"x-api-key", "", "Authorization", "Bearer "+anthropicTestKey)
	if status != 200 || !strings.Contains(body, "input_tokens") {
		t.Errorf("Bearer: %d %s", status, body)
	}
	bad := anthropic.NewClient(option.WithBaseURL(f.ts.URL), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err = bad.Messages.New(ctx, params)
	anthropicWantError(t, "wrong key", err, 401, "authentication_error", "API key")
}

// anthropicWantError checks an SDK error's status, type and message.
func anthropicWantError(t *testing.T, what string, err error, status int, typ, msg string) {
	t.Helper()
	var e *anthropic.Error
	if !errors.As(err, &e) {
		t.Errorf("%s: error %v, want an API error", what, err)
		return
	}
	var body anthropicErrorBody
	json.Unmarshal([]byte(e.RawJSON()), &body)
	if e.StatusCode != status || string(e.Type()) != typ || body.Type != "error" || !strings.Contains(body.Error.Message, msg) {
		t.Errorf("%s: status %d type %q body %s; want %d %s %q", what, e.StatusCode, e.Type(), e.RawJSON(), status, typ, msg)
	}
}

var anthropicWeather = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "get_weather",
	Description: anthropic.String("Get the current weather in a given city."),
	InputSchema: anthropic.ToolInputSchemaParam{Required: []string{"city"},
		Properties: map[string]any{"city": map[string]any{"type": "string", "enum": []string{"Paris", "London", "Tokyo"}}}}}}

// TestAnthropicSDKTools: a required tool call comes back as a tool_use
// block whose input follows the schema (whole and streamed); the SDK's
// ToParam of that message and a tool_result answer it in the next
// request, which reaches the template as the call and its response.
func TestAnthropicSDKTools(t *testing.T) {
	f := anthropicStart(t)
	ctx := context.Background()
	params := anthropic.MessageNewParams{Model: "qwen3", MaxTokens: 64, Temperature: anthropic.Float(0),
		Tools:      []anthropic.ToolUnionParam{anthropicWeather},
		ToolChoice: anthropic.ToolChoiceParamOfTool("get_weather"),
		Messages:   []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather like in Paris?"))}}
	msg, err := f.client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	var call anthropic.ContentBlockUnion
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			call = b
		}
	}
	var input struct{ City string }
	if msg.StopReason != anthropic.StopReasonToolUse || call.Name != "get_weather" || !strings.HasPrefix(call.ID, "toolu_") ||
		json.Unmarshal(call.Input, &input) != nil || !slices.Contains([]string{"Paris", "London", "Tokyo"}, input.City) {
		t.Fatalf("message %s", msg.RawJSON())
	}
	st := f.client.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	anthropicSameMessage(t, acc, *msg)
	// tool_choice any: a call of one of the tools.
	p2 := params
	p2.Tools = append(p2.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "get_time",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"timezone": map[string]any{"enum": []string{"UTC", "CET"}}}}}})
	p2.ToolChoice = anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{}}
	anyMsg, err := f.client.Messages.New(ctx, p2)
	if err != nil {
		t.Fatal(err)
	}
	if anyMsg.StopReason != anthropic.StopReasonToolUse || anyMsg.Content[len(anyMsg.Content)-1].Type != "tool_use" {
		t.Errorf("tool_choice any: %s", anyMsg.RawJSON())
	}
	// The follow-up: the call and its result in the history.
	follow := anthropic.MessageNewParams{Model: "qwen3", MaxTokens: 8, Temperature: anthropic.Float(0),
		Tools: params.Tools,
		Messages: []anthropic.MessageParam{params.Messages[0], msg.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(call.ID, "15 degrees, sunny", false))}}
	res, err := f.client.Messages.New(ctx, follow)
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.InputTokens <= msg.Usage.InputTokens || res.StopReason == "" {
		t.Errorf("follow-up %s", res.RawJSON())
	}
	b, _ := json.Marshal(follow)
	prompt := anthropicRendered(t, f.qwen, string(b))
	for _, want := range []string{"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"" + input.City + "\"}}\n</tool_call>",
		"<tool_response>\n15 degrees, sunny\n</tool_response>"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// anthropicRendered is the prompt a Messages request body renders to.
func anthropicRendered(t *testing.T, m *Model, body string) string {
	t.Helper()
	var req anthropicRequest
	if err := decodeBody([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	p, aerr := (&Server{}).anthropicPrepare(m, &req, true)
	if aerr != nil {
		t.Fatal(aerr)
	}
	return p.prompt
}

// TestAnthropicRendering: what reaches the template: the system prompt,
// merged consecutive turns, a tool_result's error, thinking blocks as
// the reasoning of the current turn, thinking on and off, a prefill.
func TestAnthropicRendering(t *testing.T) {
	f := anthropicStart(t)
	history := `{"model":"qwen3","thinking":{"type":"enabled","budget_tokens":1024},"system":[{"type":"text","text":"Be brief."}],"messages":[
		{"role":"user","content":"Weather in Paris?"},{"role":"user","content":[{"type":"text","text":"And quickly."}]},
		{"role":"assistant","content":[{"type":"thinking","thinking":"Need the weather tool.","signature":"x"},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"timeout"}],"is_error":true}]}]}`
	prompt := anthropicRendered(t, f.qwen, history)
	for _, want := range []string{"<|im_start|>system\nBe brief.<|im_end|>", "<|im_start|>user\nWeather in Paris?\nAnd quickly.<|im_end|>",
		"<think>\nNeed the weather tool.\n</think>", `{"name": "get_weather", "arguments": {"city": "Paris"}}`, "<tool_response>\nError: timeout\n</tool_response>"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	on := anthropicRendered(t, f.qwen, `{"model":"qwen3","thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"Hi"}]}`)
	off := anthropicRendered(t, f.qwen, `{"model":"qwen3","thinking":{"type":"disabled"},"messages":[{"role":"user","content":"Hi"}]}`)
	if strings.Contains(on, "<think>") || !strings.HasSuffix(off, "<think>\n\n</think>\n\n") {
		t.Errorf("thinking on %q, off %q", on, off)
	}
	pre := anthropicRendered(t, f.qwen, `{"model":"qwen3","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello, I am"}]}`)
	if !strings.HasSuffix(pre, "<|im_start|>assistant\nHello, I am") {
		t.Errorf("prefill: %q", pre)
	}
}

// TestAnthropicErrors: bad requests are 4xx errors in Anthropic's shape
// that the SDK decodes, streamed or not.
func TestAnthropicErrors(t *testing.T) {
	f := anthropicStart(t)
	ctx := context.Background()
	base := func() anthropic.MessageNewParams {
		return anthropic.MessageNewParams{Model: "stories", MaxTokens: 8,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
	}
	p := base()
	_, err := f.client.Messages.New(ctx, p, option.WithJSONDel("max_tokens"))
	anthropicWantError(t, "no max_tokens", err, 400, "invalid_request_error", "max_tokens")
	p = base()
	p.Model = "claude-sonnet-4-5"
	_, err = f.client.Messages.New(ctx, p)
	anthropicWantError(t, "unknown model", err, 404, "not_found_error", "claude-sonnet-4-5")
	st := f.client.Messages.NewStreaming(ctx, p)
	for st.Next() {
	}
	anthropicWantError(t, "unknown model streamed", st.Err(), 404, "not_found_error", "not found")
	p.Model = "bert"
	_, err = f.client.Messages.New(ctx, p)
	anthropicWantError(t, "embedding model", err, 400, "invalid_request_error", "embedding model")
	p = base()
	p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgo="), anthropic.NewTextBlock("What is this?"))}
	_, err = f.client.Messages.New(ctx, p)
	anthropicWantError(t, "image", err, 400, "invalid_request_error", "images are not supported")
	p.Messages = []anthropic.MessageParam{{Role: "system", Content: []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock("Be brief.")}}}
	_, err = f.client.Messages.New(ctx, p)
	anthropicWantError(t, "system role", err, 400, "invalid_request_error", "role")
	p = base()
	p.Messages[0] = anthropic.NewUserMessage(anthropic.NewTextBlock(strings.Repeat("a story about a dog ", 100)))
	_, err = f.client.Messages.New(ctx, p)
	anthropicWantError(t, "too long", err, 400, "invalid_request_error", "prompt is too long")
	_, err = f.client.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "stories"})
	anthropicWantError(t, "count without messages", err, 400, "invalid_request_error", "messages")
	// Malformed JSON, the body limit, the statuses' types.
	if status, body := f.post(t, "/v1/messages", `{"model":`); status != 400 || !strings.Contains(body, `"type":"error"`) {
		t.Errorf("malformed: %d %s", status, body)
	}
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 413: "request_too_large",
		429: "rate_limit_error", 500: "api_error", 503: "overloaded_error", 529: "overloaded_error"} {
		if got, b := anthropicErrorOf(&apiError{status: status, Msg: "x"}); got != status || b.Error.Type != typ || b.Type != "error" {
			t.Errorf("status %d: %d %+v", status, got, b)
		}
	}
}

// TestAnthropicDisconnect: a client that leaves a stream cancels its
// generation.
func TestAnthropicDisconnect(t *testing.T) {
	f := anthropicStart(t)
	ctx, cancel := context.WithCancel(context.Background())
	st := f.client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "stories", MaxTokens: 200, Temperature: anthropic.Float(1),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Tell me a long story."))}})
	if !st.Next() {
		t.Fatal(st.Err())
	}
	cancel()
	st.Close()
	deadline := time.Now().Add(5 * time.Second)
	for f.srv.Stats().Running+f.srv.Stats().Waiting > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still running: %+v", f.srv.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAnthropicThinkingEvents: a scripted reply with reasoning, text and
// a tool call in Qwen3's syntax, fed in small pieces, becomes a thinking
// block, a text block and a tool_use block, streamed (golden) and whole
// (golden), the stream accumulating to the whole message.
func TestAnthropicThinkingEvents(t *testing.T) {
	f := anthropicStart(t)
	const script = "<think>\nThe user wants the weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	prompt := anthropicRendered(t, f.qwen, `{"model":"qwen3","messages":[{"role":"user","content":"Weather in Paris?"}]}`)
	ar := &anthropicReply{reply: &reply{m: f.qwen, id: "msg_000000000000000000000000", nPrompt: 20, prompt: prompt, reasoning: ReasoningAuto,
		tools: &toolPlan{tools: []chat.Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}, format: f.qwen.Chat.ToolFormat(), choice: "auto"}}}
	res := engine.Result{FinishReason: engine.FinishStop, Detail: engine.DetailEOG, Generated: 33}
	whole := ar.message(script, res, nil)
	b, _ := json.MarshalIndent(whole, "", "  ")
	anthropicGolden(t, filepath.Join("testdata", "anthropic", "scripted_thinking_tool.response.golden"), anthropicNormalize(string(b)+"\n"))
	var sse strings.Builder
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(&sse, "event: %s\ndata: %s\n\n", event, b)
	}
	send("message_start", ar.start())
	send("ping", anthropicType{Type: "ping"})
	p := ar.parser()
	ev := &anthropicEvents{send: send, format: ar.toolFormat()}
	for i := 0; i < len(script); i += 3 {
		ev.add(p.Add(script[i:min(i+3, len(script))]))
	}
	ev.add(p.Finish())
	ev.end()
	send("message_delta", ar.end(res, nil, ev.calls > 0))
	send("message_stop", anthropicType{Type: "message_stop"})
	anthropicGolden(t, filepath.Join("testdata", "anthropic", "scripted_thinking_tool.stream.golden"), anthropicNormalize(sse.String()))
	var w anthropic.Message
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	acc := anthropicAccumulate(t, sse.String())
	if len(w.Content) != 3 || w.Content[0].Thinking != "The user wants the weather." || strings.TrimSpace(w.Content[1].Text) != "Let me check." ||
		w.Content[2].Name != "get_weather" || w.StopReason != "tool_use" {
		t.Fatalf("whole %s", w.RawJSON())
	}
	if len(acc.Content) != 3 || acc.Content[0].Thinking != w.Content[0].Thinking || strings.TrimSpace(acc.Content[1].Text) != "Let me check." ||
		!anthropicSameJSON(acc.Content[2].Input, w.Content[2].Input) || acc.StopReason != w.StopReason {
		t.Errorf("streamed %s\nwhole %s", acc.RawJSON(), w.RawJSON())
	}
}
