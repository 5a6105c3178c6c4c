package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/sample"
)

func loadFlags(fs *flag.FlagSet) (*string, *int, *string) {
	m := fs.String("m", "", "model file (.gguf, or llama2.c .bin with --tokenizer)")
	t := fs.Int("t", min(runtime.NumCPU(), 4), "threads")
	tok := fs.String("tokenizer", "", "llama2.c tokenizer.bin for a .bin checkpoint")
	return m, t, tok
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	model, threads, tok := loadFlags(fs)
	prompt := fs.String("p", "", "prompt")
	n := fs.Int("n", 256, "tokens to generate (0: until end of text or context)")
	temp := fs.Float64("temp", 0.8, "temperature (0: greedy)")
	topK := fs.Int("top-k", 40, "top-k (0: off)")
	topP := fs.Float64("top-p", 0.95, "top-p (1: off)")
	minP := fs.Float64("min-p", 0.05, "min-p (0: off)")
	rep := fs.Float64("repeat-penalty", 1, "repetition penalty (1: off)")
	freq := fs.Float64("frequency-penalty", 0, "frequency penalty")
	pres := fs.Float64("presence-penalty", 0, "presence penalty")
	seed := fs.Uint64("seed", 0, "random seed (0: random)")
	ctxLen := fs.Int("c", 0, "context size (0: the model's, at most 4096)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	path := *model
	if path == "" {
		p, err := engine.FindModel(engine.DefaultModel)
		if err != nil {
			return err
		}
		path = p
	}
	e, err := engine.Load(path, engine.Options{Threads: *threads, Tokenizer: *tok, CtxLen: *ctxLen})
	if err != nil {
		return err
	}
	defer e.Close()
	s := *seed
	if s == 0 {
		s = uint64(os.Getpid())<<20 ^ uint64(runtimeNano())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	req := engine.Request{Prompt: *prompt, MaxTokens: *n, Sample: sample.Params{
		Temp: float32(*temp), TopK: *topK, TopP: float32(*topP), MinP: float32(*minP),
		RepeatPenalty: float32(*rep), FreqPenalty: float32(*freq), PresPenalty: float32(*pres), Seed: s}}
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
