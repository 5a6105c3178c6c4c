package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/loom-inference/loom/hub"
	"github.com/loom-inference/loom/internal/quantize"
)

// command is one `loom NAME`: what it takes and what it does, for its -h
// and for loom -h.
type command struct {
	name string
	args string // the usage line after "loom NAME"; more lines for other forms
	desc string // one line
	more string // how its arguments are read, printed by -h
	run  func(args []string) error
}

const modelRule = `MODEL is a GGUF file, a Hugging Face folder, a llama2.c .bin checkpoint
(with --tokenizer) or OWNER/REPO[:QUANT] | OWNER/REPO/FILE.gguf from the
Hugging Face Hub (pulled on first use).`

const promptRule = modelRule + `

With -m, every argument is the prompt. Without -m, a first argument that
names a model — an existing file or folder, a name ending in .gguf or .bin,
or OWNER/REPO[:QUANT] (no spaces) — is the model and the rest is the
prompt; otherwise every argument is the prompt and the default model runs.
Arguments of the prompt are joined with spaces; use -p (or -m) for a
prompt that would read as a model. "--" ends the flags.`

const textRule = modelRule + `

With -m, every argument is the text; without it, the first argument is the
model and the rest the text (joined with spaces). "--" ends the flags.`

var commands []command

func init() {
	commands = []command{
		{"run", "[MODEL] [PROMPT...] [flags]\n  loom run ... --json | --json-schema SCHEMA.json | --grammar FILE.gbnf",
			"Generate text from a prompt (default model: the embedded TinyStories-656K).", promptRule + `
Without a prompt, piped standard input is the prompt.`, cmdRun},
		{"chat", "[MODEL] [flags]", "Hold a conversation in the terminal, reusing the KV cache across turns.",
			modelRule + "\n\nThe model is the one argument or -m (default: the embedded model). Standard\ninput that is not a terminal is read as one user message per line.", cmdChat},
		{"serve", "[MODEL...] [flags]", "Serve the OpenAI-compatible API and a chat page.",
			modelRule + `

Every argument and every -m is a model, served under its --alias (the
i-th --alias names the i-th model, in command-line order) or its file's base
name; two models with one id are refused. No model: the embedded one.`, cmdServe},
		{"bench", "[MODEL] [flags]", "Measure prefill and decode speed, llama-bench style (or N sequences with --parallel).",
			modelRule + "\n\nThe model is the one argument or -m.", cmdBench},
		{"explain", "[MODEL] [PROMPT...] [flags]", "Show what happens inside the model for a prompt, step by step.", promptRule, cmdExplain},
		{"logits", "[MODEL] [PROMPT...] [flags]", "Print a prompt's top logits at every position as JSON lines (shared/reference's format).",
			textRule + "\nGive the prompt as arguments, with -p, or as --ids.", cmdLogits},
		{"tokenize", "[MODEL] [TEXT...] [flags]", "Print the token ids of a text, as llama-tokenize does.",
			textRule + "\nGive the text as arguments, with -p or with -f.", cmdTokenize},
		{"embed", "[MODEL] [TEXT...] [-f FILE] [flags]", "Print the embedding of each input (an embedding model: BERT, nomic-bert, Qwen3-Embedding, …).",
			embedRule, cmdEmbed},
		{"rerank", "[MODEL] --query QUERY [DOCUMENT...] [-f FILE] [flags]", "Rank documents by relevance to a query with a reranking model, most relevant first.",
			rerankRule, cmdRerank},
		{"template", "CONTEXT.json (--template FILE.jinja | -m MODEL)", "Print exactly what a chat template renders for the variables of CONTEXT.json.",
			"CONTEXT.json holds the variables: messages, add_generation_prompt, tools, bos_token, …,\nand now (ISO time for strftime_now).", cmdTemplate},
		{"inspect", "FILE|DIR", "Validate a model file or folder and print its metadata, hyperparameters and tensors.", "", cmdInspect},
		{"convert", "DIR OUT.gguf [flags]", "Write a Hugging Face folder as GGUF, as llama.cpp's converter does (or straight to a quantize mix).",
			"--type: F32, F16, BF16, Q8_0 (the converter's), or a quantize mix: " + strings.Join(quantize.Names()[3:], ", ") + ".", cmdConvert},
		{"quantize", "IN.gguf OUT.gguf TYPE [flags]", "Quantize a GGUF file as llama-quantize does (no importance matrix).",
			"TYPE: " + strings.Join(quantize.Names(), ", ") + "\n(Q3_K, Q4_K, Q5_K mean the _M mixes, as in llama-quantize). As llama-quantize, a\ntensor that must change type and is already quantized (not F32, F16 or BF16)\nis refused unless --allow-requantize.", cmdQuantize},
		{"pull", "OWNER/REPO[:QUANT] | OWNER/REPO/FILE.gguf", "Download a GGUF from the Hugging Face Hub into the cache (resumable, SHA-256 checked).",
			"HF_TOKEN for gated repositories, HF_ENDPOINT for a mirror, LOOM_HUB_CACHE for the cache folder.", cmdPull},
		{"list", "", "List the models in the cache.", "", cmdList},
		{"rm", "OWNER/REPO[:QUANT] | OWNER/REPO/FILE.gguf", "Remove cached models (OWNER/REPO: all its files).", "", cmdRm},
		{"grammar", "from-schema SCHEMA.json | check (--grammar F | --json-schema F) [-f FILE]", "Convert a JSON Schema to GBNF, or check strings against a grammar.",
			"'loom help grammar from-schema' and 'loom help grammar check' show each one's flags.", cmdGrammar},
		{"health", "[flags]", "Check a server's /health (exit 0 when it answers 200).", "", cmdHealth},
		{"version", "", "Print the build and the CPU features the kernels choose from.", "", cmdVersion},
	}
}

