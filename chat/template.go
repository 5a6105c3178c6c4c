// Package chat lays conversations out for a model: chat templates (the
// model's own Jinja template or a built-in layout), prompts whose request
// text can never become control tokens, tool calls in each family's
// syntax, and conversations that keep their cache between turns.
package chat

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/jinja"
	"github.com/loom-inference/loom/tokenizer"
)

// Message is one turn of a conversation, in OpenAI's shape.
type Message struct {
	Role       string `json:"role"`
	Content    any    `json:"content"` // a string, or content parts passed to the template as given
	Name       string `json:"name,omitempty"`
	ToolCalls  any    `json:"tool_calls,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// ReasoningContent is an assistant turn's reasoning (OpenAI's
	// reasoning_content, as llama.cpp takes it): templates that show it
	// in later turns (Qwen3, Gemma 4 between tool calls) see it as
	// reasoning_content, gpt-oss's as thinking, Ministral 3's as a
	// thinking block of the content.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// Options are the template variables besides the messages.
type Options struct {
	AddGenerationPrompt bool
	Tools               any            // OpenAI function schemas (nil: none)
	Documents           any            // RAG documents (nil: none)
	Extra               map[string]any // more variables, e.g. enable_thinking
	Now                 time.Time      // what strftime_now formats (zero: the clock)
}

// Template is a model's conversation layout, bound to its vocabulary.
type Template struct {
	Name     string // "model" (from the file), a built-in's name, or a file path
	Source   string // Jinja source
	BOS, EOS string // token texts the template sees as bos_token, eos_token
	tpl      *jinja.Template
	vocab    *tokenizer.Vocab
	ctl      atomic.Pointer[controlSet] // the control texts of the vocabulary
}

// builtinTemplates are used when a file has no template (or on request),
// following the layouts llama.cpp knows by name.
var builtinTemplates = map[string]string{
	"chatml": `{%- for message in messages -%}
{{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}`,
	"llama3": `{{- bos_token -}}
{%- for message in messages -%}
{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%}`,
	"llama2": `{%- set ns = namespace(sys='') -%}
{%- for message in messages -%}
{%- if message['role'] == 'system' -%}{%- set ns.sys = '<<SYS>>\n' + message['content'] + '\n<</SYS>>\n\n' -%}
{%- elif message['role'] == 'user' -%}{{- bos_token + '[INST] ' + ns.sys + message['content'] | trim + ' [/INST]' -}}{%- set ns.sys = '' -%}
{%- else -%}{{- ' ' + message['content'] | trim + ' ' + eos_token -}}{%- endif -%}
{%- endfor -%}`,
	"mistral": `{{- bos_token -}}
{%- for message in messages -%}
{%- if message['role'] == 'user' or message['role'] == 'system' -%}{{- '[INST] ' + message['content'] | trim + ' [/INST]' -}}
{%- else -%}{{- message['content'] | trim + eos_token -}}{%- endif -%}
{%- endfor -%}`,
	"gemma": `{{- bos_token -}}
{%- set ns = namespace(sys='') -%}
{%- for message in messages -%}
{%- if message['role'] == 'system' -%}{%- set ns.sys = message['content'] + '\n\n' -%}
{%- else -%}{{- '<start_of_turn>' + ('model' if message['role'] == 'assistant' else 'user') + '\n' + ns.sys + message['content'] | trim + '<end_of_turn>\n' -}}{%- set ns.sys = '' -%}{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<start_of_turn>model\n' -}}{%- endif -%}`,
	"phi3": `{%- for message in messages -%}
{{- '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|assistant|>\n' -}}{%- endif -%}`,
}

// Builtins lists the built-in template names.
func Builtins() []string {
	var names []string
	for n := range builtinTemplates {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// guessTemplate picks a built-in layout from the vocabulary's special
// tokens (llama.cpp falls back to ChatML).
func guessTemplate(v *tokenizer.Vocab) string {
	has := func(t string) bool { _, ok := v.ID(t); return ok }
	switch {
	case has("<|im_start|>"):
		return "chatml"
	case has("<|start_header_id|>"):
		return "llama3"
	case has("<start_of_turn>"):
		return "gemma"
	case has("<|assistant|>") && has("<|end|>"):
		return "phi3"
	case has("[INST]"):
		return "mistral"
	}
	return "chatml"
}

// ForModel is the template of e's model: name (a built-in, a .jinja file
// or a Hugging Face tokenizer_config.json) when given, else the file's own
// (tokenizer.chat_template), else a built-in guessed from the vocabulary.
func ForModel(e *engine.Engine, name string) (*Template, error) {
	own, _ := e.Metadata("tokenizer.chat_template")
	return New(name, own, e.Vocab())
}

// New makes the template named name (as ForModel), with own the model
// file's template ("": none) and v its vocabulary.
func New(name, own string, v *tokenizer.Vocab) (*Template, error) {
	t := &Template{vocab: v}
	if v.BOS >= 0 {
		t.BOS = v.Tokens[v.BOS]
	}
	if v.EOS >= 0 {
		t.EOS = v.Tokens[v.EOS]
	}
	switch src, builtin := builtinTemplates[name]; {
	case builtin:
		t.Name, t.Source = name, src
	case name != "":
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("chat template %q is neither a built-in (%s) nor a readable file: %w", name, strings.Join(Builtins(), ", "), err)
		}
		t.Name, t.Source = name, string(b)
		if strings.HasSuffix(name, ".json") { // a Hugging Face tokenizer_config.json
			if err := t.fromTokenizerConfig(b); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	case own != "":
		t.Name, t.Source = "model", own
	default:
		t.Name = guessTemplate(v)
		t.Source = builtinTemplates[t.Name]
	}
	tpl, err := jinja.Parse(t.Source)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %w", t.Name, err)
	}
	t.tpl = tpl
	return t, nil
}

// fromTokenizerConfig takes chat_template, bos_token and eos_token from a
// Hugging Face tokenizer_config.json (chat_template: a string, or a list
// of {name, template} where "default" is used).
func (t *Template) fromTokenizerConfig(b []byte) error {
	var cfg struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	var src string
	if err := json.Unmarshal(cfg.ChatTemplate, &src); err != nil {
		var named []struct{ Name, Template string }
		if json.Unmarshal(cfg.ChatTemplate, &named) != nil {
			return fmt.Errorf("no chat_template")
		}
		for _, n := range named {
			if n.Name == "default" || src == "" {
				src = n.Template
			}
		}
	}
	if src == "" {
		return fmt.Errorf("no chat_template")
	}
	t.Source = src
	// A token is a string or {"content": …}; null keeps the vocabulary's.
	token := func(raw json.RawMessage, dst *string) {
		var s string
		var obj struct{ Content string }
		switch {
		case json.Unmarshal(raw, &s) == nil:
			*dst = s
		case json.Unmarshal(raw, &obj) == nil && obj.Content != "":
			*dst = obj.Content
		}
	}
	token(cfg.BOS, &t.BOS)
	token(cfg.EOS, &t.EOS)
	return nil
}

// Render lays out a conversation, as transformers' apply_chat_template
// does.
func (t *Template) Render(msgs []Message, o Options) (string, error) {
	vars, err := t.vars(msgs, o, nil)
	if err != nil {
		return "", err
	}
	return t.tpl.Render(vars, o.Now)
}

// vars are the template's variables. With lit set, every string that came
// from the request (messages, tools, documents, the extra variables; keys
// as well as values) goes through lit.text first.
func (t *Template) vars(msgs []Message, o Options, lit *literalizer) (*jinja.Dict, error) {
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool", "developer":
		default:
			return nil, fmt.Errorf("engine: message %d has role %q (want system, user, assistant or tool)", i, m.Role)
		}
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		return nil, fmt.Errorf("engine: messages: %w", err)
	}
	mv, err := jinja.DecodeJSON(b)
	if err != nil {
		return nil, err
	}
	t.adaptReasoning(mv)
	req := func(v any) any { return v }
	if lit != nil {
		req = lit.value
	}
	vars := jinja.NewDict()
	vars.Set("bos_token", t.BOS)
	vars.Set("eos_token", t.EOS)
	vars.Set("messages", req(mv))
	vars.Set("add_generation_prompt", o.AddGenerationPrompt)
	vars.Set("tools", req(jinja.FromGo(o.Tools)))
	vars.Set("documents", req(jinja.FromGo(o.Documents)))
	keys := make([]string, 0, len(o.Extra))
	for k := range o.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vars.Set(k, req(jinja.FromGo(o.Extra[k])))
	}
	return vars, nil
}

