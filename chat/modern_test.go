package chat

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-inference/loom/jinja"
	"github.com/loom-inference/loom/tokenizer"
)

// modernCase is one row of testdata/modern/index.tsv.
type modernCase struct {
	template, context, outcome string
}

func modernCases(t *testing.T) []modernCase {
	t.Helper()
	f, err := os.Open("testdata/modern/index.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []modernCase
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		if first {
			continue
		}
		col := strings.Split(sc.Text(), "\t")
		if len(col) != 3 {
			t.Fatalf("index.tsv: bad row %q", sc.Text())
		}
		cases = append(cases, modernCase{col[0], col[1], col[2]})
	}
	if len(cases) == 0 {
		t.Fatal("index.tsv: no cases")
	}
	return cases
}

// modernTokens are the bos_token and eos_token render.py gives each
// template.
var modernTokens = map[string][2]string{
	"google-gemma-3-it.jinja":                        {"<bos>", "<eos>"},
	"HuggingFaceTB-SmolLM3-3B.jinja":                 {"", "<|im_end|>"},
	"ibm-granite-granite-3.3-2B-Instruct.jinja":      {"<|end_of_text|>", "<|end_of_text|>"},
	"openai-gpt-oss-120b.jinja":                      {"<|startoftext|>", "<|return|>"},
	"mistralai-Ministral-3-14B-Reasoning-2512.jinja": {"<s>", "</s>"},
	"google-gemma-4-31B-it.jinja":                    {"<bos>", "<eos>"},
	"google-gemma-4-31B-it-interleaved.jinja":        {"<bos>", "<eos>"},
	"Qwen-Qwen3-0.6B.jinja":                          {"", "<|im_end|>"},
}

var modernNow = time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC)

// TestModernTemplates renders the 2025-26 families' templates (Gemma 3
// and 4, SmolLM3, Granite 3.3, gpt-oss, Ministral 3, Qwen3) over every
// context of testdata/modern with Loom's Jinja engine, with exactly the
// variables transformers passes (see testdata/modern/README.md), and
// compares byte for byte with Python Jinja2's renders; where Python
// raised, Loom must fail too.
func TestModernTemplates(t *testing.T) {
	for _, c := range modernCases(t) {
		name := strings.TrimSuffix(c.template, ".jinja") + "__" + strings.TrimSuffix(c.context, ".json")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata/modern/templates", c.template))
			if err != nil {
				t.Fatal(err)
			}
			ctx, err := os.ReadFile(filepath.Join("testdata/modern/contexts", c.context))
			if err != nil {
				t.Fatal(err)
			}
			tok, ok := modernTokens[c.template]
			if !ok {
				t.Fatalf("no tokens for %s", c.template)
			}
			v, err := jinja.DecodeJSON(ctx)
			if err != nil {
				t.Fatal(err)
			}
			vars := jinja.NewDict()
			vars.Set("bos_token", tok[0])
			vars.Set("eos_token", tok[1])
			vars.Set("tools", nil)
			vars.Set("documents", nil)
			vars.Set("add_generation_prompt", false)
			cv := v.(*jinja.Dict)
			for _, k := range cv.Keys() {
				val, _ := cv.Get(k)
				vars.Set(k, val)
			}
			tpl, err := jinja.Parse(string(src))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tpl.Render(vars, modernNow)
			checkModern(t, c, name, got, err)
		})
	}
}

