package chat

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/tokenizer"
)

// modernTemplate is a template of testdata/modern by file name.
func modernTemplate(t testing.TB, file string) *Template {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata/modern/templates", file))
	if err != nil {
		t.Fatal(err)
	}
	return &Template{Name: file, Source: string(src)}
}

var (
	replyTools = []Tool{{Name: "get_weather"}, {Name: "get_time"}, {Name: "empty_args"}}
	callParis  = ToolCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}
	callTime   = ToolCall{Name: "get_time", Arguments: `{"tz":"CET"}`}
)

type replyCase struct {
	name      string
	reasoning bool   // extract (else reasoning_format none)
	tools     bool   // the request has tools
	prompt    string // the prompt's end
	text      string // the reply as generated (control tokens spelled)
	want      Delta
}

// TestReplyFormats: replies in each family's syntax (the cases of
// llama.cpp's test-chat.cpp for these templates) split into reasoning,
// answer and calls; streamed in pieces of any size they split the same,
// and no piece of a marker is ever released as text.
func TestReplyFormats(t *testing.T) {
	byTemplate := map[string][]replyCase{
		"openai-gpt-oss-120b.jinja": {
			{name: "final", reasoning: true, text: "<|channel|>final<|message|>Hello, world!\nWhat's up?", want: Delta{Content: "Hello, world!\nWhat's up?"}},
			{name: "commentary preamble", reasoning: true, text: "<|channel|>commentary<|message|>Hello, world!", want: Delta{Content: "Hello, world!"}},
			{name: "analysis then final", reasoning: true, text: "<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant<|channel|>final<|message|>Hello, world!\nWhat's up?",
				want: Delta{Reasoning: "I'm\nthinking", Content: "Hello, world!\nWhat's up?"}},
			{name: "none keeps analysis", text: "<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant<|channel|>final<|message|>Hello, world!\nWhat's up?",
				want: Delta{Content: "<|channel|>analysis<|message|>I'm\nthinking<|end|>Hello, world!\nWhat's up?"}},
			{name: "analysis cut off", reasoning: true, text: "<|channel|>analysis<|message|>I'm\nthinking", want: Delta{Reasoning: "I'm\nthinking"}},
			{name: "call, recipient in role", reasoning: true, tools: true, text: " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}", want: Delta{Calls: []ToolCall{callParis}}},
			{name: "call, recipient in channel", reasoning: true, tools: true, text: "<|channel|>analysis to=functions.get_weather<|message|>{\"city\": \"Paris\"}", want: Delta{Calls: []ToolCall{callParis}}},
			{name: "call with constraint", reasoning: true, tools: true, text: " to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>{\"city\": \"Paris\"}", want: Delta{Calls: []ToolCall{callParis}}},
			{name: "analysis then call", reasoning: true, tools: true,
				text: "<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
				want: Delta{Reasoning: "I'm\nthinking", Calls: []ToolCall{callParis}}},
			{name: "call ended by <|end|>", reasoning: true, tools: true,
				text: " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|end|><|start|>assistant to=functions.get_time<|channel|>commentary json<|message|>{\"tz\": \"CET\"}",
				want: Delta{Calls: []ToolCall{callParis, callTime}}},
			{name: "unsolicited call dropped", reasoning: true, tools: true,
				text: "<|channel|>analysis<|message|>I will run python<|end|><|start|>assistant to=container.exec<|channel|>commentary<|message|>python3 -c 'print(1)'",
				want: Delta{Reasoning: "I will run python"}},
			{name: "call without tools dropped", reasoning: true, text: " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}", want: Delta{}},
			{name: "unknown function dropped", reasoning: true, tools: true, text: " to=functions.launch<|channel|>commentary json<|message|>{}", want: Delta{}},
			{name: "stray commentary to=assistant", reasoning: true,
				text: "<|channel|>commentary to=assistant<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant<|channel|>commentary to=assistant<|channel|>final<|message|>Hello",
				want: Delta{Reasoning: "I'm\nthinking", Content: "Hello"}},
			{name: "not harmony", reasoning: true, text: "Hello <b>there</b>", want: Delta{Content: "Hello <b>there</b>"}},
		},
		"mistralai-Ministral-3-14B-Reasoning-2512.jinja": {
			{name: "plain", reasoning: true, text: "Hello, world!\nWhat's up?", want: Delta{Content: "Hello, world!\nWhat's up?"}},
			{name: "none", text: "[THINK]I'm\nthinking[/THINK]Hello, world!", want: Delta{Content: "[THINK]I'm\nthinking[/THINK]Hello, world!"}},
			{name: "think", reasoning: true, text: "[THINK]I'm\nthinking[/THINK]Hello, world!\nWhat's up?", want: Delta{Reasoning: "I'm\nthinking", Content: "Hello, world!\nWhat's up?"}},
			{name: "call", reasoning: true, tools: true, text: `[TOOL_CALLS]get_weather[ARGS]{"city":"Paris"}`, want: Delta{Calls: []ToolCall{callParis}}},
			{name: "think then call", reasoning: true, tools: true, text: "[THINK]I'm\nthinking[/THINK]" + `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`, want: Delta{Reasoning: "I'm\nthinking", Calls: []ToolCall{callParis}}},
			{name: "parallel", reasoning: true, tools: true, text: `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"tz": "CET"}`, want: Delta{Calls: []ToolCall{callParis, callTime}}},
			{name: "call id", reasoning: true, tools: true, text: `Sure.[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"city": "Paris"}`, want: Delta{Content: "Sure.", Calls: []ToolCall{callParis}}},
			{name: "marker inside reasoning", reasoning: true, tools: true,
				text: "[THINK]Let me think about [TOOL_CALLS]get_weather[ARGS]{\"city\":\"Rome\"} and more[/THINK]" + `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}`,
				want: Delta{Reasoning: "Let me think about [TOOL_CALLS]get_weather[ARGS]{\"city\":\"Rome\"} and more", Calls: []ToolCall{callParis}}},
			{name: "bad arguments stay text", reasoning: true, tools: true, text: `[TOOL_CALLS]get_weather[ARGS]{"city": `, want: Delta{Content: `[TOOL_CALLS]get_weather[ARGS]{"city": `}},
		},
		"google-gemma-4-31B-it.jinja": {
			{name: "plain", reasoning: true, text: "Hello, world!", want: Delta{Content: "Hello, world!"}},
			{name: "thought", reasoning: true, text: "<|channel>thought\nI'm\nthinking<channel|>Hello, world!\nWhat's up?", want: Delta{Reasoning: "I'm\nthinking", Content: "Hello, world!\nWhat's up?"}},
			{name: "empty thought", reasoning: true, text: "<|channel>thought<channel|>Hello, world!", want: Delta{Content: "Hello, world!"}},
			{name: "none", text: "<|channel>thought\nI'm\nthinking<channel|>Hello", want: Delta{Content: "<|channel>thought\nI'm\nthinking<channel|>Hello"}},
			{name: "stray end and trailing thought", reasoning: true, text: "Hello<|channel>thought\n<channel|><channel|>", want: Delta{Content: "Hello"}},
			{name: "empty channel", reasoning: true, text: "<|channel><|channel>thought\nhm<channel|>Hi", want: Delta{Reasoning: "hm", Content: "Hi"}},
			{name: "call", reasoning: true, tools: true, text: "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>", want: Delta{Calls: []ToolCall{callParis}}},
			{name: "empty args", reasoning: true, tools: true, text: "<|tool_call>call:empty_args{}<tool_call|>", want: Delta{Calls: []ToolCall{{Name: "empty_args", Arguments: "{}"}}}},
			{name: "content then call", reasoning: true, tools: true, text: "Hello, world!\nWhat's up?<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>", want: Delta{Content: "Hello, world!\nWhat's up?", Calls: []ToolCall{callParis}}},
			{name: "thought then call", reasoning: true, tools: true, text: "<|channel>thought\nI'm\nthinking<channel|><|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>", want: Delta{Reasoning: "I'm\nthinking", Calls: []ToolCall{callParis}}},
			{name: "parallel", reasoning: true, tools: true, text: "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|><|tool_call>call:get_time{tz:<|\"|>CET<|\"|>}<tool_call|>", want: Delta{Calls: []ToolCall{callParis, callTime}}},
			{name: "values", reasoning: true, tools: true, text: "<|tool_call>call:get_time{n:-7,f:3.14,b:true,x:null,l:[<|\"|>a<|\"|>,1],o:{k:<|\"|>v, \"q\"<|\"|>}}<tool_call|>",
				want: Delta{Calls: []ToolCall{{Name: "get_time", Arguments: `{"n":-7,"f":3.14,"b":true,"x":null,"l":["a",1],"o":{"k":"v, \"q\""}}`}}}},
			{name: "json arguments", reasoning: true, tools: true, text: `<|tool_call>call:get_weather{"city": "Paris"}`, want: Delta{Calls: []ToolCall{callParis}}},
			{name: "bad call stays text", reasoning: true, tools: true, text: "<|tool_call>call:get_weather{city:Paris}<tool_call|>", want: Delta{Content: "<|tool_call>call:get_weather{city:Paris}<tool_call|>"}},
		},
		"HuggingFaceTB-SmolLM3-3B.jinja": {
			{name: "think", reasoning: true, prompt: "<|im_start|>assistant\n", text: "<think>\nI'm\nthinking\n</think>\nHello, world!", want: Delta{Reasoning: "I'm\nthinking", Content: "Hello, world!"}},
			{name: "no_think", reasoning: true, prompt: "<|im_start|>assistant\n<think>\n\n</think>\n", text: "Hello, world!", want: Delta{Content: "Hello, world!"}},
			{name: "hermes call", reasoning: true, tools: true, text: "<think>\nweather\n</think>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", want: Delta{Reasoning: "weather", Calls: []ToolCall{callParis}}},
		},
		"ibm-granite-granite-3.3-2B-Instruct.jinja": {
			{name: "plain", reasoning: true, text: "Hello, world!\nWhat's up?", want: Delta{Content: "Hello, world!\nWhat's up?"}},
			{name: "think", reasoning: true, text: "<think>I'm\nthinking</think>Hello, world!\nWhat's up?", want: Delta{Reasoning: "I'm\nthinking", Content: "Hello, world!\nWhat's up?"}},
			{name: "think and response", reasoning: true, text: "<think>I'm\nthinking</think><response>Hello, world!\nWhat's up?</response>", want: Delta{Reasoning: "I'm\nthinking", Content: "Hello, world!\nWhat's up?"}},
			{name: "call", reasoning: true, tools: true, text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]`, want: Delta{Calls: []ToolCall{callParis}}},
			{name: "two calls", reasoning: true, tools: true, text: `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"tz": "CET"}}]`, want: Delta{Calls: []ToolCall{callParis, callTime}}},
		},
		"Qwen-Qwen3-0.6B.jinja": {
			{name: "think", reasoning: true, text: "<think>\nokay\n</think>\n\nHello", want: Delta{Reasoning: "okay", Content: "Hello"}},
			{name: "none", text: "<think>\nokay\n</think>\n\nHello", want: Delta{Content: "<think>\nokay\n</think>\n\nHello"}},
			{name: "cut off in thought", reasoning: true, text: "<think>\nstill going  ", want: Delta{Reasoning: "still going"}},
			{name: "hermes call after thought", reasoning: true, tools: true, text: "<think>\nok\n</think>\n\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>", want: Delta{Reasoning: "ok", Calls: []ToolCall{callTime}}},
			{name: "<think> later is text", reasoning: true, text: "Use <think> tags.", want: Delta{Content: "Use <think> tags."}},
		},
		"google-gemma-3-it.jinja": {
			{name: "plain", reasoning: true, text: "Hello <think>x</think>", want: Delta{Content: "Hello <think>x</think>"}},
		},
	}
	// DeepSeek-R1's template opens the thinking at the end of the prompt.
	r1 := &Template{Name: "r1", Source: "{{'<｜Assistant｜><think>\\n'}}{{ content.split('</think>')[-1] }}"}
	r1Cases := []replyCase{
		{name: "open in prompt", reasoning: true, prompt: "<｜Assistant｜><think>\n", text: "I'm\nthinking\n</think>\n\nHello", want: Delta{Reasoning: "I'm\nthinking", Content: "Hello"}},
		{name: "open in prompt, none", prompt: "<｜Assistant｜><think>\n", text: "I'm thinking</think>Hello", want: Delta{Content: "<think>\nI'm thinking</think>Hello"}},
		{name: "closed prompt", reasoning: true, prompt: "<｜Assistant｜>", text: "Hello", want: Delta{Content: "Hello"}},
	}
	run := func(t *testing.T, tp *Template, c replyCase) {
		o := ReplyOptions{Reasoning: c.reasoning, Prompt: c.prompt}
		if c.tools {
			o.Tools = replyTools
		}
		got := tp.ParseReply(c.text, o)
		if !sameDelta(got, c.want) {
			t.Fatalf("got %+v\nwant %+v", got, c.want)
		}
		for _, step := range []int{1, 2, 3, 5, 8} {
			p := tp.NewReplyParser(o)
			var all Delta
			for k := 0; k < len(c.text); k += step {
				all.add(p.Add(c.text[k:min(k+step, len(c.text))]))
			}
			all.add(p.Finish())
			if !sameDelta(all, c.want) {
				t.Fatalf("streamed by %d: got %+v\nwant %+v", step, all, c.want)
			}
		}
	}
	for file, cases := range byTemplate {
		tp := modernTemplate(t, file)
		for _, c := range cases {
			t.Run(strings.TrimSuffix(file, ".jinja")+"/"+c.name, func(t *testing.T) { run(t, tp, c) })
		}
	}
	for _, c := range r1Cases {
		t.Run("r1/"+c.name, func(t *testing.T) { run(t, r1, c) })
	}
}

// sameDelta compares deltas, the answer without the whitespace at its
// ends when there are calls (streamed answers are not trimmed).
func sameDelta(a, b Delta) bool {
	if len(a.Calls) > 0 || len(b.Calls) > 0 {
		a.Content, b.Content = strings.TrimSpace(a.Content), strings.TrimSpace(b.Content)
	}
	return a.Reasoning == b.Reasoning && a.Content == b.Content && (len(a.Calls) == 0 && len(b.Calls) == 0 || reflect.DeepEqual(a.Calls, b.Calls))
}

// TestFormatsOfTemplates: each family's template is recognized.
func TestFormatsOfTemplates(t *testing.T) {
	for file, want := range map[string]struct {
		r ReasoningFormat
		f ToolFormat
	}{
		"openai-gpt-oss-120b.jinja":                      {ReasoningHarmony, ToolsHarmony},
		"mistralai-Ministral-3-14B-Reasoning-2512.jinja": {ReasoningMistral, ToolsMistral3},
		"google-gemma-4-31B-it.jinja":                    {ReasoningGemma4, ToolsGemma4},
		"google-gemma-4-31B-it-interleaved.jinja":        {ReasoningGemma4, ToolsGemma4},
		"HuggingFaceTB-SmolLM3-3B.jinja":                 {ReasoningThink, ToolsHermes},
		"ibm-granite-granite-3.3-2B-Instruct.jinja":      {ReasoningThink, ToolsGranite},
		"Qwen-Qwen3-0.6B.jinja":                          {ReasoningThink, ToolsHermes},
		"google-gemma-3-it.jinja":                        {ReasoningNone, ToolsGeneric},
	} {
		tp := modernTemplate(t, file)
		if r, f := tp.ReasoningFormat(), tp.ToolFormat(); r != want.r || f != want.f {
			t.Errorf("%s: %q %q, want %q %q", file, r, f, want.r, want.f)
		}
	}
}

// FuzzReplyParser: any reply, in any pieces, parses without a panic, and
// streaming it releases exactly what parsing it whole does.
func FuzzReplyParser(f *testing.F) {
	seeds := []string{
		"<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>Hi",
		" to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}",
		"[THINK]a[/THINK][TOOL_CALLS]get_weather[ARGS]{\"city\":\"Paris\"}",
		"<|channel>thought\nx<channel|>y<|tool_call>call:get_time{tz:<|\"|>CET<|\"|>}<tool_call|>",
		"<think>\nx\n</think>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
		"<think>a</think><response>b</response><|tool_call|>[{\"name\": \"get_time\", \"arguments\": {}}]",
	}
	for i, s := range seeds {
		f.Add(s, uint8(i), uint8(3), true, true)
	}
	files := []string{"openai-gpt-oss-120b.jinja", "mistralai-Ministral-3-14B-Reasoning-2512.jinja", "google-gemma-4-31B-it.jinja",
		"HuggingFaceTB-SmolLM3-3B.jinja", "ibm-granite-granite-3.3-2B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja"}
	tps := make([]*Template, len(files))
	for i, file := range files {
		tps[i] = modernTemplate(f, file)
	}
	f.Fuzz(func(t *testing.T, text string, which, step uint8, reasoning, tools bool) {
		tp := tps[int(which)%len(tps)]
		o := ReplyOptions{Reasoning: reasoning}
		if tools {
			o.Tools = replyTools
		}
		whole := tp.ParseReply(text, o)
		n := int(step%16) + 1
		p := tp.NewReplyParser(o)
		var all Delta
		for k := 0; k < len(text); k += n {
			all.add(p.Add(text[k:min(k+n, len(text))]))
		}
		all.add(p.Finish())
		if !sameDelta(all, whole) {
			t.Fatalf("streamed by %d: %#v\nwhole: %#v", n, all, whole)
		}
	})
}

// TestToolGrammarNewFormats: a required call in each new family's syntax
// is its prefix (the family's markers, control tokens included) and text
// the grammar accepts, and prefix and text parse back into the call.
func TestToolGrammarNewFormats(t *testing.T) {
	schema := []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	one := []Tool{{Name: "get_weather", Parameters: schema}}
	two := []Tool{{Name: "get_weather", Parameters: schema}, {Name: "get_time"}}
	for _, c := range []struct {
		file   string
		tools  []Tool
		prefix string
		text   string
	}{
		{"openai-gpt-oss-120b.jinja", one, " to=functions.get_weather<|channel|>commentary json<|message|>", `{"city": "Paris"}`},
		{"openai-gpt-oss-120b.jinja", two, "<|channel|>commentary to=functions.", `get_weather json<|message|>{"city": "Paris"}`},
		{"mistralai-Ministral-3-14B-Reasoning-2512.jinja", one, "[TOOL_CALLS]get_weather[ARGS]", `{"city": "Paris"}`},
		{"mistralai-Ministral-3-14B-Reasoning-2512.jinja", two, "[TOOL_CALLS]", `get_weather[ARGS]{"city": "Paris"}`},
		{"google-gemma-4-31B-it.jinja", one, "<|tool_call>call:get_weather", `{"city": "Paris"}`},
		{"google-gemma-4-31B-it.jinja", two, "<|tool_call>call:", `get_weather{"city": "Paris"}`},
		{"ibm-granite-granite-3.3-2B-Instruct.jinja", two, "<|tool_call|>", `[{"name": "get_weather", "arguments": {"city": "Paris"}}]`},
	} {
		tp := modernTemplate(t, c.file)
		g, prefix, _, err := ToolGrammar(tp.ToolFormat(), c.tools, false)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if prefix != c.prefix {
			t.Errorf("%s: prefix %q, want %q", c.file, prefix, c.prefix)
		}
		m := g.NewMatcher()
		if err := m.Accept([]byte(c.text)); err != nil {
			t.Fatalf("%s: the grammar refuses %q: %v", c.file, c.text, err)
		}
		if !m.Complete() {
			t.Errorf("%s: %q does not complete the grammar", c.file, c.text)
		}
		d := tp.ParseReply(c.text, ReplyOptions{Reasoning: true, Tools: c.tools, Prefix: prefix})
		if len(d.Calls) != 1 || d.Calls[0] != callParis || strings.TrimSpace(d.Content) != "" {
			t.Errorf("%s: parsed %+v", c.file, d)
		}
	}
}

// TestEventText: the control tokens a reply is parsed by come back into
// its text (detokenized text leaves them out), the others do not, and
// tool markers only when the request has tools.
func TestEventText(t *testing.T) {
	v := &tokenizer.Vocab{Kind: tokenizer.BPE, BOS: -1, EOS: -1,
		Tokens: []string{"Hi", "<|channel|>", "<|message|>", "<|im_end|>", "[TOOL_CALLS]", "[ARGS]", "[THINK]"},
		Types:  []tokenizer.TokenType{tokenizer.Normal, tokenizer.Control, tokenizer.Control, tokenizer.Control, tokenizer.Control, tokenizer.Control, tokenizer.Control}}
	harmony := modernTemplate(t, "openai-gpt-oss-120b.jinja")
	harmony.vocab = v
	mistral := modernTemplate(t, "mistralai-Ministral-3-14B-Reasoning-2512.jinja")
	mistral.vocab = v
	for _, c := range []struct {
		tp    *Template
		tools bool
		id    int32
		text  string
		want  string
	}{
		{harmony, false, 1, "", "<|channel|>"},
		{harmony, false, 2, "x", "x<|message|>"}, // text the token released comes before it
		{harmony, false, 3, "", ""},              // not a marker
		{harmony, false, 0, "Hi", "Hi"},
		{mistral, false, 6, "", "[THINK]"},
		{mistral, false, 4, "", ""}, // a tool marker without tools
		{mistral, true, 4, "", "[TOOL_CALLS]"},
		{mistral, true, 5, "", "[ARGS]"},
		{mistral, true, -1, "tail", "tail"},
	} {
		o := ReplyOptions{Reasoning: true}
		if c.tools {
			o.Tools = replyTools
		}
		p := c.tp.NewReplyParser(o)
		if got := p.EventText(engine.TokenEvent{ID: c.id, Text: c.text}); got != c.want {
			t.Errorf("%s token %d: %q, want %q", c.tp.Name, c.id, got, c.want)
		}
	}
}