// lookup finds a command (or a grammar subcommand: "grammar check").
func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	for i := range subcommands {
		if subcommands[i].name == name {
			return &subcommands[i]
		}
	}
	return nil
}

// overview is loom -h.
func overview() string {
	var b strings.Builder
	b.WriteString("loom — LLM inference in pure Go\n\nusage: loom COMMAND [ARGUMENTS] [FLAGS]   (flags before or after the arguments; -- ends them)\n\n")
	for _, c := range commands {
		args, _, _ := strings.Cut(c.args, "\n")
		fmt.Fprintf(&b, "  loom %-8s %s\n                %s\n", c.name, args, c.desc)
	}
	b.WriteString("\nRun 'loom help COMMAND' (or 'loom COMMAND -h') for a command's arguments and flags.\n")
	return b.String()
}

// newFlags makes a command's flag set. It prints nothing itself: -h is
// printed by parseArgs (standard output), errors once by main.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// printHelp writes a command's usage line, description, argument rules and
// flags.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	c := lookup(fs.Name())
	if c == nil {
		c = &command{name: fs.Name()}
	}
	fmt.Fprintf(w, "usage: loom %s", c.name)
	if c.args != "" {
		fmt.Fprintf(w, " %s", c.args)
	}
	fmt.Fprintf(w, "\n\n%s\n", c.desc)
	if c.more != "" {
		fmt.Fprintf(w, "\n%s\n", c.more)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		fmt.Fprintln(w, "\nflags: none")
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseArgs parses a command's arguments: flags may come before, between
// or after the positional arguments, which it returns in order; "--" ends
// the flags (everything after it is positional), and "-" alone is
// positional. -h, -help and --help print the command's help to standard
// output and return flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	err := parseArgsFunc(fs, args, func(a string) error { pos = append(pos, a); return nil })
	return pos, err
}

