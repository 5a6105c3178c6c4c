package chat_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/loom-inference/loom/chat"
)

var weatherTools = []chat.Tool{{Name: "get_weather"}, {Name: "get_time"}}

// TestParseToolCalls: replies recorded in each family's syntax (as the
// models write them) parse into calls; text that is not a call stays text.
func TestParseToolCalls(t *testing.T) {
	w := chat.ToolCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}
	tm := chat.ToolCall{Name: "get_time", Arguments: `{"tz":"CET"}`}
	cases := []struct {
		f       chat.ToolFormat
		text    string
		content string
		calls   []chat.ToolCall
	}{
		{chat.ToolsHermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "", []chat.ToolCall{w}},
		{chat.ToolsHermes, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>", "Let me check.", []chat.ToolCall{w, tm}},
		{chat.ToolsHermes, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}", "", []chat.ToolCall{w}}, // arguments as a string, no closing tag
		{chat.ToolsHermes, "Paris is sunny.", "Paris is sunny.", nil},
		{chat.ToolsHermes, "<tool_call>\n{\"name\": \"launch\", \"arguments\": {}}\n</tool_call>", "<tool_call>\n{\"name\": \"launch\", \"arguments\": {}}\n</tool_call>", nil}, // unknown tool
		{chat.ToolsLlama3, `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []chat.ToolCall{w}},
		{chat.ToolsLlama3, `{"name": "get_weather", "parameters": {"city": "Paris"}}`, "", []chat.ToolCall{w}},
		{chat.ToolsLlama3, `{"name": "get_weather", "parameters": {"city": "Paris"}}; {"name": "get_time", "parameters": {"tz": "CET"}}`, "", []chat.ToolCall{w, tm}},
		{chat.ToolsLlama3, `{"answer": 42}`, `{"answer": 42}`, nil},
		{chat.ToolsLlama3, `The answer is {"x": 1}`, `The answer is {"x": 1}`, nil},
		{chat.ToolsMistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcdefghi"}]`, "", []chat.ToolCall{w}},
		{chat.ToolsMistral, `[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {"tz": "CET"}}]`, "", []chat.ToolCall{w, tm}},
		{chat.ToolsMistral, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": `, `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": `, nil}, // cut off
		{chat.ToolsGeneric, `{"name": "get_weather", "arguments": {"city": "Paris"}}`, "", []chat.ToolCall{w}},
		{chat.ToolsGeneric, `{"tool_call": {"name": "get_weather", "arguments": {"city": "Paris"}}}`, "", []chat.ToolCall{w}},
		{chat.ToolsGeneric, "  Hello there", "  Hello there", nil},
		{chat.ToolsMistral3, `Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{"tz": "CET"}`, "Sure.", []chat.ToolCall{w, tm}},
		{chat.ToolsMistral3, `[TOOL_CALLS]launch[ARGS]{}`, `[TOOL_CALLS]launch[ARGS]{}`, nil}, // unknown tool
		{chat.ToolsGranite, `<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]`, "", []chat.ToolCall{w}},
		{chat.ToolsGemma4, `Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|tool_call>call:get_time{tz:<|"|>CET<|"|>}<tool_call|>`, "Checking.", []chat.ToolCall{w, tm}},
		{chat.ToolsGemma4, `<|tool_call>call:get_weather{city:<|"|>Par`, `<|tool_call>call:get_weather{city:<|"|>Par`, nil}, // cut off
		{chat.ToolsHarmony, " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}", "", []chat.ToolCall{w}},
	}
	for i, c := range cases {
		content, calls := chat.ParseToolCalls(c.f, c.text, weatherTools)
		if content != c.content || !reflect.DeepEqual(calls, c.calls) {
			t.Errorf("case %d (%s): got %q %+v, want %q %+v", i, c.f, content, calls, c.content, c.calls)
		}
		// Streamed in small pieces, the same text and calls come out.
		for _, step := range []int{1, 2, 5} {
			ts := chat.NewToolStream(c.f, weatherTools)
			var got string
			var gotCalls []chat.ToolCall
			for k := 0; k < len(c.text); k += step {
				txt, cs := ts.Add(c.text[k:min(k+step, len(c.text))])
				got += txt
				gotCalls = append(gotCalls, cs...)
			}
			txt, cs := ts.Finish()
			got += txt
			gotCalls = append(gotCalls, cs...)
			if len(c.calls) > 0 && strings.TrimSpace(got) != c.content || !reflect.DeepEqual(gotCalls, c.calls) { // streamed text is not trimmed
				t.Errorf("case %d (%s) streamed by %d: got %q %+v, want %q %+v", i, c.f, step, got, gotCalls, c.content, c.calls)
			}
			if len(c.calls) == 0 && got != c.text {
				t.Errorf("case %d (%s) streamed by %d: text %q, want %q", i, c.f, step, got, c.text)
			}
		}
	}
}

// TestToolFormat: each shared template is recognized as its family.
func TestToolFormat(t *testing.T) {
	for src, want := range map[string]chat.ToolFormat{
		"{{ '<tool_call>' }}":              chat.ToolsHermes,
		"{{ '[TOOL_CALLS][' }}":            chat.ToolsMistral,
		"{{ '<|python_tag|>' }}":           chat.ToolsLlama3,
		"{{ '<|im_start|>' + m.content }}": chat.ToolsGeneric,
	} {
		tpl := &chat.Template{Source: src}
		if got := tpl.ToolFormat(); got != want {
			t.Errorf("%q: %s, want %s", src, got, want)
		}
	}
}