// Prompt renders msgs and tokenizes the result: only what the template
// itself writes can become control tokens; every byte that came from the
// request (message text and names, tool calls, tool schemas, documents,
// extra variables) is tokenized as text wherever the template puts it.
// BOS is added only when the template did not write it. The text returned
// is Render's.
func (t *Template) Prompt(msgs []Message, o Options) ([]int32, string, error) {
	v := t.vocab
	parts, text, err := t.promptParts(v, msgs, o)
	if err != nil {
		return nil, "", err
	}
	addBOS := true
	if bos := v.BOS; bos >= 0 && len(parts) > 0 && parts[0].Special && strings.HasPrefix(parts[0].Text, v.Tokens[bos]) {
		addBOS = false
	}
	return v.EncodeParts(parts, addBOS), text, nil
}

// Keeping request text literal.
//
// A template is a program: it copies, trims, escapes (tojson) and
// concatenates the request's strings with its own, so the rendered text no
// longer says which bytes came from where. Instead of searching for the
// request's text in the output (which can find the template's own copy of
// a token instead), the request is rendered with every occurrence of a
// control token's text (v.ControlTexts: exactly what the tokenizer would
// turn into a control token) replaced by a placeholder: a per-render
// random nonce of ASCII letters and a fixed-width index, which tojson,
// trim and concatenation carry through unchanged. The output is then cut
// at the placeholders: each becomes a Special:false part holding the
// original text, everything else (now free of request control text) is
// the template's and is tokenized with special parsing. A control token
// can also be spelled across a boundary ("<|im_" at the end of one content
// part, "end|>" at the start of the next, or the template's text beside
// the request's), so a string's edge that is a proper prefix or suffix of
// a control text (after trimming whitespace, as |trim would) is replaced
// too; Special:false parts cut the tokenizer's special-token matching, and
// EncodeParts joins text across parts, so ordinary text tokenizes exactly
// as before.
//
// A placeholder only ever turns back into text, so a client that guessed
// the nonce could not make a control token with it; the nonce keeps the
// text faithful, not the prompt safe.
//
// Whenever anything was replaced, the plain render is made too, and the
// placeholder render must lay over it: the template's pieces verbatim and
// in order, each placeholder standing for its original text (or that text
// HTML- or JSON-escaped, as |e, Markup concatenation and tojson write
// it). The tokens then spell exactly RenderChat's text, and their control
// tokens are exactly those of the placeholder render, a render of the
// same request without control text. A template that transforms a
// placeholder (|upper, slicing, a |length test, …) leaves pieces that do
// not lay over the plain render; the prompt is then refused with an error
// rather than tokenized, so a mangled placeholder never reaches the
// tokenizer. Requests without control text (or partial control text at a
// string's edge) render once, with the same tokens as tokenizing the
// render with special parsing (llama.cpp's way).

