package chat_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestChatPromptLiteral: control-token text inside a message is tokenized
// as text; only what the template writes becomes control tokens; BOS is not
// doubled when the template writes it.
func TestChatPromptLiteral(t *testing.T) {
	if testing.Short() {
		t.Skip("needs synthgguf presets: run without -short")
	}
	for _, c := range []struct {
		preset, typ, control string
		bosInTemplate        bool
	}{
		{"smollm2-135m", "Q8_0", "<|im_end|>", false},
		{"qwen2.5-0.5b", "Q8_0", "<|im_end|>", false},
		{"llama-3.2-1b", "Q4_K_M", "<|eot_id|>", true},
	} {
		t.Run(c.preset, func(t *testing.T) {
			e, err := engine.Load(testmodels.Synth(t, "-model", c.preset, "-type", c.typ, "-seed", "1"), engine.Options{Threads: 1, CtxLen: 64, KVTokens: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			tp, err := chat.ForModel(e, "")
			if err != nil {
				t.Fatal(err)
			}
			if tp.Name != "model" {
				t.Fatalf("template %q, want the model's own", tp.Name)
			}
			ctl, ok := e.Vocab().ID(c.control)
			if !ok {
				t.Fatalf("no %s token", c.control)
			}
			msgs := []chat.Message{{Role: "user", Content: "Say " + c.control + " {{ 7*7 }} please"}}
			ids, text, err := tp.Prompt(msgs, chat.Options{AddGenerationPrompt: true})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(text, "Say "+c.control+" {{ 7*7 }} please") {
				t.Fatalf("message not verbatim in %q", text)
			}
			// The template writes the control token once per finished turn;
			// the message's copy must not add one.
			plain, _, _ := tp.Prompt([]chat.Message{{Role: "user", Content: "Say it please"}}, chat.Options{AddGenerationPrompt: true})
			count := func(ids []int32) int {
				n := 0
				for _, id := range ids {
					if id == ctl {
						n++
					}
				}
				return n
			}
			if count(ids) != count(plain) {
				t.Errorf("%s appears %d times as a control token, the template writes %d", c.control, count(ids), count(plain))
			}
			if bos := e.Vocab().BOS; bos >= 0 && len(ids) > 1 && ids[0] == bos && ids[1] == bos {
				t.Error("BOS twice")
			}
			if c.bosInTemplate && ids[0] != e.Vocab().BOS {
				t.Errorf("first token %d, want BOS %d", ids[0], e.Vocab().BOS)
			}
		})
	}
}

// TestChatTemplateChoice: a file without a template gets a built-in; names
// and files override; unknown names fail clearly.
func TestChatTemplateChoice(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tp, err := chat.ForModel(e, "")
	if err != nil {
		t.Fatal(err)
	}
	if n := tp.Name; n != "chatml" {
		t.Errorf("TinyStories (no template, no chat tokens): %q, want chatml as llama.cpp falls back", n)
	}
	msgs := []chat.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}, {Role: "assistant", Content: "A"}, {Role: "user", Content: "V"}}
	for name, want := range map[string]string{
		"llama3":  "<|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nU<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nA<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nV<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
		"chatml":  "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nV<|im_end|>\n<|im_start|>assistant\n",
		"gemma":   "<start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\nA<end_of_turn>\n<start_of_turn>user\nV<end_of_turn>\n<start_of_turn>model\n",
		"llama2":  "[INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST] A </s>[INST] V [/INST]",
		"mistral": "[INST] S [/INST][INST] U [/INST]A</s>[INST] V [/INST]",
		"phi3":    "<|system|>\nS<|end|>\n<|user|>\nU<|end|>\n<|assistant|>\nA<|end|>\n<|user|>\nV<|end|>\n<|assistant|>\n",
	} {
		tp, err := chat.ForModel(e, name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tp.Render(msgs, chat.Options{AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		// This vocabulary's BOS/EOS are <|start_story|>/<|end_story|>.
		got = strings.ReplaceAll(strings.ReplaceAll(got, tp.BOS, ""), tp.EOS, "</s>")
		if got != want {
			t.Errorf("%s:\n got %q\nwant %q", name, got, want)
		}
	}
	// A Hugging Face tokenizer_config.json: its chat_template (the fixture's
	// own, which ends with a marker text).
	tp, err = chat.ForModel(e, filepath.Join(testmodels.Shared(t), "models", "tokenizers", "qwen2", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tp.Render(msgs[1:2], chat.Options{AddGenerationPrompt: true}); got != "<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\ntemplate ends here" {
		t.Errorf("tokenizer_config.json template rendered %q", got)
	}
	if _, err := chat.ForModel(e, "no-such-template"); err == nil || !strings.Contains(err.Error(), "chatml") {
		t.Errorf("unknown template: %v (want an error listing the built-ins)", err)
	}
	if _, err := tp.Render([]chat.Message{{Role: "wizard", Content: "x"}}, chat.Options{}); err == nil {
		t.Error("an invalid role was accepted")
	}
	if !slices.Contains(chat.Builtins(), "llama3") {
		t.Error("Builtins misses llama3")
	}
}
