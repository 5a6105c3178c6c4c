package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/loom-inference/loom/chat"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/peterh/liner"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/jinja"
)

// cmdTemplate renders a chat template with the variables of a JSON file
// and prints exactly the result.
func cmdTemplate(args []string) error {
	fs := newFlags("template")
	file := fs.String("template", "", "a .jinja template file")
	model := fs.String("m", "", "take the template (and bos/eos tokens) from this model")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) == 0:
		return errors.New("want CONTEXT.json (loom help template)")
	case (*file == "") == (*model == ""):
		return errors.New("give one of --template FILE.jinja and -m MODEL")
	}
	if err := unexpected(pos, 1); err != nil {
		return err
	}
	ctxJSON, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	v, err := jinja.DecodeJSON(ctxJSON)
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	ctxVars, ok := v.(*jinja.Dict)
	if !ok {
		return fmt.Errorf("%s: the context must be a JSON object", pos[0])
	}
	vars := jinja.NewDict()
	var src string
	if *model != "" {
		path, err := resolveModel(*model)
		if err != nil {
			return err
		}
		e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 32, KVTokens: 32})
		if err != nil {
			return err
		}
		defer e.Close()
		t, err := chat.ForModel(e, "")
		if err != nil {
			return err
		}
		src = t.Source
		vars.Set("bos_token", t.BOS)
		vars.Set("eos_token", t.EOS)
	} else {
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		src = string(b)
	}
	// As transformers passes them: tools and documents always defined
	// (None when absent), add_generation_prompt false by default.
	vars.Set("tools", nil)
	vars.Set("documents", nil)
	vars.Set("add_generation_prompt", false)
	now := time.Time{}
	for _, k := range ctxVars.Keys() {
		val, _ := ctxVars.Get(k)
		if k == "now" {
			s, _ := val.(string)
			if now, err = parseNow(s); err != nil {
				return err
			}
			continue
		}
		vars.Set(k, val)
	}
	if now.IsZero() {
		now = time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC)
	}
	tpl, err := jinja.Parse(src)
	if err != nil {
		return err
	}
	out, err := tpl.Render(vars, now)
	if err != nil {
		return err
	}
	_, err = io.WriteString(os.Stdout, out)
	return err
}

func parseNow(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("now %q is not an ISO 8601 time", s)
}

