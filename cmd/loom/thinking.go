package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/tokenizer"
)

// Reasoning in the terminal: a reply's reasoning is printed apart from
// its answer, as llama.cpp's llama-cli does — between "[Start thinking]"
// and "[End thinking]" lines, in grey on a terminal — or not at all with
// --hide-thinking (ollama's --hidethinking). --reasoning on|off and
// --reasoning-effort are the template variables enable_thinking and
// reasoning_effort (llama.cpp's --reasoning and --reasoning-effort).

type thinkFlags struct {
	reasoning, effort *string
	hide              *bool
	budget            *int
}

// reasoningBudget is the engine's budget for the --reasoning-budget flag
// with template t (nil: unlimited, or a template without a reasoning block).
func (f *thinkFlags) reasoningBudget(t *chat.Template, v *tokenizer.Vocab) (*engine.ReasoningBudget, error) {
	switch n := *f.budget; {
	case n < -1:
		return nil, fmt.Errorf("--reasoning-budget %d: want -1 (unlimited), 0 (no thinking) or a number of tokens", n)
	case n == -1 || t == nil:
		return nil, nil
	}
	start, end := t.ThinkMarkers()
	if start == "" || end == "" {
		return nil, nil
	}
	return &engine.ReasoningBudget{Start: v.Encode(start, false, true), End: v.Encode(end, false, true), Tokens: *f.budget}, nil
}

// addThinkFlags adds --reasoning and --reasoning-effort, and with
// printing --hide-thinking.
func addThinkFlags(fs *flag.FlagSet, printing bool) *thinkFlags {
	f := &thinkFlags{
		reasoning: fs.String("reasoning", "auto", "thinking, for models whose template can turn it on or off: on, off, or auto (the template's default); the template variable enable_thinking"),
		effort:    fs.String("reasoning-effort", "", "reasoning effort for templates that take one, such as gpt-oss's (low, medium, high); the template variable reasoning_effort"),
		hide:      new(bool),
		budget:    fs.Int("reasoning-budget", -1, "thinking models: most tokens a reasoning block may hold before it is closed (-1 unlimited, 0 no thinking), as llama.cpp's --reasoning-budget"),
	}
	if printing {
		f.hide = fs.Bool("hide-thinking", false, "do not print the reasoning of models that think before they answer (it is printed in grey between [Start thinking] and [End thinking])")
	}
	return f
}

// extra are the template variables the flags set.
func (f *thinkFlags) extra() (map[string]any, error) {
	extra := map[string]any{}
	switch *f.reasoning {
	case "on":
		extra["enable_thinking"] = true
	case "off":
		extra["enable_thinking"] = false
	case "auto":
	default:
		return nil, fmt.Errorf("--reasoning %q: want on, off or auto", *f.reasoning)
	}
	if e := *f.effort; e != "" {
		if strings.ContainsAny(e, "\n\r") || len(e) > 32 {
			return nil, errors.New("--reasoning-effort: want a level such as low, medium or high")
		}
		extra["reasoning_effort"] = e
	}
	return extra, nil
}

const (
	ansiGrey  = "\x1b[90m"
	ansiReset = "\x1b[0m"
)

// thinkPrinter writes a reply's reasoning and answer to w as they come.
type thinkPrinter struct {
	w      io.Writer
	hide   bool
	color  bool // grey reasoning (w is a terminal)
	inside bool // between [Start thinking] and [End thinking]
	last   byte // the last byte written
}

func newThinkPrinter(w io.Writer, hide bool) *thinkPrinter {
	f, ok := w.(*os.File)
	return &thinkPrinter{w: w, hide: hide, color: ok && isTerminal(f) && os.Getenv("NO_COLOR") == ""}
}

func (p *thinkPrinter) write(s string) error {
	if s == "" {
		return nil
	}
	p.last = s[len(s)-1]
	_, err := io.WriteString(p.w, s)
	return err
}

// newline ends the line being written, if any.
func (p *thinkPrinter) newline() error {
	if p.last != 0 && p.last != '\n' {
		return p.write("\n")
	}
	return nil
}

// reasoning prints reasoning text.
func (p *thinkPrinter) reasoning(s string) error {
	if p.hide || s == "" {
		return nil
	}
	if !p.inside {
		p.inside = true
		if err := p.newline(); err != nil {
			return err
		}
		if p.color {
			io.WriteString(p.w, ansiGrey)
		}
		if err := p.write("[Start thinking]\n"); err != nil {
			return err
		}
	}
	return p.write(s)
}

// endThinking closes the reasoning block.
func (p *thinkPrinter) endThinking() error {
	if !p.inside {
		return nil
	}
	p.inside = false
	if err := p.newline(); err != nil {
		return err
	}
	err := p.write("[End thinking]\n\n")
	if p.color {
		io.WriteString(p.w, ansiReset)
	}
	return err
}

// content prints answer text.
func (p *thinkPrinter) content(s string) error {
	if s == "" {
		return nil
	}
	if err := p.endThinking(); err != nil {
		return err
	}
	return p.write(s)
}
