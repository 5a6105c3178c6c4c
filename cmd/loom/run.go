package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/sample"
)

func loadFlags(fs *flag.FlagSet) (*string, *int, *string) {
	m := fs.String("m", "", "model file (.gguf, or llama2.c .bin with --tokenizer)")
	t := fs.Int("t", defaultThreads(), "threads")
	tok := fs.String("tokenizer", "", "llama2.c tokenizer.bin for a .bin checkpoint")
	return m, t, tok
}

// sampling holds the sampling flags.
type sampling struct {
	temp, topP, minP, rep, freq, pres *float64
	topK, lastN                       *int
	seed                              *uint64
	ignoreEOS                         *bool
	stops                             []string
}

func samplingFlags(fs *flag.FlagSet) *sampling {
	s := &sampling{
		temp:      fs.Float64("temp", 0.8, "temperature (0: greedy)"),
		topK:      fs.Int("top-k", 40, "top-k (0: off)"),
		topP:      fs.Float64("top-p", 0.95, "top-p (1: off)"),
		minP:      fs.Float64("min-p", 0.05, "min-p (0: off)"),
		rep:       fs.Float64("repeat-penalty", 1, "repetition penalty (1: off)"),
		freq:      fs.Float64("frequency-penalty", 0, "frequency penalty"),
		pres:      fs.Float64("presence-penalty", 0, "presence penalty"),
		seed:      fs.Uint64("seed", 0, "random seed (0: random)"),
		lastN:     fs.Int("repeat-last-n", 64, "how many recent tokens the penalties look at"),
		ignoreEOS: fs.Bool("ignore-eos", false, "keep generating past end-of-generation tokens"),
	}
	fs.Func("stop", "stop string (repeatable): generation ends before it", func(v string) error {
		if v == "" {
			return fmt.Errorf("empty stop string")
		}
		s.stops = append(s.stops, v)
		return nil
	})
	return s
}

// modelDefaults takes the model's own sampling settings (a Hugging Face
// folder's generation_config.json) for the flags the user did not set.
func (s *sampling) modelDefaults(fs *flag.FlagSet, d map[string]float64) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range d {
		if set[name] || fs.Lookup(name) == nil {
			continue
		}
		if err := fs.Set(name, strconv.FormatFloat(v, 'g', -1, 64)); err != nil {
			return fmt.Errorf("generation_config.json: %s %v: %w", name, v, err)
		}
	}
	return s.check()
}

// check rejects out-of-range values, naming the flag and its range.
func (s *sampling) check() error {
	switch {
	case !(*s.temp >= 0 && *s.temp <= 100):
		return fmt.Errorf("--temp %v: want 0 (greedy) to 100", *s.temp)
	case *s.topK < 0:
		return fmt.Errorf("--top-k %d: want 0 (off) or more", *s.topK)
	case !(*s.topP > 0 && *s.topP <= 1):
		return fmt.Errorf("--top-p %v: want a value in (0, 1]", *s.topP)
	case !(*s.minP >= 0 && *s.minP <= 1):
		return fmt.Errorf("--min-p %v: want a value in [0, 1]", *s.minP)
	case !(*s.rep > 0 && *s.rep <= 10):
		return fmt.Errorf("--repeat-penalty %v: want a value in (0, 10]", *s.rep)
	case !(*s.freq >= -2 && *s.freq <= 2):
		return fmt.Errorf("--frequency-penalty %v: want -2 to 2", *s.freq)
	case !(*s.pres >= -2 && *s.pres <= 2):
		return fmt.Errorf("--presence-penalty %v: want -2 to 2", *s.pres)
	case *s.lastN < 0:
		return fmt.Errorf("--repeat-last-n %d: want 0 or more", *s.lastN)
	}
	return nil
}

// parseGeneration parses a generating command's flags, checks them and
// returns its positional arguments.
func parseGeneration(fs *flag.FlagSet, args []string, sp *sampling, threads, ctx, n *int) ([]string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	if err := sp.check(); err != nil {
		return nil, err
	}
	return pos, checkCommon(*threads, *ctx, *n)
}

