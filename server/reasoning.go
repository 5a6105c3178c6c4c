package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/loom-inference/loom/chat"
)

// Reasoning formats, llama.cpp's reasoning_format: how a reply's
// reasoning is returned.
const (
	// ReasoningAuto (the default) and ReasoningDeepSeek return it apart,
	// as message.reasoning_content and delta.reasoning_content.
	ReasoningAuto     = "auto"
	ReasoningDeepSeek = "deepseek"
	// ReasoningNone leaves it in the content, markers and all.
	ReasoningNone = "none"
	// ReasoningDeepSeekLegacy returns it apart and also leaves it in the
	// content; streamed, only in the content.
	ReasoningDeepSeekLegacy = "deepseek-legacy"
)

// CheckReasoningFormat reports whether f is a reasoning format ("" is
// the default, auto).
func CheckReasoningFormat(f string) error {
	switch f {
	case "", ReasoningAuto, ReasoningDeepSeek, ReasoningNone, ReasoningDeepSeekLegacy:
		return nil
	}
	return fmt.Errorf("reasoning format %q: want auto, deepseek, deepseek-legacy or none", f)
}

// maxTemplateKwargs bounds chat_template_kwargs.
const maxTemplateKwargs = 64

// reasoningFormat is the request's reasoning_format, else the server's.
func (r *chatRequest) reasoningFormat(cfg Config) (string, *apiError) {
	f := cfg.ReasoningFormat
	if r.ReasoningFormat != nil {
		f = *r.ReasoningFormat
		if CheckReasoningFormat(f) != nil || f == "" {
			return "", badRequest("reasoning_format", "reasoning_format must be auto, deepseek, deepseek-legacy or none, not %q", f)
		}
	}
	if f == "" {
		f = ReasoningAuto
	}
	return f, nil
}

// templateKwargs are the template's extra variables: the server's
// (loom serve --chat-template-kwargs), then the request's
// chat_template_kwargs (llama.cpp's and vLLM's field), then OpenAI's
// reasoning_effort, passed as the template variable of that name
// ("none" turns the thinking off, enable_thinking false, as llama.cpp
// does).
func (r *chatRequest) templateKwargs(cfg Config) (map[string]any, *apiError) {
	extra := map[string]any{}
	for k, v := range cfg.ChatTemplateKwargs {
		extra[k] = v
	}
	if len(r.ChatTemplateKwargs) > 0 && string(r.ChatTemplateKwargs) != "null" {
		var kw map[string]json.RawMessage
		if err := json.Unmarshal(r.ChatTemplateKwargs, &kw); err != nil {
			return nil, badRequest("chat_template_kwargs", "chat_template_kwargs must be an object")
		}
		if len(kw) > maxTemplateKwargs {
			return nil, badRequest("chat_template_kwargs", "chat_template_kwargs has %d keys, at most %d", len(kw), maxTemplateKwargs)
		}
		for k, v := range kw {
			switch k {
			case "messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token":
				return nil, badRequest("chat_template_kwargs", "chat_template_kwargs may not set %q", k)
			}
			if k == "enable_thinking" && string(v) != "true" && string(v) != "false" {
				return nil, badRequest("chat_template_kwargs", "chat_template_kwargs.enable_thinking must be true or false")
			}
			extra[k] = v // JSON as sent: objects keep their key order
		}
	}
	if r.ReasoningEffort != nil {
		switch e := *r.ReasoningEffort; e {
		case "none":
			extra["enable_thinking"] = false
			delete(extra, "reasoning_effort")
		case "":
		default:
			if len(e) > 32 {
				return nil, badRequest("reasoning_effort", "reasoning_effort is too long")
			}
			extra["reasoning_effort"] = e
		}
	}
	return extra, nil
}

// orderedToolCalls is an assistant message's tool_calls for the template:
// arguments sent as a JSON string (OpenAI's way) decoded into the value
// templates format, every object keeping its key order as transformers
// would see it.
func orderedToolCalls(raw json.RawMessage) (json.RawMessage, bool) {
	var calls []json.RawMessage
	if json.Unmarshal(raw, &calls) != nil {
		return nil, false
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, c := range calls {
		fields, ok := objectFields(c)
		if !ok {
			return nil, false
		}
		for k, f := range fields {
			if f.key != "function" {
				continue
			}
			fn, ok := objectFields(f.val)
			if !ok {
				continue
			}
			for j, a := range fn {
				var s string
				if a.key == "arguments" && json.Unmarshal(a.val, &s) == nil && json.Valid([]byte(s)) {
					fn[j].val = json.RawMessage(s)
				}
			}
			fields[k].val = joinFields(fn)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(joinFields(fields))
	}
	b.WriteByte(']')
	return b.Bytes(), true
}

type field struct {
	key string
	val json.RawMessage
}

// objectFields splits a JSON object into its members, in order.
func objectFields(raw []byte) ([]field, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []field
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, field{k, v})
	}
	return out, true
}

func joinFields(fs []field) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// replyOptions are how a choice's reply is parsed: its reasoning split
// out unless the format is none, its tool calls among the request's.
func (rp *reply) replyOptions(extract bool) chat.ReplyOptions {
	o := chat.ReplyOptions{Reasoning: extract, Prompt: rp.prompt}
	if rp.tools != nil {
		o.Tools, o.Prefix = rp.tools.tools, rp.tools.prefix
		if o.Tools == nil {
			o.Tools = []chat.Tool{}
		}
	}
	return o
}

// parsed is a whole reply as the response carries it.
type parsed struct {
	content, reasoning string
	calls              []chat.ToolCall
}

// parseWhole parses one choice's whole reply in the request's reasoning
// format: deepseek-legacy keeps the reasoning in the content as well.
func (rp *reply) parseWhole(text string) parsed {
	t := rp.m.Chat
	d := t.ParseReply(text, rp.replyOptions(rp.reasoning != ReasoningNone))
	p := parsed{content: d.Content, reasoning: d.Reasoning, calls: d.Calls}
	if rp.reasoning == ReasoningDeepSeekLegacy {
		p.content = t.ParseReply(text, rp.replyOptions(false)).Content
	}
	if len(p.calls) > 0 {
		p.content = strings.TrimSpace(p.content)
	}
	return p
}
