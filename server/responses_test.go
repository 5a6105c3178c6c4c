package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/server"
)

// respUpdate reports whether -update was given: the golden files of
// testdata/responses are then rewritten. The flag is shared with any
// other test file of the package that defines it.
var respUpdate func() bool

func init() {
	if f := flag.Lookup("update"); f != nil {
		respUpdate = func() bool { return f.Value.String() == "true" }
		return
	}
	b := flag.Bool("update", false, "rewrite the respGolden files under testdata")
	respUpdate = func() bool { return *b }
}

// respServer serves the named models (the first is the fixture's):
// "stories" (TinyStories 656K, its own layout), "bert" (an embedding
// model), or a random-weight synthgguf model laid out by a real template:
// "qwen2.5" (Hermes tool calls), "smollm3" (<think> reasoning), "qwen3"
// (reasoning kept in the history).
func respServer(t *testing.T, names ...string) *fixture {
	t.Helper()
	srv := server.New(server.Config{APIKey: testKey})
	t.Cleanup(srv.Close)
	var first *server.Model
	for _, name := range names {
		var m *server.Model
		var err error
		switch name {
		case "stories":
			path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
			m, err = srv.Load(name, path, engine.Options{Threads: 2, CtxLen: 512}, "")
		case "bert":
			m, err = srv.Load(name, embedModel(t, "bert-mini"), engine.Options{Threads: 2}, "")
		default:
			tmpl := map[string]string{
				"qwen2.5": filepath.Join(testmodels.Shared(t), "models", "chat-templates", "Qwen-Qwen2.5-7B-Instruct.jinja"),
				"smollm3": filepath.Join("..", "chat", "testdata", "modern", "templates", "HuggingFaceTB-SmolLM3-3B.jinja"),
				"qwen3":   filepath.Join("..", "chat", "testdata", "modern", "templates", "Qwen-Qwen3-0.6B.jinja"),
			}[name]
			if tmpl == "" {
				t.Fatalf("no test model %q", name)
			}
			path := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
			e, lerr := engine.Load(path, engine.Options{Threads: 2, CtxLen: 2048, Parallel: 2})
			if lerr != nil {
				t.Fatal(lerr)
			}
			tp, terr := chat.ForModel(e, tmpl)
			if terr != nil {
				e.Close()
				t.Fatal(terr)
			}
			if m, err = srv.Add(name, e, tp); err != nil {
				e.Close()
			}
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if first == nil {
			first = m
		}
	}
	srv.Ready()
	f := startHTTP(t, srv)
	f.e, f.chat, f.model = first.Engine, first.Chat, first.Name
	return f
}

// respPost posts a JSON body and returns the status and the body.
func respPost(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, []byte(b.String())
}

var (
	respIDPattern   = regexp.MustCompile(`"((?:resp|msg|rs|fc)_[0-9a-f]{24}|call_[A-Za-z0-9]{24})"`)
	respTimePattern = regexp.MustCompile(`("(?:created_at|completed_at)":\s*)\d+`)
)

// respNormalize replaces what changes from run to run: ids (numbered by
// first appearance, so the same id reads the same) and times.
func respNormalize(b []byte) []byte {
	seen := map[string]string{}
	b = respIDPattern.ReplaceAllFunc(b, func(m []byte) []byte {
		id := string(m[1 : len(m)-1])
		if n, ok := seen[id]; ok {
			return []byte(`"` + n + `"`)
		}
		prefix := id[:strings.IndexByte(id, '_')]
		k := 0
		for _, v := range seen {
			if strings.HasPrefix(v, prefix+"_") {
				k++
			}
		}
		seen[id] = fmt.Sprintf("%s_%d", prefix, k+1)
		return []byte(`"` + seen[id] + `"`)
	})
	return respTimePattern.ReplaceAll(b, []byte(`${1}0`))
}

// respIndent lays a whole response out for its golden file, in the
// server's order.
func respIndent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, bytes.TrimSpace(b), "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func respGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if respUpdate() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs (run with -update to rewrite it):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

// TestResponsesGolden: each request of testdata/responses (*.request.json,
// its model one of respServer's, temperature 0) gives the response
// of *.response.json whole and the events of *.stream.txt streamed, on a
// server of its own (ids and times normalized). -update rewrites them.
func TestResponsesGolden(t *testing.T) {
	reqs, _ := filepath.Glob(filepath.Join("testdata", "responses", "*.request.json"))
	if len(reqs) == 0 {
		t.Fatal("no golden requests")
	}
	for _, path := range reqs {
		name := strings.TrimSuffix(filepath.Base(path), ".request.json")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var req map[string]any
			if err := json.Unmarshal(body, &req); err != nil {
				t.Fatal(err)
			}
			f := respServer(t, req["model"].(string))
			base := strings.TrimSuffix(path, ".request.json")
			for _, stream := range []bool{false, true} {
				req["stream"] = stream
				b, _ := json.Marshal(req)
				status, out := respPost(t, f.ts.URL+"/v1/responses", string(b))
				if status != 200 {
					t.Fatalf("stream=%v: status %d: %s", stream, status, out)
				}
				if stream {
					respCheckEvents(t, out)
					respGolden(t, base+".stream.txt", respNormalize(out))
				} else {
					respGolden(t, base+".response.json", respNormalize(respIndent(t, out)))
				}
			}
		})
	}
}

