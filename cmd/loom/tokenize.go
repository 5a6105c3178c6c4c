package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/loom-inference/loom/engine"
)

// cmdTokenize prints the ids of a text, with llama-tokenize's defaults: BOS
// added per metadata and special tokens parsed.
func cmdTokenize(args []string) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	model := fs.String("m", "", "model or vocabulary GGUF file")
	prompt := fs.String("p", "", "text")
	file := fs.String("f", "", "read the text from FILE")
	noBOS := fs.Bool("no-bos", false, "do not add BOS/EOS")
	noSpecial := fs.Bool("no-parse-special", false, "treat special-token text as plain text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		return errors.New("-m FILE is required")
	}
	text := *prompt
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		text = string(b)
	}
	path, err := resolveModel(*model)
	if err != nil {
		return err
	}
	v, err := engine.LoadVocab(path)
	if err != nil {
		return err
	}
	warn(v.Warnings)
	fmt.Println(joinIDs(v.Encode(text, !*noBOS, !*noSpecial), " "))
	return nil
}
