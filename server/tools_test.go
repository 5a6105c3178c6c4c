package server_test

import (
	"context"
	"encoding/json"
	"github.com/loom-inference/loom/chat"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/server"
)

// The tools of the tool tests: nested, bounded arguments.
var testTools = map[string]string{
	"get_weather": `{"type": "object", "properties": {
		"city": {"type": "string", "minLength": 1, "maxLength": 24},
		"unit": {"enum": ["celsius", "fahrenheit"]},
		"days": {"type": "integer", "minimum": 1, "maximum": 14}},
		"required": ["city", "days"], "additionalProperties": false}`,
	"book_table": `{"type": "object", "properties": {
		"date": {"type": "string", "format": "date"},
		"guests": {"type": "integer", "minimum": 1, "maximum": 20},
		"name": {"type": "string", "pattern": "^[A-Z][a-z]{1,12}$"},
		"notes": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 3}},
		"required": ["date", "guests", "name"], "additionalProperties": false}`,
}

func compileSchema(t *testing.T, text string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, text string) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not JSON: %q: %v", text, err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatalf("%q does not validate: %v", text, err)
	}
}

// toolFamilies are the chat templates of each tool-call syntax.
var toolFamilies = []struct {
	format   chat.ToolFormat
	template string // a shared template file, or a built-in name
}{
	{chat.ToolsHermes, "Qwen-Qwen2.5-7B-Instruct.jinja"},
	{chat.ToolsLlama3, "meta-llama-Llama-3.2-3B-Instruct.jinja"},
	{chat.ToolsMistral, "mistralai-Mistral-Nemo-Instruct-2407.jinja"},
	{chat.ToolsGeneric, "chatml"},
	// The 2025-26 families (chat/testdata/modern).
	{chat.ToolsMistral3, "modern/mistralai-Ministral-3-14B-Reasoning-2512.jinja"},
	{chat.ToolsGranite, "modern/ibm-granite-granite-3.3-2B-Instruct.jinja"},
	{chat.ToolsGemma4, "modern/google-gemma-4-31B-it.jinja"},
	{chat.ToolsHarmony, "modern/openai-gpt-oss-120b.jinja"},
}

// TestToolChoiceRequired: for each template family, tool_choice required
// (and a named function) on a random-weight model produces parsed
// tool_calls whose arguments validate against the function's schema,
// whole and streamed (accumulated with the SDK's own accumulator).
func TestToolChoiceRequired(t *testing.T) {
	shared_ := testmodels.Shared(t)
	path := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
	schemas := map[string]*jsonschema.Schema{}
	var tools []openai.ChatCompletionToolUnionParam
	for _, name := range []string{"get_weather", "book_table"} {
		schemas[name] = compileSchema(t, testTools[name])
		var params shared.FunctionParameters
		if err := json.Unmarshal([]byte(testTools[name]), &params); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: name, Description: openai.String("a test tool"), Parameters: params, Strict: openai.Bool(true)}))
	}
	for _, fam := range toolFamilies {
		t.Run(string(fam.format), func(t *testing.T) {
			tmpl := fam.template
			if name, ok := strings.CutPrefix(tmpl, "modern/"); ok {
				tmpl = filepath.Join("..", "chat", "testdata", "modern", "templates", name)
			} else if strings.HasSuffix(tmpl, ".jinja") {
				tmpl = filepath.Join(shared_, "models", "chat-templates", tmpl)
			}
			e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 2048, Parallel: 4})
			if err != nil {
				t.Fatal(err)
			}
			tp, err := chat.ForModel(e, tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if got := tp.ToolFormat(); got != fam.format {
				t.Fatalf("template %s: format %s, want %s", fam.template, got, fam.format)
			}
			// Templates that print the date (Granite's) get a fixed one:
			// the seeds below were picked for replies to that prompt.
			day := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
			srv := server.New(server.Config{APIKey: testKey, Now: func() time.Time { return day }})
			m, err := srv.Add("", e, tp)
			if err != nil {
				t.Fatal(err)
			}
			srv.Ready()
			f := serve(t, srv, e, m.Name)
			ctx := context.Background()
			// Seeds whose random-weight replies close their list of calls
			// within max_tokens (the grammar allows any number of calls).
			for _, seed := range []int64{1, 4, 3} {
				p := openai.ChatCompletionNewParams{Model: f.model, MaxTokens: openai.Int(400), Temperature: openai.Float(1), Seed: openai.Int(seed),
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Book a table for two tomorrow.")},
					Tools:    tools, ToolChoice: openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}}
				if seed == 3 { // a named function, one call
					p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "book_table"})
				}
				check := func(how string, msg openai.ChatCompletionMessage, finish string) {
					if finish != "tool_calls" || len(msg.ToolCalls) == 0 {
						t.Fatalf("seed %d %s: finish %q, %d calls, content %q", seed, how, finish, len(msg.ToolCalls), msg.Content)
					}
					for _, c := range msg.ToolCalls {
						s, ok := schemas[c.Function.Name]
						if !ok {
							t.Fatalf("seed %d %s: call of unknown function %q", seed, how, c.Function.Name)
						}
						if seed == 3 && c.Function.Name != "book_table" {
							t.Fatalf("named book_table, called %s", c.Function.Name)
						}
						if c.ID == "" {
							t.Fatalf("call without id")
						}
						validate(t, s, c.Function.Arguments)
					}
					t.Logf("seed %d %s: %s(%s)", seed, how, msg.ToolCalls[0].Function.Name, msg.ToolCalls[0].Function.Arguments)
				}
				resp, err := f.client.Chat.Completions.New(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				check("whole", resp.Choices[0].Message, resp.Choices[0].FinishReason)
				st := f.client.Chat.Completions.NewStreaming(ctx, p)
				var acc openai.ChatCompletionAccumulator
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				check("streamed", acc.Choices[0].Message, acc.Choices[0].FinishReason)
			}
		})
	}
}

// serve starts an HTTP server for srv (closed with the test).
func serve(t *testing.T, srv *server.Server, e *engine.Engine, model string) *fixture {
	t.Helper()
	f := startHTTP(t, srv)
	t.Cleanup(srv.Close) // closes e
	f.e, f.model = e, model
	return f
}