// respCheckEvents checks a stream's framing: every event's event: line names
// its data's type, sequence numbers count from 0, the response is created
// first and ends last.
func respCheckEvents(t *testing.T, stream []byte) {
	t.Helper()
	var types []string
	for i, ev := range strings.Split(strings.TrimSpace(string(stream)), "\n\n") {
		typ, data, ok := strings.Cut(ev, "\n")
		typ, ok1 := strings.CutPrefix(typ, "event: ")
		data, ok2 := strings.CutPrefix(data, "data: ")
		if !ok || !ok1 || !ok2 {
			t.Fatalf("event %d is not an event: line and a data: line: %q", i, ev)
		}
		var d struct {
			Type string
			Seq  *int `json:"sequence_number"`
		}
		if err := json.Unmarshal([]byte(data), &d); err != nil || d.Type != typ || d.Seq == nil || *d.Seq != i {
			t.Fatalf("event %d: %q (%v)", i, ev, err)
		}
		types = append(types, typ)
	}
	if len(types) < 3 || types[0] != "response.created" || types[1] != "response.in_progress" ||
		!slices.Contains([]string{"response.completed", "response.incomplete", "response.failed"}, types[len(types)-1]) {
		t.Fatalf("events %v", types)
	}
}

// respStreamed is a streamed response as a client accumulates it.
type respStreamed struct {
	types           []string
	text, reasoning string
	args            map[string]string // item id → arguments from the deltas
	final           responses.Response
}

func respReadStream(t *testing.T, f *fixture, p responses.ResponseNewParams) respStreamed {
	t.Helper()
	st := f.client.Responses.NewStreaming(context.Background(), p)
	s := respStreamed{args: map[string]string{}}
	for st.Next() {
		ev := st.Current()
		if ev.SequenceNumber != int64(len(s.types)) {
			t.Fatalf("event %d has sequence_number %d", len(s.types), ev.SequenceNumber)
		}
		s.types = append(s.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			s.text += ev.Delta
		case "response.reasoning_text.delta":
			s.reasoning += ev.Delta
		case "response.function_call_arguments.delta":
			s.args[ev.ItemID] += ev.Delta
		case "response.completed", "response.incomplete", "response.failed":
			s.final = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) respParams(input string, maxTokens int64) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: f.model, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		MaxOutputTokens: openai.Int(maxTokens), Temperature: openai.Float(0)}
}

