package chat

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loom-inference/loom/jinja"
)

// Reasoning: models that think before they answer write the thinking
// between markers their chat template knows, and a reply is split into
// its reasoning and its answer (OpenAI's reasoning_content and content,
// as llama.cpp's server and vLLM return them).

// ReasoningFormat is how a model family marks its reasoning.
type ReasoningFormat string

const (
	// ReasoningNone: the template knows no reasoning markers.
	ReasoningNone ReasoningFormat = ""
	// ReasoningThink: <think>…</think> before the answer (Qwen3, QwQ,
	// SmolLM3, DeepSeek-R1 and its distills, Granite 3.3, whose answer
	// may be wrapped in <response>…</response>).
	ReasoningThink ReasoningFormat = "think"
	// ReasoningMistral: [THINK]…[/THINK] before the answer (Magistral,
	// Ministral 3 Reasoning).
	ReasoningMistral ReasoningFormat = "mistral"
	// ReasoningGemma4: <|channel>thought…<channel|> blocks (Gemma 4).
	ReasoningGemma4 ReasoningFormat = "gemma4"
	// ReasoningHarmony: OpenAI's harmony channels (gpt-oss): analysis
	// messages are the reasoning, final ones the answer, and messages to
	// functions.NAME are tool calls.
	ReasoningHarmony ReasoningFormat = "harmony"
)

// ReasoningFormat tells the family's reasoning markers from the
// template's source, as llama.cpp does.
func (t *Template) ReasoningFormat() ReasoningFormat {
	switch src := t.Source; {
	case strings.Contains(src, "<|channel|>"):
		return ReasoningHarmony
	case strings.Contains(src, "[THINK]"):
		return ReasoningMistral
	case strings.Contains(src, "<|channel>"):
		return ReasoningGemma4
	case strings.Contains(src, "<think>") || strings.Contains(src, "</think>"):
		return ReasoningThink
	}
	return ReasoningNone
}

// ThinkMarkers are the text that opens and closes a reasoning block in
// the template's format ("" for none, and for harmony's channels, which
// are not one block), for a reasoning budget to count and close.
func (t *Template) ThinkMarkers() (start, end string) {
	tags := tagsOf(t.ReasoningFormat(), t.Source)
	return tags.start, tags.end
}

// thinkTags are a format's reasoning markers.
type thinkTags struct {
	start, end string
	// anywhere: reasoning blocks may come between pieces of the answer
	// (Gemma 4), not only first; stray is an end marker without a start,
	// dropped there, and channel an opening of a channel other than
	// thought, dropped too.
	anywhere       bool
	stray, channel string
	// response wraps the answer after reasoning (Granite 3.3).
	response, responseEnd string
}

func tagsOf(f ReasoningFormat, src string) thinkTags {
	switch f {
	case ReasoningMistral:
		return thinkTags{start: "[THINK]", end: "[/THINK]"}
	case ReasoningGemma4:
		return thinkTags{start: "<|channel>thought", end: "<channel|>", anywhere: true, stray: "<channel|>", channel: "<|channel>"}
	case ReasoningThink:
		t := thinkTags{start: "<think>", end: "</think>"}
		if strings.Contains(src, "<response>") {
			t.response, t.responseEnd = "<response>", "</response>"
		}
		return t
	}
	return thinkTags{}
}

// thinkSplitter splits a streamed reply into reasoning and answer at a
// format's markers. Text that could be the start of a marker is held
// back until it is known, so no part of a marker is ever released as
// text; reasoning is trimmed of the whitespace around it, and the answer
// of the whitespace after the reasoning.
type thinkSplitter struct {
	tags thinkTags
	// state: 0 before anything (a reply may open with the start marker),
	// 1 inside reasoning, 2 in the answer.
	state   int
	started bool // (state 1) some reasoning text was released
	skipWS  bool // drop whitespace before the next text of the answer
	held    strings.Builder
	lead    strings.Builder // (state 0) whitespace before anything
	ws      strings.Builder // (state 1) whitespace held until text follows it
	seen    bool            // a reasoning block was seen (Granite's <response>)
	opened  bool            // (Granite) the answer opened with <response>
}

