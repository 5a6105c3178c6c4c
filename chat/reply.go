package chat

import (
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/tokenizer"
)

// Delta is what a piece of a reply releases: reasoning, answer text and
// completed tool calls.
type Delta struct {
	Reasoning string
	Content   string
	Calls     []ToolCall
}

func (d *Delta) add(o Delta) {
	d.Reasoning += o.Reasoning
	d.Content += o.Content
	d.Calls = append(d.Calls, o.Calls...)
}

// Empty reports whether d releases nothing.
func (d Delta) Empty() bool { return d.Reasoning == "" && d.Content == "" && len(d.Calls) == 0 }

// ReplyOptions say how a reply is parsed.
type ReplyOptions struct {
	// Reasoning splits the reasoning out of the answer (llama.cpp's
	// reasoning_format auto or deepseek); without it the reasoning stays
	// in the answer, markers and all (reasoning_format none).
	Reasoning bool
	// Tools are the request's tools: calls among them are parsed out of
	// the answer (nil: no tools, the answer is text).
	Tools []Tool
	// Prompt is the rendered prompt the reply continues: a prompt that
	// ends by opening the reasoning (DeepSeek-R1's "<think>\n") starts
	// the reply inside it.
	Prompt string
	// Prefix is text forced at the start of the reply (a required call's
	// marker), parsed as the model's own.
	Prefix string
}

// ReplyParser splits a reply, as it streams, into reasoning, answer and
// tool calls in its template's formats. Text that could be the start of
// a marker is held back until it is known, so no part of a marker is
// ever released as text.
type ReplyParser struct {
	think   *thinkSplitter // nil: no reasoning to split
	harmony *harmonyParser // gpt-oss: channels carry all three
	tools   *ToolStream    // nil without tools
	pending Delta          // released with the next Add
	open    string         // (reasoning left in the answer) the prompt's opening marker, released first
	vocab   *tokenizer.Vocab
	markers map[string]bool
}

// NewReplyParser starts parsing a reply laid out by t.
func (t *Template) NewReplyParser(o ReplyOptions) *ReplyParser {
	rf := t.ReasoningFormat()
	p := &ReplyParser{vocab: t.vocab, markers: map[string]bool{}}
	for _, m := range t.markers(o.Tools != nil) {
		p.markers[m] = true
	}
	if rf == ReasoningHarmony {
		p.harmony = newHarmonyParser(o.Reasoning, o.Tools, o.Tools != nil)
	} else {
		if tags := tagsOf(rf, t.Source); tags.start != "" {
			text, open := openAtEnd(o.Prompt, tags)
			if o.Reasoning {
				p.think = newThinkSplitter(tags, open)
			} else if open {
				p.open = text
			}
		}
		if o.Tools != nil {
			p.tools = NewToolStream(t.ToolFormat(), o.Tools)
		}
	}
	if o.Prefix != "" {
		p.pending = p.Add(o.Prefix)
	}
	return p
}

// markers are the texts of the control tokens t's formats are parsed by
// (detokenized text leaves control tokens out; EventText puts them back).
func (t *Template) markers(tools bool) []string {
	var ms []string
	switch t.ReasoningFormat() {
	case ReasoningHarmony:
		ms = append(ms, harmonyMarkers...)
	case ReasoningMistral:
		ms = append(ms, "[THINK]", "[/THINK]")
	case ReasoningGemma4:
		ms = append(ms, "<|channel>", "<channel|>")
	case ReasoningThink:
		ms = append(ms, "<think>", "</think>")
	}
	if !tools {
		return ms
	}
	switch t.ToolFormat() {
	case ToolsHermes:
		ms = append(ms, "<tool_call>", "</tool_call>")
	case ToolsLlama3:
		ms = append(ms, "<|python_tag|>")
	case ToolsMistral:
		ms = append(ms, "[TOOL_CALLS]")
	case ToolsMistral3:
		ms = append(ms, "[TOOL_CALLS]", "[ARGS]", "[CALL_ID]")
	case ToolsGranite:
		ms = append(ms, "<|tool_call|>")
	case ToolsGemma4:
		ms = append(ms, "<|tool_call>", "<tool_call|>", gemmaQuote)
	}
	return ms
}

// EventText is the text a generated token adds to the reply: the
// event's text, and the token's own text when it is a control token the
// parser reads (such as <|channel|> or [TOOL_CALLS], which detokenized
// text leaves out).
func (p *ReplyParser) EventText(ev engine.TokenEvent) string {
	v := p.vocab
	if v == nil || ev.ID < 0 || int(ev.ID) >= len(v.Types) || v.Types[ev.ID] != tokenizer.Control {
		return ev.Text
	}
	if m := string(v.Piece(ev.ID, true)); p.markers[m] {
		return ev.Text + m
	}
	return ev.Text
}

// Add takes the next piece of the reply and returns what it releases.
func (p *ReplyParser) Add(text string) Delta {
	d := p.pending
	p.pending = Delta{}
	if p.open != "" {
		text, p.open = p.open+text, ""
	}
	if p.harmony != nil {
		d.add(p.harmony.add(text))
		return d
	}
	r, c := "", text
	if p.think != nil {
		r, c = p.think.add(text)
	}
	d.Reasoning += r
	if p.tools != nil {
		out, calls := p.tools.Add(c)
		d.Content += out
		d.Calls = append(d.Calls, calls...)
	} else {
		d.Content += c
	}
	return d
}

// Finish ends the reply and returns what was held back.
func (p *ReplyParser) Finish() Delta {
	d := p.pending
	p.pending = Delta{}
	if p.open != "" {
		d.Content += p.open
		p.open = ""
	}
	if p.harmony != nil {
		d.add(p.harmony.finish())
		return d
	}
	r, c := "", ""
	if p.think != nil {
		r, c = p.think.finish()
	}
	d.Reasoning += r
	if p.tools != nil {
		out, calls := p.tools.Add(c)
		rest, more := p.tools.Finish()
		d.Content += out + rest
		d.Calls = append(append(d.Calls, calls...), more...)
	} else {
		d.Content += c
	}
	return d
}

// ParseReply splits a whole reply (see ReplyParser).
func (t *Template) ParseReply(text string, o ReplyOptions) Delta {
	p := t.NewReplyParser(o)
	d := p.Add(text)
	d.add(p.Finish())
	return d
}
