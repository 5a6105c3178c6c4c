package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/loom-inference/loom/engine"
)

// cmdTokenize prints the ids of a text, with llama-tokenize's defaults: BOS
// added per metadata and special tokens parsed.
func cmdTokenize(args []string) error {
	fs := newFlags("tokenize")
	model := fs.String("m", "", "model or vocabulary GGUF file")
	prompt := fs.String("p", "", "text")
	file := fs.String("f", "", "read the text from FILE")
	noBOS := fs.Bool("no-bos", false, "do not add BOS/EOS")
	noSpecial := fs.Bool("no-parse-special", false, "treat special-token text as plain text")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	words, err := modelAndText(model, pos)
	if err != nil {
		return err
	}
	set := setFlags(fs)
	text := *prompt
	switch {
	case set["p"] && set["f"]:
		return errors.New("give the text once: -p or -f, not both")
	case len(words) > 0 && set["p"]:
		return fmt.Errorf("unexpected argument %q: the text is given by -p", words[0])
	case len(words) > 0 && set["f"]:
		return fmt.Errorf("unexpected argument %q: the text is given by -f", words[0])
	case len(words) > 0:
		text = strings.Join(words, " ")
	case set["f"]:
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