func newThinkSplitter(tags thinkTags, open bool) *thinkSplitter {
	s := &thinkSplitter{tags: tags}
	if open {
		s.state, s.seen = 1, true
	}
	return s
}

// add takes the next piece of the reply and returns the reasoning and
// answer text it releases.
func (s *thinkSplitter) add(text string) (reasoning, content string) {
	s.held.WriteString(text)
	buf := s.held.String()
	s.held.Reset()
	// An incomplete UTF-8 sequence at the end waits for its next bytes:
	// the whitespace trimming below reads runes, and a split U+0085 or
	// U+3000 would pass as text. It goes back after what precedes it.
	tail := buf[len(buf)-incompleteRune(buf):]
	buf = buf[:len(buf)-len(tail)]
	defer s.held.WriteString(tail)
	var r, c strings.Builder
	for buf != "" {
		switch s.state {
		case 0:
			t := strings.TrimLeftFunc(buf, unicode.IsSpace)
			s.lead.WriteString(buf[:len(buf)-len(t)])
			switch {
			case strings.HasPrefix(t, s.tags.start):
				buf = t[len(s.tags.start):]
				s.state, s.seen = 1, true
				s.lead.Reset()
				continue
			case strings.HasPrefix(s.tags.start, t): // may still open reasoning
				s.held.WriteString(t)
				buf = ""
				continue
			}
			s.state = 2
			buf = s.lead.String() + t
			s.lead.Reset()
		case 1:
			i := strings.Index(buf, s.tags.end)
			body := buf
			if i >= 0 {
				body = buf[:i]
			} else {
				k := partialSuffix(buf, s.tags.end)
				body = buf[:len(buf)-k]
				s.held.WriteString(buf[len(buf)-k:])
			}
			s.reason(&r, body)
			if i < 0 {
				buf = ""
				continue
			}
			buf = buf[i+len(s.tags.end):]
			s.state, s.started, s.skipWS = 2, false, true
			s.ws.Reset()
		case 2:
			buf = s.answer(&c, buf)
		}
	}
	return r.String(), c.String()
}

// reason releases reasoning text, trimmed at both ends: leading
// whitespace is dropped, trailing whitespace held until text follows.
func (s *thinkSplitter) reason(r *strings.Builder, body string) {
	if !s.started {
		body = strings.TrimLeftFunc(body, unicode.IsSpace)
		if body == "" {
			return
		}
		s.started = true
	}
	trimmed := strings.TrimRightFunc(body, unicode.IsSpace)
	if trimmed == "" {
		s.ws.WriteString(body)
		return
	}
	r.WriteString(s.ws.String())
	r.WriteString(trimmed)
	s.ws.Reset()
	s.ws.WriteString(body[len(trimmed):])
}

// answer releases answer text from buf and returns what is left to
// parse (a reasoning block that opens in it, with Gemma 4).
func (s *thinkSplitter) answer(c *strings.Builder, buf string) string {
	if s.skipWS {
		buf = strings.TrimLeftFunc(buf, unicode.IsSpace)
		if buf == "" {
			return ""
		}
		s.skipWS = false
	}
	if s.tags.response != "" && s.seen && !s.opened { // Granite: <response> opens the answer
		if strings.HasPrefix(buf, s.tags.response) {
			buf, s.opened = buf[len(s.tags.response):], true
		} else if strings.HasPrefix(s.tags.response, buf) {
			s.held.WriteString(buf)
			return ""
		} else {
			s.seen = false // an answer without the wrapper
		}
	}
	var markers []string
	if s.tags.anywhere {
		markers = []string{s.tags.start, s.tags.stray, s.tags.channel}
	}
	if s.opened {
		markers = append(markers, s.tags.responseEnd)
	}
	if len(markers) == 0 {
		c.WriteString(buf)
		return ""
	}
	i, m := firstOf(buf, markers)
	if i < 0 {
		k := 0
		for _, m := range markers {
			k = max(k, partialSuffix(buf, m))
		}
		c.WriteString(buf[:len(buf)-k])
		s.held.WriteString(buf[len(buf)-k:])
		return ""
	}
	c.WriteString(buf[:i])
	rest := buf[i:]
	switch {
	case m == s.tags.responseEnd && s.opened:
		s.opened = false
		return rest[len(m):]
	case m == s.tags.start:
		s.state, s.seen = 1, true
		return rest[len(m):]
	case m == s.tags.channel && strings.HasPrefix(s.tags.start, rest):
		s.held.WriteString(rest) // "<|channel>thou…": wait for the rest
		return ""
	}
	return rest[len(m):] // a stray marker: dropped
}