// checkCommon rejects bad thread and context values.
func checkCommon(threads, ctx, n int) error {
	switch {
	case threads < 1 || threads > 256:
		return fmt.Errorf("-t %d: want 1 to 256 threads", threads)
	case ctx < 0 || ctx > 1<<20:
		return fmt.Errorf("-c (--ctx-size) %d: want 0 (the model's) or a context size up to %d", ctx, 1<<20)
	case n < 0:
		return fmt.Errorf("-n %d: want 0 (until the end) or more", n)
	}
	return nil
}

// ctxFlags are -c and --ctx-size, one value.
func ctxFlags(fs *flag.FlagSet) *int {
	c := fs.Int("c", 0, "context size in tokens (0: the model's, at most 4096)")
	fs.IntVar(c, "ctx-size", 0, "same as -c")
	return c
}

// checkTokenizer refuses --tokenizer for a model that is not a llama2.c
// checkpoint (GGUF files and folders carry their own vocabulary).
func checkTokenizer(tok, model string) error {
	if tok != "" && !strings.EqualFold(filepath.Ext(model), ".bin") {
		return fmt.Errorf("--tokenizer %s: only a llama2.c .bin checkpoint takes a tokenizer file (the model is %s)", tok, orDefault(model))
	}
	return nil
}

func orDefault(model string) string {
	if model == "" {
		return "the default model"
	}
	return model
}

// warnContext warns, as llama.cpp does, when the context is longer than
// the one the model was trained on.
func warnContext(e *engine.Engine) {
	if train := e.Info().CtxLen; train > 0 && e.CtxLen() > train {
		fmt.Fprintf(os.Stderr, "loom: warning: the context of %d tokens is longer than the %d the model was trained on: output past %d tokens may degrade\n", e.CtxLen(), train, train)
	}
}

// readPrompt resolves -p and -f: "-p -" or piped input without -p reads
// standard input.
func readPrompt(p, file string) (string, error) {
	switch {
	case file != "" && p != "":
		return "", errors.New("give -p or -f, not both")
	case file != "":
		b, err := os.ReadFile(file)
		return string(b), err
	case p == "-" || (p == "" && !isTerminal(os.Stdin) && stdinHasData()):
		b, err := io.ReadAll(os.Stdin)
		return string(b), err
	}
	return p, nil
}

// stdinHasData reports a pipe or file on standard input (not /dev/null).
func stdinHasData() bool {
	st, err := os.Stdin.Stat()
	return err == nil && (st.Mode()&os.ModeNamedPipe != 0 || st.Mode().IsRegular() && st.Size() > 0)
}

func (s *sampling) params() sample.Params {
	seed := *s.seed
	if seed == 0 {
		seed = uint64(os.Getpid())<<20 ^ uint64(runtimeNano())
	}
	return sample.Params{Temp: float32(*s.temp), TopK: *s.topK, TopP: float32(*s.topP), MinP: float32(*s.minP),
		RepeatPenalty: float32(*s.rep), FreqPenalty: float32(*s.freq), PresPenalty: float32(*s.pres), Seed: seed,
		PenaltyLastN: *s.lastN}
}

// modelPath turns -m into a path: a file or folder as given, OWNER/REPO
// from the Hub cache (pulled on first use), or the default model when empty.
func modelPath(m string) (string, error) {
	path, err := resolveModel(m)
	if err != nil || path != "" {
		return path, err
	}
	return engine.FindModel(engine.DefaultModel)
}

// loadModel loads path (a file, or OWNER/REPO[:QUANT] from the Hub cache,
// pulled on first use), or the default model when path is empty.
func loadModel(path string, o engine.Options) (*engine.Engine, error) {
	path, err := modelPath(path)
	if err != nil {
		return nil, err
	}
	done := loadProgress(path)
	e, err := engine.Load(path, o)
	done()
	if err != nil {
		return nil, err
	}
	warn(e.Vocab.Warnings)
	warnContext(e)
	return e, nil
}