// TestSDKResponses: the official SDK's Responses client, whole and
// streamed, gets what the chat completion of the same conversation gets
// (text, usage, the length limit as incomplete), and valid JSON under
// text.format json_schema.
func TestSDKResponses(t *testing.T) {
	f := respServer(t, "stories", "qwen2.5")
	ctx := context.Background()
	// A string input is one user message.
	for _, max := range []int64{40, 3} {
		p := f.respParams("Tell me a story about a dog.", max)
		resp, err := f.client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		want, err := f.client.Chat.Completions.New(ctx, f.chatParams("Tell me a story about a dog.", max))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.OutputText(); got != want.Choices[0].Message.Content || got == "" {
			t.Errorf("max %d: output %q, chat %q", max, got, want.Choices[0].Message.Content)
		}
		u := resp.Usage
		if u.InputTokens != want.Usage.PromptTokens || u.OutputTokens != want.Usage.CompletionTokens || u.TotalTokens != u.InputTokens+u.OutputTokens {
			t.Errorf("max %d: usage %+v, chat's %+v", max, u, want.Usage)
		}
		status, reason := "completed", ""
		if want.Choices[0].FinishReason == "length" {
			status, reason = "incomplete", "max_output_tokens"
		}
		if max == 3 && status != "incomplete" {
			t.Errorf("3 tokens: chat finished with %q", want.Choices[0].FinishReason)
		}
		if string(resp.Status) != status || resp.IncompleteDetails.Reason != reason || resp.Object != "response" || !strings.HasPrefix(resp.ID, "resp_") ||
			resp.Model != f.model || resp.MaxOutputTokens != max || resp.Temperature != 0 || len(resp.Output) != 1 || resp.Output[0].Type != "message" {
			t.Errorf("max %d: response %s", max, resp.RawJSON())
		}
		s := respReadStream(t, f, p)
		if s.text != resp.OutputText() || s.final.OutputText() != s.text || s.final.Status != resp.Status || s.final.Usage.OutputTokens != u.OutputTokens {
			t.Errorf("max %d: streamed %q (%s), whole %q (%s)", max, s.text, s.final.Status, resp.OutputText(), resp.Status)
		}
		wantTypes := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
		if !slices.Equal(s.types[:4], wantTypes) || s.types[len(s.types)-1] != "response."+status {
			t.Errorf("max %d: events %v", max, s.types)
		}
	}
	// Items with instructions: the same as the chat conversation with a
	// system message, content parts joined by newlines.
	items := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Once upon a time there was a cat.", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("The cat was happy.", responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			responses.ResponseInputContentParamOfInputText("What did the cat do?"), responses.ResponseInputContentParamOfInputText("Tell me."),
		}, responses.EasyInputMessageRoleUser),
	}
	p := responses.ResponseNewParams{Model: f.model, Instructions: openai.String("You tell short stories."), MaxOutputTokens: openai.Int(30),
		Temperature: openai.Float(0), Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items}}
	resp, err := f.client.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: f.model, MaxTokens: openai.Int(30), Temperature: openai.Float(0),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You tell short stories."), openai.UserMessage("Once upon a time there was a cat."),
			openai.AssistantMessage("The cat was happy."), openai.UserMessage("What did the cat do?\nTell me.")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != want.Choices[0].Message.Content || resp.Usage.InputTokens != want.Usage.PromptTokens || resp.Instructions.OfString != "You tell short stories." {
		t.Errorf("items: %q (%d input tokens), chat %q (%d)", resp.OutputText(), resp.Usage.InputTokens, want.Choices[0].Message.Content, want.Usage.PromptTokens)
	}
	// text.format json_schema: valid JSON of the schema, whole and streamed
	// (on a model whose vocabulary spells "{").
	f.model = "qwen2.5"
	schema := `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
		"required": ["name", "age"], "additionalProperties": false}`
	var sch map[string]any
	json.Unmarshal([]byte(schema), &sch)
	p = f.respParams("Who is in the story?", 120)
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
		Name: "person", Schema: sch, Strict: openai.Bool(true)}}}
	resp, err = f.client.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	compiled := compileSchema(t, schema)
	validate(t, compiled, resp.OutputText())
	if resp.Status != "completed" || resp.Text.Format.Type != "json_schema" || resp.Text.Format.Name != "person" {
		t.Errorf("json_schema: %s", resp.RawJSON())
	}
	s := respReadStream(t, f, p)
	validate(t, compiled, s.text)
	// json_object: any object.
	p.MaxOutputTokens = openai.Int(16)
	p.Text = responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}
	if resp, err = f.client.Responses.New(ctx, p); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.OutputText(), "{") { // the random model's strings do not end
		t.Errorf("json_object: %q", resp.OutputText())
	}
}

// The tool of the tool tests.
const respWeatherSchema = `{"type": "object", "properties": {"city": {"enum": ["Paris", "Rome", "Oslo"]}, "unit": {"enum": ["celsius", "fahrenheit"]}},
	"required": ["city", "unit"], "additionalProperties": false}`

