package server_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/server"
)

// reasoningServer serves a random-weight model laid out by one of the
// 2025-26 templates of chat/testdata/modern.
func reasoningServer(t *testing.T, template string, cfg server.Config) *fixture {
	t.Helper()
	path := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 2048, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	tp, err := chat.ForModel(e, filepath.Join("..", "chat", "testdata", "modern", "templates", template))
	if err != nil {
		t.Fatal(err)
	}
	cfg.APIKey = testKey
	srv := server.New(cfg)
	m, err := srv.Add("", e, tp)
	if err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	return serve(t, srv, e, m.Name)
}

// answer is a chat reply as a client puts it together.
type answer struct {
	content, reasoning string
	calls              []string // name(arguments)
	finish             string
	hasReasoning       bool // the message has reasoning_content (whole)
}

// ask posts a chat request whose reply the grammar forces to be text,
// and reads the answer whole or streamed.
func ask(t *testing.T, f *fixture, body map[string]any, text string, stream bool) answer {
	t.Helper()
	body["messages"] = []map[string]any{{"role": "user", "content": "Hi"}}
	body["grammar"] = "root ::= " + grammar.Literal(text)
	body["stream"] = stream
	body["max_tokens"] = 400
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", f.ts.URL+"/v1/chat/completions", strings.NewReader(string(b)))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		var e map[string]any
		json.NewDecoder(resp.Body).Decode(&e)
		t.Fatalf("status %d: %v", resp.StatusCode, e)
	}
	type call struct {
		Function struct{ Name, Arguments string }
	}
	var a answer
	if !stream {
		var r struct {
			Choices []struct {
				Message struct {
					Content          *string
					ReasoningContent *string `json:"reasoning_content"`
					ToolCalls        []call  `json:"tool_calls"`
				}
				FinishReason string `json:"finish_reason"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		msg := r.Choices[0].Message
		if msg.Content != nil {
			a.content = *msg.Content
		}
		if msg.ReasoningContent != nil {
			a.reasoning, a.hasReasoning = *msg.ReasoningContent, true
		}
		for _, c := range msg.ToolCalls {
			a.calls = append(a.calls, c.Function.Name+"("+c.Function.Arguments+")")
		}
		a.finish = r.Choices[0].FinishReason
		return a
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content          string
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []call `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		if err := json.Unmarshal([]byte(line), &ch); err != nil {
			t.Fatal(err)
		}
		for _, c := range ch.Choices {
			a.content += c.Delta.Content
			a.reasoning += c.Delta.ReasoningContent
			for _, tc := range c.Delta.ToolCalls {
				a.calls = append(a.calls, tc.Function.Name+"("+tc.Function.Arguments+")")
			}
			if c.FinishReason != nil {
				a.finish = *c.FinishReason
			}
		}
	}
	a.hasReasoning = a.reasoning != ""
	return a
}

var weatherTool = []map[string]any{{"type": "function", "function": map[string]any{"name": "get_weather", "description": "Get the weather.",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}

// TestReasoningContent: a reply's reasoning comes back as
// reasoning_content (delta.reasoning_content when streamed) in each
// family's syntax, and its tool calls as tool_calls; reasoning_format
// none leaves the reasoning in the content, deepseek-legacy returns it
// both ways (streamed: in the content only), as llama.cpp does.
func TestReasoningContent(t *testing.T) {
	for _, c := range []struct {
		template string
		body     map[string]any
		text     string
		want     answer
	}{
		{"HuggingFaceTB-SmolLM3-3B.jinja", nil, "<think>\nI am thinking\n</think>\nHello there", answer{reasoning: "I am thinking", content: "Hello there", finish: "stop"}},
		{"HuggingFaceTB-SmolLM3-3B.jinja", map[string]any{"reasoning_format": "none"}, "<think>\nI am thinking\n</think>\nHello there", answer{content: "<think>\nI am thinking\n</think>\nHello there", finish: "stop"}},
		{"HuggingFaceTB-SmolLM3-3B.jinja", map[string]any{"tools": weatherTool}, "<think>\nweather\n</think>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			answer{reasoning: "weather", calls: []string{`get_weather({"city":"Paris"})`}, finish: "tool_calls"}},
		{"openai-gpt-oss-120b.jinja", nil, "<|channel|>analysis<|message|>Hm, a greeting.<|end|><|start|>assistant<|channel|>final<|message|>Hello!",
			answer{reasoning: "Hm, a greeting.", content: "Hello!", finish: "stop"}},
		{"openai-gpt-oss-120b.jinja", map[string]any{"reasoning_format": "none"}, "<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant<|channel|>final<|message|>Hello!",
			answer{content: "<|channel|>analysis<|message|>Hm.<|end|>Hello!", finish: "stop"}},
		{"openai-gpt-oss-120b.jinja", map[string]any{"tools": weatherTool}, "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}",
			answer{reasoning: "Need weather.", calls: []string{`get_weather({"city":"Paris"})`}, finish: "tool_calls"}},
		{"mistralai-Ministral-3-14B-Reasoning-2512.jinja", map[string]any{"tools": weatherTool}, "[THINK]Weather, then.[/THINK][TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}",
			answer{reasoning: "Weather, then.", calls: []string{`get_weather({"city":"Paris"})`}, finish: "tool_calls"}},
		{"google-gemma-4-31B-it.jinja", map[string]any{"tools": weatherTool}, "<|channel>thought\nWeather.<channel|>Let me look.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
			answer{reasoning: "Weather.", content: "Let me look.", calls: []string{`get_weather({"city":"Paris"})`}, finish: "tool_calls"}},
		{"ibm-granite-granite-3.3-2B-Instruct.jinja", nil, "<think>Easy.</think><response>Hello!</response>", answer{reasoning: "Easy.", content: "Hello!", finish: "stop"}},
		{"ibm-granite-granite-3.3-2B-Instruct.jinja", map[string]any{"tools": weatherTool}, `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]`,
			answer{calls: []string{`get_weather({"city":"Paris"})`}, finish: "tool_calls"}},
	} {
		f := reasoningServer(t, c.template, server.Config{})
		for _, stream := range []bool{false, true} {
			body := map[string]any{}
			for k, v := range c.body {
				body[k] = v
			}
			got := ask(t, f, body, c.text, stream)
			want := c.want
			want.hasReasoning = want.reasoning != ""
			if got.content != want.content || got.reasoning != want.reasoning || got.hasReasoning != want.hasReasoning ||
				strings.Join(got.calls, ";") != strings.Join(want.calls, ";") || got.finish != want.finish {
				t.Errorf("%s %v stream=%v:\n got %+v\nwant %+v", c.template, c.body, stream, got, want)
			}
		}
	}
	// deepseek-legacy: the reasoning apart and in the content; streamed,
	// in the content only. The server's default applies without the field.
	f := reasoningServer(t, "Qwen-Qwen3-0.6B.jinja", server.Config{ReasoningFormat: server.ReasoningDeepSeekLegacy})
	text := "<think>\nokay\n</think>\n\nHi"
	if got := ask(t, f, map[string]any{}, text, false); got.content != text || got.reasoning != "okay" {
		t.Errorf("deepseek-legacy: %+v", got)
	}
	if got := ask(t, f, map[string]any{}, text, true); got.content != text || got.reasoning != "" {
		t.Errorf("deepseek-legacy streamed: %+v", got)
	}
	if got := ask(t, f, map[string]any{"reasoning_format": "auto"}, text, true); got.content != "Hi" || got.reasoning != "okay" {
		t.Errorf("auto over the server's deepseek-legacy: %+v", got)
	}
}

// TestReasoningRequestFields: chat_template_kwargs and reasoning_effort
// reach the template (SmolLM3 without thinking writes a longer prompt,
// gpt-oss its reasoning level), an assistant turn's reasoning_content is
// taken, and bad values are 400s.
func TestReasoningRequestFields(t *testing.T) {
	f := reasoningServer(t, "HuggingFaceTB-SmolLM3-3B.jinja", server.Config{})
	promptTokens := func(extra string) int {
		t.Helper()
		resp, body := post(t, f.ts.URL+"/v1/chat/completions", testKey, `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":1`+extra+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: status %d %v", extra, resp.StatusCode, body)
		}
		return int(body["usage"].(map[string]any)["prompt_tokens"].(float64))
	}
	think, noThink := promptTokens(""), promptTokens(`,"chat_template_kwargs":{"enable_thinking":false}`)
	if think == noThink {
		t.Errorf("enable_thinking false: the prompt did not change (%d tokens)", think)
	}
	if got := promptTokens(`,"reasoning_effort":"none"`); got != noThink {
		t.Errorf("reasoning_effort none: %d prompt tokens, want %d (thinking off)", got, noThink)
	}
	g := reasoningServer(t, "openai-gpt-oss-120b.jinja", server.Config{})
	post1 := func(body string) (int, map[string]any) {
		resp, out := post(t, g.ts.URL+"/v1/chat/completions", testKey, body)
		return resp.StatusCode, out
	}
	_, low := post1(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":1,"reasoning_effort":"low"}`)
	_, long := post1(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":1,"reasoning_effort":"a very long and unusual level"}`)
	if low["usage"].(map[string]any)["prompt_tokens"] == long["usage"].(map[string]any)["prompt_tokens"] {
		t.Errorf("reasoning_effort does not reach the template")
	}
	history := `{"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":"","reasoning_content":"Need a tool.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"c1","content":"sunny"}],"max_tokens":1}`
	if status, out := post1(history); status != 200 {
		t.Errorf("reasoning_content in history: %d %v", status, out)
	}
	for _, bad := range []string{`"reasoning_format":"verbose"`, `"chat_template_kwargs":[1]`, `"chat_template_kwargs":{"enable_thinking":"no"}`, `"chat_template_kwargs":{"messages":[]}`} {
		if status, _ := post1(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":1,` + bad + `}`); status != 400 {
			t.Errorf("%s: status %d, want 400", bad, status)
		}
	}
}