// cmdChat is an interactive conversation that keeps its KV cache across
// turns.
func cmdChat(args []string) error {
	fs := newFlags("chat")
	model, threads, tok := loadFlags(fs)
	quantizeTo := fs.String("quantize", "", "for a Hugging Face folder: quantize the weights while loading (Q8_0, Q4_K_M, …, as llama-quantize)")
	system := fs.String("system", "", "system prompt")
	n := fs.Int("n", 512, "most tokens per reply (0: until end of turn or context)")
	sp := samplingFlags(fs)
	ctxLen := ctxFlags(fs)
	tmpl := fs.String("chat-template", "", "chat template: a built-in name (chatml, llama2, llama3, gemma, mistral, phi3), a .jinja file or a tokenizer_config.json")
	spec := addSpecFlags(fs)
	lora := addLoRAFlags(fs)
	rf := addRopeFlags(fs)
	kvf := addCacheFlags(fs)
	think := addThinkFlags(fs, true)
	pos, err := parseGeneration(fs, args, sp, threads, ctxLen, n)
	if err != nil {
		return err
	}
	extra, err := think.extra()
	if err != nil {
		return err
	}
	draft, specP, err := spec.params(false)
	if err != nil {
		return err
	}
	if err := oneModel(model, pos); err != nil {
		return err
	}
	if err := checkTokenizer(*tok, *model); err != nil {
		return err
	}
	e, err := loadModel(*model, kvf.apply(engine.Options{Quantize: *quantizeTo, Threads: *threads, Tokenizer: *tok, CtxLen: *ctxLen,
		DraftModel: draft, Spec: specP, LoRA: lora.adapters(), Rope: rf.override()}))
	if err != nil {
		return err
	}
	defer e.Close()
	tp, err := chat.ForModel(e, *tmpl)
	if err != nil {
		return err
	}
	c := chat.NewConversation(e, tp, *system)
	budget, err := think.reasoningBudget(tp, e.Vocab())
	if err != nil {
		return err
	}
	defer c.Close()
	c.Opts.Extra = extra
	if err := sp.modelDefaults(fs, e.SamplingDefaults()); err != nil {
		return err
	}
	params := sp.params()
	sysText := *system
	var last engine.Result // the last reply's
	reply := func(user string, w io.Writer) error {
		// Ctrl-C stops this reply, not the program.
		ctx, cancel := context.WithCancel(context.Background())
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		go func() {
			select {
			case <-sig:
				cancel()
			case <-ctx.Done():
			}
		}()
		defer func() { signal.Stop(sig); cancel() }()
		params.Seed++
		pr := newThinkPrinter(w, *think.hide)
		flush := func(err error) error {
			if f, ok := w.(interface{ Flush() error }); ok {
				f.Flush()
			}
			return err
		}
		c.OnReasoning = func(s string) error { return flush(pr.reasoning(s)) }
		_, st, err := c.Reply(ctx, user, engine.Request{MaxTokens: *n, Sample: params, Stop: sp.stops, IgnoreEOS: *sp.ignoreEOS, ReasoningBudget: budget}, func(s string) error {
			return flush(pr.content(s))
		})
		pr.endThinking()
		last = st
		io.WriteString(w, "\n")
		if st.FinishReason == engine.FinishCancelled {
			io.WriteString(w, "[stopped]\n")
		}
		if c.Dropped > 0 || st.ContextShifts > 0 {
			fmt.Fprintf(w, "[context full: %d oldest messages dropped, %d shifts during the reply]\n", c.Dropped, st.ContextShifts)
		}
		return err
	}
	command := func(line string, w io.Writer) (quit bool) {
		cmd, arg, _ := strings.Cut(line, " ")
		switch cmd {
		case "/bye", "/exit", "/quit":
			return true
		case "/reset":
			c.Reset(sysText)
			fmt.Fprintln(w, "[conversation reset]")
		case "/system":
			sysText = strings.TrimSpace(arg)
			c.Reset(sysText)
			fmt.Fprintln(w, "[system prompt set; conversation reset]")
		case "/stats":
			fmt.Fprintf(w, "[%d messages, %d tokens in the cache; last turn: %d prompt tokens computed, %d reused%s]\n",
				len(c.Msgs), len(c.Tokens()), c.Computed, c.Reused, strings.ReplaceAll(specText(last), " |", ";"))
		case "/think": // thinking on, off or the template's default; /think hide|show folds the printed reasoning
			switch a := strings.TrimSpace(arg); a {
			case "on", "off":
				if c.Opts.Extra == nil {
					c.Opts.Extra = map[string]any{}
				}
				c.Opts.Extra["enable_thinking"] = a == "on"
				fmt.Fprintf(w, "[thinking %s]\n", a)
			case "auto":
				delete(c.Opts.Extra, "enable_thinking")
				fmt.Fprintln(w, "[thinking as the template decides]")
			case "hide", "show":
				*think.hide = a == "hide"
				fmt.Fprintf(w, "[reasoning %s]\n", map[bool]string{true: "hidden", false: "shown"}[*think.hide])
			default:
				fmt.Fprintln(w, "[/think on|off|auto, or /think hide|show]")
			}
		default:
			fmt.Fprintln(w, "[commands: /bye, /reset, /system TEXT, /stats, /think on|off|auto|hide|show]")
		}
		return false
	}
	if !isTerminal(os.Stdin) {
		// Scriptable: one user message per line, one reply each.
		out := bufio.NewWriter(os.Stdout)
		defer out.Flush()
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" {
				continue
			}
			if strings.HasPrefix(line, "/") {
				if command(line, out) {
					return nil
				}
				continue
			}
			if err := reply(line, out); err != nil {
				return err
			}
			out.Flush()
		}
		return sc.Err()
	}
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	fmt.Printf("loom chat — %s (template %s). /bye or Ctrl-D to quit, Ctrl-C stops a reply.\n", e.Path(), tp.Name)
	for {
		line, err := ln.Prompt(">>> ")
		if errors.Is(err, liner.ErrPromptAborted) {
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			fmt.Println()
			return nil
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ln.AppendHistory(line)
		if strings.HasPrefix(line, "/") {
			if command(line, os.Stdout) {
				return nil
			}
			continue
		}
		if err := reply(line, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "error: %v\n", err)
		}
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