func respWeatherTool(t *testing.T) responses.ToolUnionParam {
	var params map[string]any
	if err := json.Unmarshal([]byte(respWeatherSchema), &params); err != nil {
		t.Fatal(err)
	}
	tool := responses.ToolParamOfFunction("get_weather", params, true)
	tool.OfFunction.Description = openai.String("Get the weather.")
	return tool
}

// TestSDKResponsesTools: a function tool (on a model with Qwen 2.5's
// template) gives a function_call item whose arguments validate, whole
// and streamed; the call and its output sent back as input items lay out
// the prompt the chat completion of the same conversation does, and get
// the same reply.
func TestSDKResponsesTools(t *testing.T) {
	f := respServer(t, "qwen2.5")
	ctx := context.Background()
	compiled := compileSchema(t, respWeatherSchema)
	for _, choice := range []responses.ResponseNewParamsToolChoiceUnion{
		{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
		{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "get_weather"}},
	} {
		p := f.respParams("What is the weather in Paris?", 200)
		p.Tools, p.ToolChoice, p.ParallelToolCalls = []responses.ToolUnionParam{respWeatherTool(t)}, choice, openai.Bool(false)
		resp, err := f.client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var call responses.ResponseOutputItemUnion
		for _, it := range resp.Output {
			if it.Type == "function_call" {
				call = it
			}
		}
		if resp.Status != "completed" || call.Name != "get_weather" || !strings.HasPrefix(call.CallID, "call_") || !strings.HasPrefix(call.ID, "fc_") || call.Status != "completed" {
			t.Fatalf("no call: %s", resp.RawJSON())
		}
		validate(t, compiled, call.Arguments.OfString)
		if len(resp.Tools) != 1 || resp.Tools[0].Name != "get_weather" || resp.ParallelToolCalls {
			t.Errorf("tools echoed: %s", resp.RawJSON())
		}
		s := respReadStream(t, f, p)
		var scall responses.ResponseOutputItemUnion
		for _, it := range s.final.Output {
			if it.Type == "function_call" {
				scall = it
			}
		}
		if scall.Arguments.OfString != call.Arguments.OfString || s.args[scall.ID] != call.Arguments.OfString || !slices.Contains(s.types, "response.function_call_arguments.done") {
			t.Errorf("streamed call %s (deltas %v), whole %s", scall.RawJSON(), s.args, call.RawJSON())
		}
		// The follow-up: the call and its output as items.
		args := call.Arguments.OfString
		follow := responses.ResponseNewParams{Model: f.model, MaxOutputTokens: openai.Int(12), Temperature: openai.Float(0),
			Tools: p.Tools, Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("What is the weather in Paris?", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfFunctionCall(args, call.CallID, "get_weather"),
				responses.ResponseInputItemParamOfFunctionCallOutput(`{"temperature": 21, "sky": "clear"}`),
			}}}
		follow.Input.OfInputItemList[2].OfFunctionCallOutput.CallID = openai.String(call.CallID)
		got, err := f.client.Responses.New(ctx, follow)
		if err != nil {
			t.Fatal(err)
		}
		// Chat's tool: the function's fields in the order the server lays
		// them out, its parameters as the SDK sent them (echoed).
		chatTools := `[{"type":"function","function":{"name":"get_weather","description":"Get the weather.","parameters":` +
			got.Tools[0].JSON.Parameters.Raw() + `,"strict":true}}]`
		msgs, _ := json.Marshal([]map[string]any{{"role": "user", "content": "What is the weather in Paris?"},
			{"role": "assistant", "content": nil, "tool_calls": []map[string]any{{"id": call.CallID, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": args}}}},
			{"role": "tool", "tool_call_id": call.CallID, "name": "get_weather", "content": `{"temperature": 21, "sky": "clear"}`}})
		status, body := respPost(t, f.ts.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":%s,"tools":%s,"max_tokens":12,"temperature":0}`, f.model, msgs, chatTools))
		var want struct {
			Choices []struct{ Message struct{ Content string } }
			Usage   struct {
				PromptTokens int64 `json:"prompt_tokens"`
			}
		}
		if err := json.Unmarshal(body, &want); err != nil || status != 200 {
			t.Fatalf("chat: %d %s", status, body)
		}
		if got.Usage.InputTokens != want.Usage.PromptTokens || got.OutputText() != want.Choices[0].Message.Content {
			t.Errorf("follow-up: %q (%d input tokens), chat %q (%d)", got.OutputText(), got.Usage.InputTokens, want.Choices[0].Message.Content, want.Usage.PromptTokens)
		}
	}
}

// TestSDKResponsesReasoning: a reply's reasoning (SmolLM3's <think>,
// forced by a grammar) is a reasoning item before the message, streamed
// as reasoning_text events; reasoning.effort reaches the template as
// chat's reasoning_effort does; reasoning items sent back are the
// assistant turn's reasoning_content (Qwen3 shows it).
func TestSDKResponsesReasoning(t *testing.T) {
	f := respServer(t, "smollm3", "qwen3")
	ctx := context.Background()
	p := f.respParams("Hi", 100)
	forced := option.WithJSONSet("grammar", `root ::= "<think>\nI am thinking\n</think>\nHello there"`)
	resp, err := f.client.Responses.New(ctx, p, forced)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Output) != 2 || resp.Output[0].Type != "reasoning" || len(resp.Output[0].Content) != 1 || resp.Output[0].Content[0].Text != "I am thinking" ||
		resp.Output[1].Type != "message" || resp.OutputText() != "Hello there" || resp.Usage.OutputTokensDetails.ReasoningTokens == 0 {
		t.Errorf("reasoning: %s", resp.RawJSON())
	}
	st := f.client.Responses.NewStreaming(ctx, p, forced)
	var reasoning, text string
	for st.Next() {
		switch ev := st.Current(); ev.Type {
		case "response.reasoning_text.delta":
			reasoning += ev.Delta
		case "response.output_text.delta":
			text += ev.Delta
		}
	}
	if st.Err() != nil || reasoning != "I am thinking" || text != "Hello there" {
		t.Errorf("streamed reasoning %q text %q: %v", reasoning, text, st.Err())
	}
	// reasoning.effort "none" is chat's reasoning_effort "none" (thinking off).
	inputTokens := func(effort string) (int64, int64) {
		p := f.respParams("Hi", 1)
		body := `{"model":"smollm3","messages":[{"role":"user","content":"Hi"}],"max_tokens":1}`
		if effort != "" {
			p.Reasoning = shared.ReasoningParam{Effort: shared.ReasoningEffort(effort)}
			body = strings.Replace(body, `"max_tokens"`, `"reasoning_effort":"`+effort+`","max_tokens"`, 1)
		}
		r, err := f.client.Responses.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		_, out := respPost(t, f.ts.URL+"/v1/chat/completions", body)
		var c struct {
			Usage struct {
				PromptTokens int64 `json:"prompt_tokens"`
			}
		}
		json.Unmarshal(out, &c)
		return r.Usage.InputTokens, c.Usage.PromptTokens
	}
	think, chatThink := inputTokens("")
	noThink, chatNoThink := inputTokens("none")
	if think == noThink || think != chatThink || noThink != chatNoThink {
		t.Errorf("reasoning.effort none: %d input tokens (thinking: %d); chat %d and %d", noThink, think, chatNoThink, chatThink)
	}
	// Reasoning items in the input are the next assistant turn's.
	q := responses.ResponseNewParams{Model: "qwen3", MaxOutputTokens: openai.Int(1), Temperature: openai.Float(0),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Weather in Oslo?", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfReasoning("rs_1", []responses.ResponseReasoningItemSummaryParam{{Text: "Need a tool."}}),
			responses.ResponseInputItemParamOfFunctionCall(`{"city":"Oslo"}`, "call_1", "get_weather"),
			responses.ResponseInputItemParamOfFunctionCallOutput("sunny"),
		}}}
	q.Input.OfInputItemList[3].OfFunctionCallOutput.CallID = openai.String("call_1")
	r, err := f.client.Responses.New(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	status, out := respPost(t, f.ts.URL+"/v1/chat/completions", `{"model":"qwen3","max_tokens":1,"messages":[{"role":"user","content":"Weather in Oslo?"},
		{"role":"assistant","content":"","reasoning_content":"Need a tool.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","name":"get_weather","content":"sunny"}]}`)
	var c struct {
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
		}
	}
	json.Unmarshal(out, &c)
	if status != 200 || r.Usage.InputTokens != c.Usage.PromptTokens {
		t.Errorf("reasoning in the history: %d input tokens, chat %d (%d %s)", r.Usage.InputTokens, c.Usage.PromptTokens, status, out)
	}
}

