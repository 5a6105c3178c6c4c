package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

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
}

// ChatOptions are the template variables besides the messages.
type ChatOptions struct {
	AddGenerationPrompt bool
	Tools               any            // OpenAI function schemas (nil: none)
	Documents           any            // RAG documents (nil: none)
	Extra               map[string]any // more variables, e.g. enable_thinking
	Now                 time.Time      // what strftime_now formats (zero: the clock)
}

// ChatTemplate is a model's conversation layout.
type ChatTemplate struct {
	Name     string // "model" (from the file), a built-in's name, or a file path
	Source   string // Jinja source
	BOS, EOS string // token texts the template sees as bos_token, eos_token
	tpl      *jinja.Template
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

// BuiltinTemplates lists the built-in template names.
func BuiltinTemplates() []string {
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

// loadChatTemplate sets the engine's template: name (a built-in, or a
// .jinja file) when given, else the file's own, else a built-in guessed
// from the vocabulary.
func (e *Engine) loadChatTemplate(name string) error {
	t := &ChatTemplate{}
	if e.Vocab.BOS >= 0 {
		t.BOS = e.Vocab.Tokens[e.Vocab.BOS]
	}
	if e.Vocab.EOS >= 0 {
		t.EOS = e.Vocab.Tokens[e.Vocab.EOS]
	}
	switch src, builtin := builtinTemplates[name]; {
	case builtin:
		t.Name, t.Source = name, src
	case name != "":
		b, err := os.ReadFile(name)
		if err != nil {
			return fmt.Errorf("chat template %q is neither a built-in (%s) nor a readable file: %w", name, strings.Join(BuiltinTemplates(), ", "), err)
		}
		t.Name, t.Source = name, string(b)
		if strings.HasSuffix(name, ".json") { // a Hugging Face tokenizer_config.json
			if err := t.fromTokenizerConfig(b); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	default:
		if e.File != nil {
			if s, ok := e.File.String("tokenizer.chat_template"); ok && s != "" {
				t.Name, t.Source = "model", s
			}
		}
		if t.Source == "" {
			t.Name = guessTemplate(e.Vocab)
			t.Source = builtinTemplates[t.Name]
		}
	}
	tpl, err := jinja.Parse(t.Source)
	if err != nil {
		return fmt.Errorf("chat template %s: %w", t.Name, err)
	}
	t.tpl = tpl
	e.chat = t
	return nil
}

// fromTokenizerConfig takes chat_template, bos_token and eos_token from a
// Hugging Face tokenizer_config.json (chat_template: a string, or a list
// of {name, template} where "default" is used).
func (t *ChatTemplate) fromTokenizerConfig(b []byte) error {
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

// ChatTemplate is the template RenderChat uses.
func (e *Engine) ChatTemplate() *ChatTemplate { return e.chat }

// SetChatTemplate replaces it: a built-in name or a .jinja file ("": the
// model's own).
func (e *Engine) SetChatTemplate(name string) error { return e.loadChatTemplate(name) }

// RenderChat lays out a conversation with the chat template, as
// transformers' apply_chat_template does.
func (e *Engine) RenderChat(msgs []Message, o ChatOptions) (string, error) {
	return e.chat.Render(msgs, o)
}

// Render renders msgs with t.
func (t *ChatTemplate) Render(msgs []Message, o ChatOptions) (string, error) {
	vars, err := t.vars(msgs, o)
	if err != nil {
		return "", err
	}
	return t.tpl.Render(vars, o.Now)
}

func (t *ChatTemplate) vars(msgs []Message, o ChatOptions) (*jinja.Dict, error) {
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
	vars := jinja.NewDict()
	vars.Set("bos_token", t.BOS)
	vars.Set("eos_token", t.EOS)
	vars.Set("messages", mv)
	vars.Set("add_generation_prompt", o.AddGenerationPrompt)
	vars.Set("tools", jinja.FromGo(o.Tools))
	vars.Set("documents", jinja.FromGo(o.Documents))
	keys := make([]string, 0, len(o.Extra))
	for k := range o.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vars.Set(k, jinja.FromGo(o.Extra[k]))
	}
	return vars, nil
}

// ChatPrompt renders msgs and tokenizes the result: control tokens are
// recognized in what the template wrote, never inside the messages' text,
// and BOS is added only when the template did not write it.
func (e *Engine) ChatPrompt(msgs []Message, o ChatOptions) ([]int32, string, error) {
	text, err := e.RenderChat(msgs, o)
	if err != nil {
		return nil, "", err
	}
	parts := splitLiteral(text, msgs)
	addBOS := e.Vocab.BOS < 0 || !strings.HasPrefix(text, e.Vocab.Tokens[e.Vocab.BOS])
	return e.Vocab.EncodeParts(parts, addBOS), text, nil
}

// splitLiteral marks, in order, where each message's text appears in the
// rendered prompt, so it is tokenized as text.
func splitLiteral(text string, msgs []Message) []tokenizer.Part {
	var parts []tokenizer.Part
	cur := 0
	for _, m := range msgs {
		for _, c := range contentTexts(m.Content) {
			for _, cand := range []string{c, strings.TrimSpace(c)} {
				if cand == "" {
					continue
				}
				if i := strings.Index(text[cur:], cand); i >= 0 {
					parts = append(parts, tokenizer.Part{Text: text[cur : cur+i], Special: true},
						tokenizer.Part{Text: cand, Special: false})
					cur += i + len(cand)
					break
				}
			}
		}
	}
	return append(parts, tokenizer.Part{Text: text[cur:], Special: true})
}

// contentTexts is a message content's text: the string, or the text parts.
func contentTexts(c any) []string {
	switch x := c.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, p := range x {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	return nil
}

// Conversation is a chat that keeps its KV cache across turns: each turn
// renders the whole conversation and evaluates only the tokens past what
// the cache already holds.
type Conversation struct {
	e    *Engine
	sess *Session
	Msgs []Message
	Opts ChatOptions
	// Computed and Reused count the last turn's prompt tokens evaluated
	// and taken from the cache.
	Computed, Reused int
}

// NewConversation starts a conversation (system may be empty).
func (e *Engine) NewConversation(system string) *Conversation {
	c := &Conversation{e: e, sess: e.NewSession(), Opts: ChatOptions{AddGenerationPrompt: true}}
	if system != "" {
		c.Msgs = append(c.Msgs, Message{Role: "system", Content: system})
	}
	return c
}

// Tokens are the tokens the conversation's cache holds.
func (c *Conversation) Tokens() []int32 { return c.sess.Tokens() }

// Close frees the conversation's cache.
func (c *Conversation) Close() { c.sess.Close() }

// Reset forgets the turns (keeping a system message) and the cache.
func (c *Conversation) Reset(system string) {
	c.Msgs = c.Msgs[:0]
	if system != "" {
		c.Msgs = append(c.Msgs, Message{Role: "system", Content: system})
	}
	c.sess.Truncate(0)
}

// Reply adds a user turn, generates the assistant's answer (streamed to
// onText) and records it. A cancelled ctx ends the reply early; what was
// generated stays in the conversation.
func (c *Conversation) Reply(ctx context.Context, user string, req Request, onText func(string) error) (string, Stats, error) {
	var st Stats
	msgs := append(slices.Clone(c.Msgs), Message{Role: "user", Content: user})
	ids, _, err := c.e.ChatPrompt(msgs, c.Opts)
	if err != nil {
		return "", st, err
	}
	if len(ids) >= c.e.ctxLen {
		return "", st, fmt.Errorf("engine: the conversation (%d tokens) no longer fits the context of %d; /reset starts over", len(ids), c.e.ctxLen)
	}
	held := c.sess.Tokens()
	n := 0
	for n < len(held) && n < len(ids) && held[n] == ids[n] {
		n++
	}
	n = min(n, len(ids)-1) // the last token is evaluated for its logits
	c.sess.Truncate(n)
	c.Reused, c.Computed = n, len(ids)-n
	st.PromptTokens = len(ids)
	logits := make([]float32, c.e.model.Config().NVocab)
	t0 := time.Now()
	if err := c.sess.Eval(ids[n:], false, logits); err != nil {
		return "", st, err
	}
	st.Prefill = time.Since(t0)
	var reply strings.Builder
	err = c.e.decode(ctx, c.sess, logits, ids, req, func(s string) error {
		reply.WriteString(s)
		return onText(s)
	}, &st)
	c.Msgs = append(msgs, Message{Role: "assistant", Content: reply.String()})
	return reply.String(), st, err
}
