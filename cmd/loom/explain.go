package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/explain"
)

// cmdExplain walks a prompt through the model and shows each stage.
func cmdExplain(args []string) error {
	fs := newFlags("explain")
	quantizeTo := fs.String("quantize", "", "for a Hugging Face folder: quantize the weights while loading (Q8_0, Q4_K_M, …, as llama-quantize)")
	model, threads, tok := loadFlags(fs)
	var o explain.Options
	fs.StringVar(&o.Prompt, "p", "Once upon a time", "prompt")
	fs.IntVar(&o.Layer, "layer", 0, "layer whose attention is shown (negative: from the end)")
	fs.IntVar(&o.Head, "head", 0, "attention head charted")
	fs.IntVar(&o.Token, "token", -1, "query token charted (negative: from the end)")
	fs.IntVar(&o.TopK, "top", 10, "next-token candidates shown, and the top-k cut-off")
	topP := fs.Float64("top-p", 0.9, "top-p cut-off shown")
	temp := fs.Float64("temp", 0.8, "sampling temperature (0: greedy)")
	fs.IntVar(&o.Steps, "steps", 16, "decode steps timed after the prefill")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	ctx := ctxFlags(fs)
	htmlOut := fs.String("html", "", "also write a self-contained HTML page to this file")
	spec := addSpecFlags(fs)
	lora := addLoRAFlags(fs)
	rf := addRopeFlags(fs)
	kvf := addCacheFlags(fs)
	fixed := fs.Bool("spec-fixed", false, "with speculation: draft --draft-max tokens at every step, without adapting to the acceptance")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	draft, specP, err := spec.params(false)
	if err != nil {
		return err
	}
	if *fixed && specP.Mode == engine.SpecOff {
		return errors.New("--spec-fixed is for speculative decoding: give --spec ngram or --model-draft FILE")
	}
	specP.Fixed = *fixed
	o.Spec = specP
	if words, ok := modelAndPrompt(model, pos); ok {
		if setFlags(fs)["p"] {
			return bothPrompts("-p", words)
		}
		o.Prompt = words
	}
	switch {
	case o.TopK < 1 || o.TopK > 1000:
		return fmt.Errorf("--top %d: want 1 to 1000 candidates", o.TopK)
	case !(*topP > 0 && *topP <= 1):
		return fmt.Errorf("--top-p %v: want a value in (0, 1]", *topP)
	case !(*temp >= 0 && *temp <= 100):
		return fmt.Errorf("--temp %v: want 0 (greedy) to 100", *temp)
	case o.Steps < 0 || o.Steps > 1<<16:
		return fmt.Errorf("--steps %d: want 0 to %d", o.Steps, 1<<16)
	}
	if err := checkCommon(*threads, *ctx, 0); err != nil {
		return err
	}
	if err := checkTokenizer(*tok, *model); err != nil {
		return err
	}
	o.TopP, o.Temp, o.Threads = float32(*topP), float32(*temp), *threads
	e, err := loadModel(*model, kvf.apply(engine.Options{Quantize: *quantizeTo, Threads: *threads, CtxLen: *ctx, Tokenizer: *tok, DraftModel: draft, LoRA: lora.adapters(), Rope: rf.override()}))
	if err != nil {
		return err
	}
	defer e.Close()
	r, err := explain.Run(e, o)
	if err != nil {
		return err
	}
	if *htmlOut != "" {
		f, err := os.Create(*htmlOut)
		if err != nil {
			return err
		}
		if err := r.WriteHTML(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	out := bufio.NewWriter(os.Stdout)
	if *asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", " ")
		err = enc.Encode(r)
	} else {
		err = r.WriteText(out)
	}
	if err != nil {
		return err
	}
	if *htmlOut != "" && !*asJSON {
		fmt.Fprintf(out, "\nHTML report: %s\n", *htmlOut)
	}
	return out.Flush()
}