// parseArgsFunc is parseArgs calling onArg for each positional argument as
// it comes, so a command can keep their order among repeated flags.
func parseArgsFunc(fs *flag.FlagSet, args []string, onArg func(string) error) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			for _, p := range args[i+1:] {
				if err := onArg(p); err != nil {
					return err
				}
			}
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			if err := onArg(a); err != nil {
				return err
			}
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		n := 1 // the flag alone, or with its value after "="
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) && i+1 < len(args) {
			n = 2 // the value is the next argument, whatever it looks like
		}
		if err := fs.Parse(args[i : i+n]); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printHelp(os.Stdout, fs)
				return err
			}
			if len(name) > 1 { // the flag package writes -name; we document --name
				return errors.New(strings.Replace(err.Error(), " -"+name, " --"+name, 1))
			}
			return err
		}
		if fs.NArg() > 0 { // "-" or "--" as a value never gets here; a guard
			return fmt.Errorf("cannot read argument %q", fs.Arg(0))
		}
		i += n - 1
	}
	return nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// setFlags reports which flags the command line set.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// unexpected refuses positional arguments beyond the first max.
func unexpected(pos []string, max int) error {
	if len(pos) > max {
		return fmt.Errorf("unexpected argument %q", pos[max])
	}
	return nil
}

// looksLikeModel reports whether a positional argument names a model
// rather than starting a prompt: an existing file or folder, or a single
// word that ends in .gguf or .bin or has the shape OWNER/REPO[:QUANT] or
// OWNER/REPO/FILE.gguf.
func looksLikeModel(s string) bool {
	if s == "" || s == "-" {
		return false
	}
	if _, err := os.Stat(s); err == nil {
		return true
	}
	if strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	low := strings.ToLower(s)
	return strings.HasSuffix(low, ".gguf") || strings.HasSuffix(low, ".bin") || hub.LooksLikeSpec(s)
}

// modelAndPrompt splits run's and explain's arguments: with -m (model set)
// they are all the prompt; otherwise a first argument that looks like a
// model is the model. The prompt's words are joined with spaces.
func modelAndPrompt(model *string, pos []string) (prompt string, has bool) {
	if *model == "" && len(pos) > 0 && looksLikeModel(pos[0]) {
		*model, pos = pos[0], pos[1:]
	}
	return strings.Join(pos, " "), len(pos) > 0
}

// modelAndText splits tokenize's and logits' arguments: with -m they are
// all the text, otherwise the first is the model. It returns the text's
// arguments.
func modelAndText(model *string, pos []string) ([]string, error) {
	if *model == "" {
		if len(pos) == 0 {
			return nil, errors.New("no model: give it as the first argument or with -m")
		}
		*model, pos = pos[0], pos[1:]
	}
	return pos, nil
}

// oneModel reads the model of chat and bench: the one argument, or -m.
func oneModel(model *string, pos []string) error {
	if len(pos) == 0 {
		return nil
	}
	if *model != "" {
		return fmt.Errorf("the model is given twice: -m %s and %q", *model, pos[0])
	}
	*model = pos[0]
	return unexpected(pos, 1)
}

// bothPrompts refuses a prompt given both by a flag and as arguments.
func bothPrompts(flagName, words string) error {
	msg := fmt.Sprintf("the prompt is given twice: by %s and as arguments (%q)", flagName, words)
	if w, _, _ := strings.Cut(words, " "); looksLikeModel(w) || strings.ContainsAny(w, "/.") {
		msg += fmt.Sprintf("; if %q is a model, it was not found", w)
	}
	return errors.New(msg)
}

// checkThreads refuses -t outside 1 to 256.
func checkThreads(name string, t int) error {
	if t < 1 || t > 256 {
		return fmt.Errorf("%s %d: want 1 to 256 threads", name, t)
	}
	return nil
}

// checkWorkers refuses --threads outside 0 (every CPU) to 256.
func checkWorkers(name string, t int) error {
	if t < 0 || t > 256 {
		return fmt.Errorf("%s %d: want 1 to 256, or 0 for every CPU", name, t)
	}
	return nil
}

// cmdVersion prints the build and CPU features.
func cmdVersion(args []string) error {
	fs := newFlags("version")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := unexpected(pos, 0); err != nil {
		return err
	}
	version()
	return nil
}
