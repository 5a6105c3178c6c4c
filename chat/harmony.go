package chat

import (
	"regexp"
	"strings"
)

// OpenAI's harmony format (gpt-oss). After the prompt's
// "<|start|>assistant" the model writes messages, each a header, then
// <|message|>, the body and a terminator:
//
//	<|channel|>analysis<|message|>…reasoning…<|end|>
//	<|start|>assistant<|channel|>final<|message|>…the answer…<|return|>
//	<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{…}<|call|>
//
// The recipient (" to=functions.NAME") may also follow the channel, a
// "<|constrain|>json" may precede the content type, and <|return|> and
// <|call|> end generation (they never reach the text). analysis is the
// reasoning, final and recipient-less commentary (a preamble) the answer,
// a message to functions.NAME a tool call; messages to other recipients
// (built-in tools the request did not offer) are dropped, as llama.cpp
// does.

const (
	hStart     = "<|start|>"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hEnd       = "<|end|>"
	hCall      = "<|call|>"
	hReturn    = "<|return|>"
	hConstrain = "<|constrain|>"
)

// harmonyMarkers are the control tokens a harmony reply is parsed by.
var harmonyMarkers = []string{hStart, hChannel, hMessage, hEnd, hCall, hReturn, hConstrain}

// maxHarmonyHeader bounds a header: longer text before <|message|> is
// not a header.
const maxHarmonyHeader = 512

var (
	harmonyRecipient = regexp.MustCompile(`(?:^|\s)to=([^\s<]+)`)
	harmonyChannelRE = regexp.MustCompile(`<\|channel\|>([A-Za-z0-9_-]+)`)
)

// harmonyParser parses a streamed harmony reply.
type harmonyParser struct {
	reasoning bool // extract analysis (else it stays in the content, markers and all)
	tools     []Tool
	toolsOn   bool
	held      strings.Builder
	inBody    bool
	plain     bool   // the reply is not harmony: all of it is answer
	header    string // of the message being read
	kind      int    // of the message being read
	call      strings.Builder
	callName  string
}

// Kinds of harmony messages.
const (
	hAnswer = iota
	hReasoning
	hToolCall
	hDropped
)

func newHarmonyParser(reasoning bool, tools []Tool, toolsOn bool) *harmonyParser {
	return &harmonyParser{reasoning: reasoning, tools: tools, toolsOn: toolsOn}
}

func (p *harmonyParser) add(text string) Delta {
	p.held.WriteString(text)
	buf := p.held.String()
	p.held.Reset()
	var d Delta
	for buf != "" {
		if p.plain {
			d.Content += buf
			break
		}
		if !p.inBody {
			i := strings.Index(buf, hMessage)
			head := buf[:len(buf)-partialSuffix(buf, hMessage)]
			if i >= 0 {
				head = buf[:i]
			}
			if len(head) > maxHarmonyHeader || !harmonyHeaderPrefix(head) {
				p.plain = true
				continue
			}
			if i < 0 {
				p.held.WriteString(buf)
				break
			}
			p.beginMessage(buf[:i], &d)
			buf = buf[i+len(hMessage):]
			continue
		}
		i, m := firstOf(buf, []string{hEnd, hCall, hReturn, hStart})
		body := buf
		if i >= 0 {
			body = buf[:i]
		} else {
			k := 0
			for _, m := range []string{hEnd, hCall, hReturn, hStart} {
				k = max(k, partialSuffix(buf, m))
			}
			body = buf[:len(buf)-k]
			p.held.WriteString(buf[len(buf)-k:])
		}
		p.body(body, &d)
		if i < 0 {
			break
		}
		buf = buf[i+len(m):]
		p.endMessage(m, &d)
		if m == hStart { // a message that was not ended: its successor's header follows
			buf = hStart + buf
		}
	}
	return d
}

// harmonyHeaderPrefix reports whether s can begin a message header:
// "<|start|>assistant" (optional), then a channel or a recipient.
func harmonyHeaderPrefix(s string) bool {
	const role = hStart + "assistant"
	if strings.HasPrefix(role, s) {
		return true
	}
	t := strings.TrimPrefix(s, role)
	for _, p := range []string{hChannel, " to="} {
		if strings.HasPrefix(t, p) || strings.HasPrefix(p, t) {
			return true
		}
	}
	return false
}

// beginMessage reads a header (the text before <|message|>).
func (p *harmonyParser) beginMessage(header string, d *Delta) {
	header = strings.TrimPrefix(strings.TrimPrefix(header, hStart), "assistant")
	p.inBody, p.header, p.callName = true, header, ""
	p.call.Reset()
	channel := ""
	if m := harmonyChannelRE.FindAllStringSubmatch(header, -1); len(m) > 0 {
		channel = m[len(m)-1][1] // "<|channel|>commentary to=assistant<|channel|>final": the last
	}
	recipient := ""
	for _, m := range harmonyRecipient.FindAllStringSubmatch(header, -1) {
		if m[1] != "assistant" {
			recipient = m[1]
		}
	}
	switch {
	case strings.HasPrefix(recipient, "functions."):
		p.kind, p.callName = hToolCall, strings.TrimPrefix(recipient, "functions.")
	case recipient != "":
		p.kind = hDropped
	case channel == "analysis":
		p.kind = hReasoning
		if !p.reasoning {
			d.Content += hChannel + "analysis" + hMessage
		}
	default: // final, a commentary preamble, or a message without a channel
		p.kind = hAnswer
	}
}

func (p *harmonyParser) body(text string, d *Delta) {
	switch p.kind {
	case hReasoning:
		if p.reasoning {
			d.Reasoning += text
		} else {
			d.Content += text
		}
	case hAnswer:
		d.Content += text
	case hToolCall:
		p.call.WriteString(text)
	}
}

// endMessage closes the message being read at terminator m.
func (p *harmonyParser) endMessage(m string, d *Delta) {
	if p.kind == hReasoning && !p.reasoning {
		d.Content += hEnd
	}
	if p.kind == hToolCall {
		p.flushCall(d)
	}
	p.inBody = false
}

// flushCall turns the tool call being read into a call, when it is one
// of the request's tools with a JSON object for arguments; anything else
// is dropped, as an unsolicited call is.
func (p *harmonyParser) flushCall(d *Delta) {
	if p.kind != hToolCall || !p.toolsOn {
		return
	}
	raw := strings.TrimSpace(p.call.String())
	p.call.Reset()
	c, ok := decodeArgs(p.callName, []byte(raw), p.tools)
	if ok {
		d.Calls = append(d.Calls, c)
	}
	p.kind = hDropped
}

func (p *harmonyParser) finish() Delta {
	var d Delta
	rest := p.held.String()
	p.held.Reset()
	switch {
	case p.plain:
		d.Content = rest
	case !p.inBody:
		// An unfinished header: nothing of the answer.
	default:
		p.body(rest, &d)
		if p.kind == hToolCall {
			p.flushCall(&d)
		}
	}
	return d
}