// TestResponsesErrors: bad requests are 4xx in OpenAI's error shape,
// which the SDK decodes.
func TestResponsesErrors(t *testing.T) {
	f := respServer(t, "stories", "bert")
	ctx := context.Background()
	text := responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}
	image := responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(
		responses.ResponseInputMessageContentListParam{responses.ResponseInputContentParamOfInputText("What is this?"),
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String("https://example.com/cat.png"), Detail: responses.ResponseInputImageDetailAuto}}},
		responses.EasyInputMessageRoleUser)}}
	badSchema := responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
		Name: "bad", Schema: map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/missing"}}}}}}
	for _, c := range []struct {
		name   string
		p      responses.ResponseNewParams
		status int
		param  string
		code   string
		msg    string
	}{
		{"image input", responses.ResponseNewParams{Model: "stories", Input: image}, 400, "input", "", "only text input"},
		{"previous_response_id", responses.ResponseNewParams{Model: "stories", Input: text, PreviousResponseID: openai.String("resp_123")}, 400, "previous_response_id", "", "stateless: previous_response_id is not supported"},
		{"unknown model", responses.ResponseNewParams{Model: "gpt-5", Input: text}, 404, "", "model_not_found", ""},
		{"embedding model", responses.ResponseNewParams{Model: "bert", Input: text}, 400, "model", "model_not_supported", ""},
		{"grammar dead end", responses.ResponseNewParams{Model: "stories", Input: text, // TinyStories cannot spell "{"
			Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}}, 400, "text.format", "", ""},
		{"bad schema", responses.ResponseNewParams{Model: "stories", Input: text, Text: badSchema}, 400, "text.format", "", ""},
		{"zero max_output_tokens", responses.ResponseNewParams{Model: "stories", Input: text, MaxOutputTokens: openai.Int(0)}, 400, "max_output_tokens", "", ""},
		{"temperature", responses.ResponseNewParams{Model: "stories", Input: text, Temperature: openai.Float(3)}, 400, "temperature", "", ""},
		{"context", responses.ResponseNewParams{Model: "stories", Input: text, MaxOutputTokens: openai.Int(100000)}, 400, "input", "context_length_exceeded", ""},
		{"web search", responses.ResponseNewParams{Model: "stories", Input: text, Tools: []responses.ToolUnionParam{responses.ToolParamOfWebSearch(responses.WebSearchToolTypeWebSearch)}}, 400, "tools[0].type", "", ""},
		{"unknown named tool", responses.ResponseNewParams{Model: "stories", Input: text, Tools: []responses.ToolUnionParam{respWeatherTool(t)},
			ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfFunctionTool: &responses.ToolChoiceFunctionParam{Name: "nope"}}}, 400, "tool_choice", "", ""},
	} {
		_, err := f.client.Responses.New(ctx, c.p)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Errorf("%s: %v, want an API error", c.name, err)
			continue
		}
		if apiErr.StatusCode != c.status || apiErr.Param != c.param || (c.code != "" && apiErr.Code != c.code) || !strings.Contains(apiErr.Message, c.msg) || apiErr.Type == "" {
			t.Errorf("%s: status %d param %q code %q type %q: %s", c.name, apiErr.StatusCode, apiErr.Param, apiErr.Code, apiErr.Type, apiErr.Message)
		}
		// Streamed, the same error before any event.
		st := f.client.Responses.NewStreaming(ctx, c.p)
		if st.Next() || !errors.As(st.Err(), &apiErr) || apiErr.StatusCode != c.status {
			t.Errorf("%s streamed: %v", c.name, st.Err())
		}
	}
	// Raw bodies the SDK would not send.
	for _, c := range []struct{ name, body, param string }{
		{"no input", `{"model":"stories"}`, "input"},
		{"empty items", `{"model":"stories","input":[]}`, "input"},
		{"item reference", `{"model":"stories","input":[{"type":"item_reference","id":"msg_1"}]}`, "input"},
		{"bad role", `{"model":"stories","input":[{"role":"wizard","content":"hi"}]}`, "input"},
		{"conversation", `{"model":"stories","input":"hi","conversation":"conv_1"}`, "conversation"},
		{"background", `{"model":"stories","input":"hi","background":true}`, "background"},
		{"text.format type", `{"model":"stories","input":"hi","text":{"format":{"type":"xml"}}}`, "text.format.type"},
		{"format and grammar", `{"model":"stories","input":"hi","text":{"format":{"type":"json_object"}},"grammar":"root ::= \"a\""}`, "grammar"},
		{"duplicate tools", `{"model":"stories","input":"hi","tools":[{"type":"function","name":"f"},{"type":"function","name":"f"}]}`, "tools[1].name"},
	} {
		status, out := respPost(t, f.ts.URL+"/v1/responses", c.body)
		var e struct {
			Error struct {
				Message, Type string
				Param         *string
			}
		}
		if err := json.Unmarshal(out, &e); err != nil || status != 400 || e.Error.Message == "" || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %s, want 400 with param %s", c.name, status, out, c.param)
		}
	}
	// store is accepted (and nothing stored); stored responses are not found.
	p := f.respParams("Hi", 2)
	p.Model, p.Store, p.Metadata = "stories", openai.Bool(true), shared.Metadata{"k": "v"}
	resp, err := f.client.Responses.New(ctx, p)
	if err != nil || !strings.Contains(resp.RawJSON(), `"store":false`) || resp.Metadata["k"] != "v" {
		t.Fatalf("store true: %v %v", resp, err)
	}
	_, err = f.client.Responses.Get(ctx, resp.ID, responses.ResponseGetParams{})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("GET a response: %v", err)
	}
}

