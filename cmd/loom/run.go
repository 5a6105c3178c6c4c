package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

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
	topK                              *int
	seed                              *uint64
	stops                             []string
}

func samplingFlags(fs *flag.FlagSet) *sampling {
	s := &sampling{
		temp: fs.Float64("temp", 0.8, "temperature (0: greedy)"),
		topK: fs.Int("top-k", 40, "top-k (0: off)"),
		topP: fs.Float64("top-p", 0.95, "top-p (1: off)"),
		minP: fs.Float64("min-p", 0.05, "min-p (0: off)"),
		rep:  fs.Float64("repeat-penalty", 1, "repetition penalty (1: off)"),
		freq: fs.Float64("frequency-penalty", 0, "frequency penalty"),
		pres: fs.Float64("presence-penalty", 0, "presence penalty"),
		seed: fs.Uint64("seed", 0, "random seed (0: random)"),
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

func (s *sampling) params() sample.Params {
	seed := *s.seed
	if seed == 0 {
		seed = uint64(os.Getpid())<<20 ^ uint64(runtimeNano())
	}
	return sample.Params{Temp: float32(*s.temp), TopK: *s.topK, TopP: float32(*s.topP), MinP: float32(*s.minP),
		RepeatPenalty: float32(*s.rep), FreqPenalty: float32(*s.freq), PresPenalty: float32(*s.pres), Seed: seed}
}

// loadModel loads path, or the default model when path is empty.
func loadModel(path string, o engine.Options) (*engine.Engine, error) {
	if path == "" {
		p, err := engine.FindModel(engine.DefaultModel)
		if err != nil {
			return nil, err
		}
		path = p
	}
	return engine.Load(path, o)
}

func cmdRun(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	model, threads, tok := loadFlags(fs)
	prompt := fs.String("p", "", "prompt")
	n := fs.Int("n", 256, "tokens to generate (0: until end of text or context)")
	sp := samplingFlags(fs)
	ctxLen := fs.Int("c", 0, "context size (0: the model's, at most 4096)")
	chat := fs.Bool("chat", false, "lay the prompt out as one user turn with the model's chat template")
	tmpl := fs.String("chat-template", "", "chat template: a built-in name (chatml, llama2, llama3, gemma, mistral, phi3), a .jinja file or a tokenizer_config.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	e, err := loadModel(*model, engine.Options{Threads: *threads, Tokenizer: *tok, CtxLen: *ctxLen, ChatTemplate: *tmpl})
	if err != nil {
		return err
	}
	defer e.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	req := engine.Request{Prompt: *prompt, MaxTokens: *n, Sample: sp.params(), Stop: sp.stops}
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