// TestModernTemplatesChat renders the same cases through Template.Render,
// the path loom chat and loom serve take: the conversation as Messages and
// Options, so the layer between a request and the template changes
// nothing. Contexts whose messages carry fields a Message does not have
// (reasoning_content, thinking) are left to TestModernTemplates.
func TestModernTemplatesChat(t *testing.T) {
	for _, c := range modernCases(t) {
		name := strings.TrimSuffix(c.template, ".jinja") + "__" + strings.TrimSuffix(c.context, ".json")
		b, err := os.ReadFile(filepath.Join("testdata/modern/contexts", c.context))
		if err != nil {
			t.Fatal(err)
		}
		var ctx map[string]json.RawMessage
		if err := json.Unmarshal(b, &ctx); err != nil {
			t.Fatal(err)
		}
		// As the server passes them: JSON objects keep their key order.
		var raw []struct {
			Message
			ToolCalls json.RawMessage `json:"tool_calls"`
		}
		if err := json.Unmarshal(ctx["messages"], &raw); err != nil {
			t.Fatal(err)
		}
		msgs := make([]Message, len(raw))
		for i, m := range raw {
			msgs[i] = m.Message
			if m.ToolCalls != nil {
				msgs[i].ToolCalls = m.ToolCalls
			}
		}
		if reasoningFields(ctx["messages"]) {
			continue
		}
		// Templates that read reasoning another way get it adapted
		// (adaptReasoning): their render is that of the context that
		// spells it their way.
		want := c
		if c.context == "reasoning-history.json" {
			switch c.template {
			case "openai-gpt-oss-120b.jinja":
				want.context = "thinking-history.json"
			case "mistralai-Ministral-3-14B-Reasoning-2512.jinja":
				want.context = "reasoning-blocks.json"
			}
			want.outcome = outcomeOf(t, want)
		}
		wantName := strings.TrimSuffix(want.template, ".jinja") + "__" + strings.TrimSuffix(want.context, ".json")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata/modern/templates", c.template))
			if err != nil {
				t.Fatal(err)
			}
			tp, err := New("", string(src), emptyVocab(t))
			if err != nil {
				t.Fatal(err)
			}
			tok := modernTokens[c.template]
			tp.BOS, tp.EOS = tok[0], tok[1]
			o := Options{Now: modernNow, Extra: map[string]any{}}
			for k, raw := range ctx {
				switch k {
				case "messages":
				case "add_generation_prompt":
					o.AddGenerationPrompt = string(raw) == "true"
				case "tools":
					o.Tools = raw
				case "documents":
					o.Documents = raw
				default:
					o.Extra[k] = raw
				}
			}
			got, err := tp.Render(msgs, o)
			checkModern(t, want, wantName, got, err)
		})
	}
}

// reasoningFields reports whether any message has a key besides the
// fields of Message, or content that is not a string.
func reasoningFields(raw json.RawMessage) bool {
	var msgs []map[string]any
	json.Unmarshal(raw, &msgs)
	for _, m := range msgs {
		for k, v := range m {
			switch k {
			case "content":
				if _, ok := v.(string); !ok && m["role"] == "assistant" {
					return true
				}
			case "role", "name", "tool_calls", "tool_call_id", "reasoning_content":
			default:
				return true
			}
		}
	}
	return false
}

// outcomeOf looks a case's outcome up in index.tsv.
func outcomeOf(t *testing.T, c modernCase) string {
	for _, o := range modernCases(t) {
		if o.template == c.template && o.context == c.context {
			return o.outcome
		}
	}
	t.Fatalf("no case %s %s", c.template, c.context)
	return ""
}

func checkModern(t *testing.T, c modernCase, name, got string, err error) {
	t.Helper()
	if c.outcome == "error" {
		if err == nil {
			msg, _ := os.ReadFile(filepath.Join("testdata/modern/expected", name+".error"))
			t.Fatalf("rendered, want an error (Python: %s)", strings.TrimSpace(string(msg)))
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata/modern/expected", name+".txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-60)
		t.Fatalf("differs at byte %d:\n got …%q\nwant …%q", i, got[lo:min(len(got), i+80)], string(want[lo:min(len(want), i+80)]))
	}
}

// emptyVocab is an empty vocabulary: rendering needs none.
func emptyVocab(t *testing.T) *tokenizer.Vocab {
	t.Helper()
	return &tokenizer.Vocab{BOS: -1, EOS: -1}
}