// promptParts renders msgs for tokenization with v (see above) and returns
// the parts and the plain render.
func (t *Template) promptParts(v *tokenizer.Vocab, msgs []Message, o Options) ([]tokenizer.Part, string, error) {
	if o.Now.IsZero() { // one clock reading for both renders
		o.Now = time.Now()
	}
	lit, err := newLiteralizer(t.controls(v))
	if err != nil {
		return nil, "", err
	}
	vars, err := t.vars(msgs, o, lit)
	if err != nil {
		return nil, "", err
	}
	out, rerr := t.tpl.Render(vars, o.Now)
	if len(lit.orig) == 0 { // nothing replaced: this is the plain render
		if rerr != nil {
			return nil, "", rerr
		}
		return []tokenizer.Part{{Text: out, Special: true}}, out, nil
	}
	if err := lit.overflowError(); err != nil {
		return nil, "", err
	}
	plain, err := t.Render(msgs, o)
	if err != nil {
		return nil, "", err
	}
	if rerr == nil {
		if parts, ok := lit.match(lit.split(out), plain); ok {
			return parts, plain, nil
		}
	}
	what := fmt.Sprintf("part of a control token (%q)", lit.orig[0])
	for _, s := range lit.orig {
		if lit.c.at(s) == len(s) {
			what = fmt.Sprintf("control-token text (%q)", s)
			break
		}
	}
	return nil, "", fmt.Errorf("engine: the chat template changes request text that holds %s, so it cannot be kept as text; remove that text from the request", what)
}