// TestResponsesStreamEnds: a generation that fails after the stream has
// begun ends it with an error event and response.failed (whole: a 400
// naming the field); a client that leaves mid-stream cancels its
// request.
func TestResponsesStreamEnds(t *testing.T) {
	f := respServer(t, "stories")
	body := `{"model":"stories","input":"Hi","max_output_tokens":8,"grammar":"root ::= \"Once\" [\\x01]"}` // TinyStories cannot spell \x01
	status, out := respPost(t, f.ts.URL+"/v1/responses", body)
	if status != 400 || !strings.Contains(string(out), `"param":"grammar"`) {
		t.Errorf("whole: %d %s", status, out)
	}
	status, out = respPost(t, f.ts.URL+"/v1/responses", strings.Replace(body, "{", `{"stream":true,`, 1))
	if status != 200 {
		t.Fatalf("streamed: %d %s", status, out)
	}
	respCheckEvents(t, out)
	events := strings.Split(strings.TrimSpace(string(out)), "\n\n")
	if n := len(events); n < 4 || !strings.HasPrefix(events[n-2], "event: error\n") || !strings.Contains(events[n-2], `"param":"grammar"`) ||
		!strings.Contains(events[n-1], `"status":"failed"`) || !strings.Contains(events[n-1], `"error":{"code":"invalid_prompt"`) {
		t.Errorf("streamed failure: %s", out)
	}
	// The SDK reads the failure as events, the last response.failed.
	st := f.client.Responses.NewStreaming(context.Background(), f.respParams("Hi", 8), option.WithJSONSet("grammar", `root ::= "Once" [\x01]`))
	var types []string
	for st.Next() {
		types = append(types, st.Current().Type)
	}
	if st.Err() != nil || len(types) < 2 || types[len(types)-2] != "error" || types[len(types)-1] != "response.failed" {
		t.Errorf("SDK: events %v, %v", types, st.Err())
	}
	// A client that leaves after three events: its request stops before
	// its max_output_tokens (480, as many as the 512-position context
	// leaves; TinyStories generates them in about 40 ms here, so the bound
	// is the request's own end, not a share of it).
	settled(t, f.srv)
	before := f.srv.Stats().GeneratedTokens
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", f.ts.URL+"/v1/responses",
		strings.NewReader(`{"model":"stories","input":"Once upon a time","max_output_tokens":480,"stream":true,"grammar":"root ::= [a-z ]+"}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 6 && sc.Scan(); n++ {
	}
	cancel()
	resp.Body.Close()
	settled(t, f.srv)
	if n := f.srv.Stats().GeneratedTokens - before; n >= 480 {
		t.Errorf("%d tokens generated: the request ran to its end after its client left", n)
	}
}
