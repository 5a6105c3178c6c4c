package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/loom-inference/loom/grammar"
)

// grammarFlags are the structured-output flags shared by run and grammar check.
type grammarFlags struct {
	gbnf, schema  *string
	json, lenient *bool
}

func addGrammarFlags(fs *flag.FlagSet, withJSON bool) *grammarFlags {
	g := &grammarFlags{
		gbnf:    fs.String("grammar", "", "constrain output to this GBNF grammar `FILE` (llama.cpp's format)"),
		schema:  fs.String("json-schema", "", "constrain output to JSON matching this JSON Schema `FILE`"),
		lenient: fs.Bool("lenient-schema", false, "with --json-schema: ignore schema keywords the grammar cannot enforce (warned), as llama.cpp does, instead of refusing the schema"),
		json:    new(bool),
	}
	if withJSON {
		g.json = fs.Bool("json", false, "constrain output to one JSON object")
	}
	return g
}

// load returns the chosen grammar, or nil when no flag asks for one.
func (g *grammarFlags) load() (*grammar.Grammar, error) {
	n := 0
	for _, set := range []bool{*g.gbnf != "", *g.schema != "", *g.json} {
		if set {
			n++
		}
	}
	if n > 1 {
		return nil, errors.New("give one of --grammar, --json-schema and --json")
	}
	if *g.lenient && *g.schema == "" {
		return nil, errors.New("--lenient-schema applies to --json-schema only")
	}
	strict := !*g.lenient
	switch {
	case *g.gbnf != "":
		b, err := os.ReadFile(*g.gbnf)
		if err != nil {
			return nil, err
		}
		gr, err := grammar.Parse(string(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", *g.gbnf, err)
		}
		return gr, nil
	case *g.schema != "":
		b, err := os.ReadFile(*g.schema)
		if err != nil {
			return nil, err
		}
		gr, warns, err := grammar.FromSchemaOptions(b, grammar.SchemaOptions{Lenient: !strict})
		if err != nil {
			if strict {
				return nil, fmt.Errorf("%s: %w (--lenient-schema ignores such keywords)", *g.schema, err)
			}
			return nil, fmt.Errorf("%s: %w", *g.schema, err)
		}
		for _, w := range warns {
			fmt.Fprintln(os.Stderr, "loom: warning:", w)
		}
		return gr, nil
	case *g.json:
		return grammar.FromSchema([]byte(grammar.AnyJSONObject))
	}
	return nil, nil
}

// subcommands are grammar's.
var subcommands = []command{
	{name: "grammar from-schema", args: "[--lenient-schema] SCHEMA.json   (- reads standard input)",
		desc: "Print the GBNF grammar for a JSON Schema (llama.cpp's conversion rules).",
		more: "Keywords a grammar cannot enforce are refused unless --lenient-schema."},
	{name: "grammar check", args: "(--grammar F.gbnf | --json-schema F.json) [--lenient-schema] [-f FILE]",
		desc: "Print accept or reject for each candidate string: does the whole string match the grammar?",
		more: "Candidates are read one JSON-encoded string per line, from standard input without -f."},
}

func cmdGrammar(args []string) error {
	if len(args) > 0 && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" {
		switch args[0] {
		case "from-schema":
			return grammarFromSchema(args[1:])
		case "check":
			return grammarCheck(args[1:])
		}
		return fmt.Errorf("unknown grammar command %q: want from-schema or check (loom help grammar)", args[0])
	}
	fs := newFlags("grammar")
	if _, err := parseArgs(fs, args); err != nil {
		return err
	}
	return errors.New("missing subcommand: from-schema or check (loom help grammar)")
}

func grammarFromSchema(args []string) error {
	fs := newFlags("grammar from-schema")
	lenient := fs.Bool("lenient-schema", false, "ignore schema keywords the grammar cannot enforce (warned) instead of refusing the schema")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("want one schema file (- for standard input)")
	}
	if err := unexpected(pos, 1); err != nil {
		return err
	}
	var b []byte
	if pos[0] == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return err
	}
	text, warns, err := grammar.ConvertSchema(b, grammar.SchemaOptions{Lenient: *lenient})
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	for _, w := range warns {
		fmt.Fprintln(os.Stderr, "loom: warning:", w)
	}
	_, err = os.Stdout.WriteString(text)
	return err
}

func grammarCheck(args []string) error {
	fs := newFlags("grammar check")
	gf := addGrammarFlags(fs, false)
	file := fs.String("f", "", "candidates `FILE` (default: standard input)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := unexpected(pos, 0); err != nil {
		return err
	}
	g, err := gf.load()
	if err != nil {
		return err
	}
	if g == nil {
		return errors.New("grammar check needs --grammar or --json-schema")
	}
	in := io.Reader(os.Stdin)
	if *file != "" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	mt := g.NewMatcher()
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 16<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			return fmt.Errorf("line %d: not a JSON string: %v", line, err)
		}
		// One matcher for every line: what it learns of the grammar carries over.
		mt.Reset()
		verdict := "reject"
		if mt.Accept([]byte(s)) == nil && mt.Complete() {
			verdict = "accept"
		}
		fmt.Fprintln(out, verdict)
	}
	return sc.Err()
}
