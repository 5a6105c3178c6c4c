package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/explain"
)

// cmdExplain walks a prompt through the model and shows each stage.
func cmdExplain(args []string) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
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
	htmlOut := fs.String("html", "", "also write a self-contained HTML page to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.TopP, o.Temp, o.Threads = float32(*topP), float32(*temp), *threads
	e, err := loadModel(*model, engine.Options{Quantize: *quantizeTo, Threads: *threads, Tokenizer: *tok})
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