// finish returns what is held at the end of the reply.
func (s *thinkSplitter) finish() (reasoning, content string) {
	rest := s.held.String()
	s.held.Reset()
	switch s.state {
	case 0:
		return "", s.lead.String() + rest
	case 1:
		var r strings.Builder
		s.reason(&r, rest)
		return r.String(), ""
	}
	if s.skipWS {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
	}
	if s.opened && rest == s.tags.responseEnd {
		rest = ""
	}
	return "", rest
}

// firstOf finds the earliest of markers in s (the longest at a tie).
func firstOf(s string, markers []string) (int, string) {
	at, which := -1, ""
	for _, m := range markers {
		if m == "" {
			continue
		}
		if i := strings.Index(s, m); i >= 0 && (at < 0 || i < at || i == at && len(m) > len(which)) {
			at, which = i, m
		}
	}
	return at, which
}

// partialSuffix is the length of the longest proper prefix of marker
// that s ends with: text to hold back, as it may begin the marker.
func partialSuffix(s, marker string) int {
	for k := min(len(marker)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, marker[:k]) {
			return k
		}
	}
	return 0
}

// openAtEnd reports whether a prompt leaves the reply inside reasoning:
// it ends with the start marker (DeepSeek-R1's "<think>\n", a template
// that opens the thinking for the model), and returns the marker's text
// from there on.
func openAtEnd(prompt string, tags thinkTags) (string, bool) {
	if tags.start == "" {
		return "", false
	}
	t := strings.TrimRightFunc(prompt, unicode.IsSpace)
	if !strings.HasSuffix(t, tags.start) {
		return "", false
	}
	return prompt[len(t)-len(tags.start):], true
}

// adaptReasoning gives the assistant turns' reasoning_content to the
// template the way its family reads it, as llama.cpp does: gpt-oss's
// template reads "thinking" (a turn with tool calls keeps it in place of
// its content), Ministral 3's a content block of type "thinking" before
// the text.
func (t *Template) adaptReasoning(msgs any) {
	list, _ := msgs.([]any)
	rf := t.ReasoningFormat()
	if rf != ReasoningHarmony && !(rf == ReasoningMistral && t.ToolFormat() == ToolsMistral3) {
		return
	}
	for _, m := range list {
		d, ok := m.(*jinja.Dict)
		if !ok {
			continue
		}
		rc, _ := d.Get("reasoning_content")
		r, ok := rc.(string)
		if !ok || r == "" {
			continue
		}
		if rf == ReasoningHarmony {
			d.Set("thinking", r)
			if tc, _ := d.Get("tool_calls"); tc != nil {
				d.Set("content", "")
			}
			continue
		}
		blocks := []any{dictOf("type", "thinking", "thinking", r)}
		switch c, _ := d.Get("content"); c := c.(type) {
		case string:
			blocks = append(blocks, dictOf("type", "text", "text", c))
		case []any:
			blocks = append(blocks, c...)
		}
		d.Set("content", blocks)
	}
}

// dictOf makes a template dict of key, value pairs.
func dictOf(kv ...any) *jinja.Dict {
	d := jinja.NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		d.Set(kv[i], kv[i+1])
	}
	return d
}

// incompleteRune is the length of an unfinished UTF-8 sequence ending s
// (0 when s ends on a whole rune or on bytes that can never form one).
func incompleteRune(s string) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(s); i++ {
		if utf8.RuneStart(s[len(s)-i]) {
			if utf8.FullRuneInString(s[len(s)-i:]) {
				return 0
			}
			return i
		}
	}
	return 0
}
