package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/loom-inference/loom/chat"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/tokenizer"
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
	warn(e.Vocab().Warnings)
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
	asChat := fs.Bool("chat", false, "lay the prompt out as one user turn with the model's chat template")
	tmpl := fs.String("chat-template", "", "chat template: a built-in name (chatml, llama2, llama3, gemma, mistral, phi3), a .jinja file or a tokenizer_config.json")
	gf := addGrammarFlags(fs, true)
	completions := fs.Int("completions", 1, "generate `N` completions of the prompt, as OpenAI's n (-n is the tokens of each); the first streams, the others follow under --- completion I --- lines")
	var logprobs *int
	fs.Func("logprobs", "print JSON lines instead of text: each generated token with its log-probability and the `N` most likely tokens (0 to 20), then each completion's text and finish reason", func(v string) error {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 || k > maxLogprobs {
			return fmt.Errorf("want 0 to %d most likely tokens per generated token", maxLogprobs)
		}
		logprobs = &k
		return nil
	})
	var biases []biasSpec
	fs.Func("logit-bias", "add BIAS to a token's logit before sampling, as `TOKEN=BIAS` (repeatable): TOKEN a token id, a token's text as --logprobs prints it, or a text that is one token; BIAS from -100 to 100, or -inf to ban the token (-100 bans too)", func(v string) error {
		b, err := parseBias(v)
		if err != nil {
			return err
		}
		biases = append(biases, b)
		return nil
	})
	spec := addSpecFlags(fs)
	lora := addLoRAFlags(fs)
	rf := addRopeFlags(fs)
	kvf := addCacheFlags(fs)
	think := addThinkFlags(fs, true)
	pos, err := parseGeneration(fs, args, sp, threads, ctxLen, n)
	if err != nil {
		return err
	}
	draft, specP, err := spec.params(false)
	if err != nil {
		return err
	}
	extra, err := think.extra()
	if err != nil {
		return err
	}
	if set := setFlags(fs); !*asChat && (set["reasoning"] || set["reasoning-effort"] || set["hide-thinking"] || set["reasoning-budget"]) {
		return errors.New("--reasoning, --reasoning-effort, --reasoning-budget and --hide-thinking are for --chat prompts: give --chat too")
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
	if *completions < 1 || *completions > maxCompletions {
		return fmt.Errorf("--completions %d: want 1 to %d", *completions, maxCompletions)
	}
	if err := checkTokenizer(*tok, *model); err != nil {
		return err
	}
	if *tmpl != "" && !*asChat {
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
	// Parallel: the completions run side by side, each with a whole
	// context of KV cache (they share the prompt's blocks).
	e, err := loadModel(*model, kvf.apply(engine.Options{Quantize: *quantizeTo, Threads: *threads, Tokenizer: *tok, CtxLen: *ctxLen,
		Parallel: *completions, DraftModel: draft, Spec: specP, LoRA: lora.adapters(), Rope: rf.override()}))
	if err != nil {
		return err
	}
	defer e.Close()
	if err := sp.modelDefaults(fs, e.SamplingDefaults()); err != nil {
		return err
	}
	req := engine.Request{Prompt: *prompt, MaxTokens: *n, Sample: sp.params(), Stop: sp.stops, IgnoreEOS: *sp.ignoreEOS, Grammar: gram,
		N: *completions}
	if req.Sample.LogitBias, err = resolveBiases(e.Vocab(), biases); err != nil {
		return err
	}
	if logprobs != nil {
		req.Logprobs, req.TopLogprobs = true, *logprobs
	}
	var parser func() *chat.ReplyParser // --chat: the reply's reasoning apart from its answer
	if *asChat {
		tp, err := chat.ForModel(e, *tmpl)
		if err != nil {
			return err
		}
		ids, rendered, err := tp.Prompt([]chat.Message{{Role: "user", Content: *prompt}}, chat.Options{AddGenerationPrompt: true, Extra: extra})
		if err != nil {
			return err
		}
		req.Tokens = ids
		if req.ReasoningBudget, err = think.reasoningBudget(tp, e.Vocab()); err != nil {
			return err
		}
		parser = func() *chat.ReplyParser {
			return tp.NewReplyParser(chat.ReplyOptions{Reasoning: true, Prompt: rendered})
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streams, err := e.Submit(ctx, req)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	results := make([]engine.Result, len(streams))
	for i, st := range streams {
		var err error
		if logprobs != nil {
			results[i], err = printLogprobs(out, e.Vocab(), st)
		} else {
			results[i], err = printText(out, st, len(streams), parser, *think.hide)
		}
		if err != nil { // standard output failed: stop generating
			cancel()
			return err
		}
	}
	printStats(os.Stderr, results)
	for _, r := range results {
		if r.FinishReason == engine.FinishError {
			return r.Err
		}
	}
	return nil
}

// Limits of run's flags.
const (
	maxLogprobs    = 20  // OpenAI's top_logprobs limit
	maxCompletions = 128 // OpenAI's n limit
)

// printText streams one completion's text to out (flushed as it comes),
// under a "--- completion I ---" line when there are several, and
// returns its result. With parser (--chat) the reply's reasoning is
// printed apart from its answer (thinkPrinter), or hidden.
func printText(out *bufio.Writer, st *engine.Stream, n int, parser func() *chat.ReplyParser, hide bool) (engine.Result, error) {
	if n > 1 {
		if st.Index > 0 {
			out.WriteString("\n")
		}
		fmt.Fprintf(out, "--- completion %d ---\n", st.Index+1)
	}
	var p *chat.ReplyParser
	pr := newThinkPrinter(out, hide)
	pr.color = isTerminal(os.Stdout) && os.Getenv("NO_COLOR") == "" // out buffers standard output
	if parser != nil {
		p = parser()
	}
	show := func(d chat.Delta) error {
		if err := pr.reasoning(d.Reasoning); err != nil {
			return err
		}
		if err := pr.content(d.Content); err != nil {
			return err
		}
		return out.Flush()
	}
	for ev := range st.Events() {
		d := chat.Delta{Content: ev.Text}
		if p != nil {
			d = p.Add(p.EventText(ev))
		}
		if d.Empty() {
			continue
		}
		if err := show(d); err != nil {
			return st.Result(), err
		}
	}
	if p != nil {
		if err := show(p.Finish()); err != nil {
			return st.Result(), err
		}
	}
	pr.endThinking()
	out.WriteString("\n")
	return st.Result(), out.Flush()
}

// tokenJSON is one generated token as --logprobs prints it: OpenAI's
// logprobs entry (token, logprob, top_logprobs) with the token ids, and
// the bytes only when the token is not whole UTF-8.
type tokenJSON struct {
	Index       int          `json:"index"` // the completion
	ID          int32        `json:"id"`
	Token       string       `json:"token"`
	Bytes       []int        `json:"bytes,omitempty"`
	Logprob     float32      `json:"logprob"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	ID      int32   `json:"id"`
	Token   string  `json:"token"`
	Bytes   []int   `json:"bytes,omitempty"`
	Logprob float32 `json:"logprob"`
}

// completionJSON ends a completion's lines under --logprobs.
type completionJSON struct {
	Index            int    `json:"index"`
	Text             string `json:"text"`
	FinishReason     string `json:"finish_reason"`
	Detail           string `json:"detail,omitempty"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
}

// printLogprobs writes one completion as JSON lines (--logprobs): a line
// per generated token as it comes, then the completion's text and finish
// reason.
func printLogprobs(out *bufio.Writer, v *tokenizer.Vocab, st *engine.Stream) (engine.Result, error) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	piece := func(id int32) (string, []int) {
		b := v.Piece(id, true)
		if utf8.Valid(b) {
			return string(b), nil
		}
		bs := make([]int, len(b))
		for i, c := range b {
			bs[i] = int(c)
		}
		return string(b), bs
	}
	var text strings.Builder
	for ev := range st.Events() {
		text.WriteString(ev.Text)
		if ev.ID < 0 { // text held back until the end, no token
			continue
		}
		t := tokenJSON{Index: st.Index, ID: ev.ID, Logprob: ev.Logprob, TopLogprobs: []topLogprob{}}
		t.Token, t.Bytes = piece(ev.ID)
		for _, c := range ev.Top {
			tl := topLogprob{ID: c.ID, Logprob: c.Logprob}
			tl.Token, tl.Bytes = piece(c.ID)
			t.TopLogprobs = append(t.TopLogprobs, tl)
		}
		enc.Encode(t)
		if err := out.Flush(); err != nil {
			return st.Result(), err
		}
	}
	r := st.Result()
	enc.Encode(completionJSON{Index: st.Index, Text: text.String(), FinishReason: r.FinishReason, Detail: r.Detail,
		PromptTokens: r.PromptTokens, CompletionTokens: r.Generated})
	return r, out.Flush()
}

// printStats writes run's stats line to w: the prompt's tokens and speed,
// each completion's, and why it finished (the finish reason, OpenAI's,
// and what caused it).
func printStats(w io.Writer, results []engine.Result) {
	r := results[0]
	if len(results) == 1 {
		fmt.Fprintf(w, "prompt: %d tokens, %.1f tok/s | generated: %d tokens, %.1f tok/s | finish: %s%s\n",
			r.PromptTokens, r.PrefillTokS(), r.Generated, r.DecodeTokS(), finishText(r), specText(r))
		return
	}
	fmt.Fprintf(w, "prompt: %d tokens, %.1f tok/s\n", r.PromptTokens, r.PrefillTokS())
	for i, r := range results {
		fmt.Fprintf(w, "completion %d: generated: %d tokens, %.1f tok/s | finish: %s%s\n", i+1, r.Generated, r.DecodeTokS(), finishText(r), specText(r))
	}
}

// finishText is a result's finish reason and detail: "length (context)".
func finishText(r engine.Result) string {
	if r.Detail == "" {
		return r.FinishReason
	}
	return r.FinishReason + " (" + r.Detail + ")"
}

// biasSpec is one --logit-bias TOKEN=BIAS; its token is resolved once the
// vocabulary is loaded.
type biasSpec struct {
	arg, token string
	bias       float32
}

// parseBias reads TOKEN=BIAS (the last "=" splits: a token's text may
// hold one).
func parseBias(v string) (biasSpec, error) {
	i := strings.LastIndex(v, "=")
	if i <= 0 {
		return biasSpec{}, errors.New("want TOKEN=BIAS: a token id or a token's text, then a bias")
	}
	b := strings.TrimSpace(v[i+1:])
	f, err := strconv.ParseFloat(b, 64)
	if err != nil || math.IsNaN(f) || !math.IsInf(f, -1) && (f < -100 || f > 100) {
		return biasSpec{}, fmt.Errorf("bias %q: want a number from -100 to 100, or -inf to ban the token", b)
	}
	return biasSpec{arg: v, token: v[:i], bias: float32(f)}, nil
}

// resolveBiases turns the --logit-bias values into sample.Params's map.
// TOKEN is a token id when it is a number; otherwise a token's text, as
// --logprobs prints it ("Lily ", " the", "<|im_end|>": every token of
// that text gets the bias), or else a text that tokenizes to exactly one
// token. A token given twice takes the last bias.
func resolveBiases(v *tokenizer.Vocab, specs []biasSpec) (map[int32]float32, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	out := map[int32]float32{}
	for _, b := range specs {
		ids, err := biasTokens(v, b.token)
		if err != nil {
			return nil, fmt.Errorf("--logit-bias %q: %w", b.arg, err)
		}
		for _, id := range ids {
			out[id] = b.bias
		}
	}
	return out, nil
}

func biasTokens(v *tokenizer.Vocab, tok string) ([]int32, error) {
	if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
		if n < 0 || n >= int64(v.Len()) {
			return nil, fmt.Errorf("token %d is outside the vocabulary (ids 0 to %d)", n, v.Len()-1)
		}
		return []int32{int32(n)}, nil
	}
	var ids []int32
	var buf []byte
	for id := range int32(v.Len()) {
		if buf = v.AppendPiece(buf[:0], id, true); string(buf) == tok {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		return ids, nil
	}
	if enc := v.Encode(tok, false, true); len(enc) == 1 {
		return enc, nil
	} else {
		return nil, fmt.Errorf("no token's text is %q, which tokenizes to %d tokens (%s): give one token's text (as --logprobs prints it) or its id", tok, len(enc), joinIDs(enc, " "))
	}
}