// loadProgress shows, on a terminal, a line while loading (and repacking)
// takes more than half a second; the returned func ends it.
func loadProgress(path string) func() {
	if !isTerminal(os.Stderr) {
		return func() {}
	}
	start := time.Now()
	stop := make(chan struct{})
	shown := make(chan bool, 1)
	go func() {
		select {
		case <-stop:
			shown <- false
		case <-time.After(500 * time.Millisecond):
			fmt.Fprintf(os.Stderr, "loading %s …", filepath.Base(path))
			<-stop
			shown <- true
		}
	}()
	return func() {
		close(stop)
		if <-shown {
			fmt.Fprintf(os.Stderr, " %.1fs\n", time.Since(start).Seconds())
		}
	}
}

// warn prints what loading noticed, as llama.cpp logs it.
func warn(ws []string) {
	for _, w := range ws {
		fmt.Fprintln(os.Stderr, "loom: warning:", w)
	}
}

func cmdRun(args []string) error {
	fs := newFlags("run")
	quantizeTo := fs.String("quantize", "", "for a Hugging Face folder: quantize the weights while loading (Q8_0, Q4_K_M, …, as llama-quantize)")
	model, threads, tok := loadFlags(fs)
	prompt := fs.String("p", "", "prompt (- reads standard input)")
	promptFile := fs.String("f", "", "read the prompt from this file")
	n := fs.Int("n", 256, "tokens to generate (0: until end of text or context)")
	sp := samplingFlags(fs)
	ctxLen := ctxFlags(fs)
	chat := fs.Bool("chat", false, "lay the prompt out as one user turn with the model's chat template")
	tmpl := fs.String("chat-template", "", "chat template: a built-in name (chatml, llama2, llama3, gemma, mistral, phi3), a .jinja file or a tokenizer_config.json")
	gf := addGrammarFlags(fs, true)
	pos, err := parseGeneration(fs, args, sp, threads, ctxLen, n)
	if err != nil {
		return err
	}
	if words, ok := modelAndPrompt(model, pos); ok {
		set := setFlags(fs)
		switch {
		case set["p"]:
			return bothPrompts("-p", words)
		case set["f"]:
			return bothPrompts("-f", words)
		}
		*prompt = words
	}
	if err := checkTokenizer(*tok, *model); err != nil {
		return err
	}
	if *tmpl != "" && !*chat {
		return errors.New("--chat-template lays out --chat prompts: give --chat too")
	}
	gram, err := gf.load()
	if err != nil {
		return err
	}
	text, err := readPrompt(*prompt, *promptFile)
	if err != nil {
		return err
	}
	*prompt = text
	e, err := loadModel(*model, engine.Options{Quantize: *quantizeTo, Threads: *threads, Tokenizer: *tok, CtxLen: *ctxLen, ChatTemplate: *tmpl})
	if err != nil {
		return err
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	if err := sp.modelDefaults(fs, e.SamplingDefaults()); err != nil {
		return err
	}
	req := engine.Request{Prompt: *prompt, MaxTokens: *n, Sample: sp.params(), Stop: sp.stops, IgnoreEOS: *sp.ignoreEOS, Grammar: gram}
	if *chat {
		ids, _, err := e.ChatPrompt([]engine.Message{{Role: "user", Content: *prompt}}, engine.ChatOptions{AddGenerationPrompt: true})
		if err != nil {
			return err
		}
		req.Tokens = ids
	}
	st, err := e.Generate(ctx, req, func(text string) error {
		if _, err := out.WriteString(text); err != nil {
			return err
		}
		return out.Flush()
	})
	out.WriteString("\n")
	out.Flush()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "prompt: %d tokens, %.1f tok/s | generated: %d tokens, %.1f tok/s | stop: %s\n",
		st.PromptTokens, st.PrefillTokS(), st.Generated, st.DecodeTokS(), st.StopReason)
	return nil
}
