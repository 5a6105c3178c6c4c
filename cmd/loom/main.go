// Command loom runs large language models: loom run, logits, inspect,
// tokenize. It only parses flags and calls the packages below.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"

	"golang.org/x/sys/cpu"
)

var commands = map[string]func(args []string) error{
	"run":      cmdRun,
	"logits":   cmdLogits,
	"inspect":  cmdInspect,
	"tokenize": cmdTokenize,
	"bench":    cmdBench,
	"explain":  cmdExplain,
	"template": cmdTemplate,
	"chat":     cmdChat,
	"serve":    cmdServe,
	"health":   cmdHealth,
	"pull":     cmdPull,
	"list":     cmdList,
	"rm":       cmdRm,
	"grammar":  cmdGrammar,
	"quantize": cmdQuantize,
	"convert":  cmdConvert,
}

const usage = `loom — LLM inference in pure Go

usage:
  loom run      [-m FILE] [-p PROMPT] [--chat] [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--seed S] [--stop S] [-t THREADS]
  loom run      ... [--json | --json-schema SCHEMA.json | --grammar FILE.gbnf]   (structured output)
  loom grammar  from-schema SCHEMA.json | check (--grammar F | --json-schema F) [-f FILE]
  loom chat     [-m FILE] [--system TEXT] [--chat-template NAME|FILE] [sampling flags]
  loom template (--template FILE.jinja | -m MODEL) CONTEXT.json
  loom pull     OWNER/REPO[:QUANT] | OWNER/REPO/FILE.gguf   (Hugging Face; HF_TOKEN, HF_ENDPOINT)
  loom list                                                 (cached models)
  loom rm       OWNER/REPO[:QUANT] | OWNER/REPO/FILE.gguf
  loom health   [--url http://127.0.0.1:8080/health]
  loom version
  loom serve    [-m FILE]... [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx-size N] [--kv-size S] [--api-key KEY | --api-key-file F] [-t THREADS]
  loom logits   -m FILE (-p PROMPT | --ids "1 2 3") [--top K]
  loom inspect  FILE|DIR
  loom convert  DIR OUT.gguf [--type F16]                    (a Hugging Face folder to GGUF, as llama.cpp's converter; or straight to a quantize mix)
  loom quantize IN.gguf OUT.gguf TYPE [--threads N]          (as llama-quantize: Q4_0 … Q8_0, IQ4_NL, Q2_K … Q6_K, the _S/_M/_L mixes)
  loom tokenize -m FILE (-p TEXT | -f FILE) [--no-bos] [--no-parse-special]
  loom bench    -m FILE [-p 128] [-n 64] [-t 2] [-r 3] [--json] [--parallel N [--shared-prefix P] [--kv-size S]]
  loom explain  [-m FILE] [-p PROMPT] [--layer L] [--head H] [--token I] [--top K] [--temp T] [--steps N] [--json] [--html OUT.html]

Run 'loom COMMAND -h' for a command's flags.
`

func main() {
	if len(os.Args) > 2 && os.Args[1] == "help" { // loom help CMD = loom CMD -h
		os.Args = []string{os.Args[0], os.Args[2], "-h"}
	}
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprint(os.Stderr, usage)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	if os.Args[1] == "version" || os.Args[1] == "--version" {
		version()
		return
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "loom: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if path := os.Getenv("LOOM_CPUPROFILE"); path != "" {
		// Developer aid: profile any command (go tool pprof FILE).
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := cmd(os.Args[2:]); err != nil {
		if errors.Is(err, flag.ErrHelp) { // -h: the flags were printed
			return
		}
		pprof.StopCPUProfile()
		fmt.Fprintf(os.Stderr, "loom %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// version prints the build and the CPU features the kernels choose from.
func version() {
	v, commit := "devel", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, st := range bi.Settings {
			if st.Key == "vcs.revision" {
				commit = st.Value
			}
		}
	}
	feats := ""
	for _, f := range []struct {
		name string
		on   bool
	}{{"avx2", cpu.X86.HasAVX2}, {"fma", cpu.X86.HasFMA}, {"f16c", cpu.X86.HasF16C}, {"avx512f", cpu.X86.HasAVX512F},
		{"avx512bw", cpu.X86.HasAVX512BW}, {"avx512vnni", cpu.X86.HasAVX512VNNI}, {"avx512bf16", cpu.X86.HasAVX512BF16}, {"amx-tile", cpu.X86.HasAMXTile}} {
		if f.on {
			feats += " " + f.name
		}
	}
	fmt.Printf("loom %s", v)
	if commit != "" {
		fmt.Printf(" (commit %s)", commit)
	}
	fmt.Printf("\n%s %s/%s\ncpu:%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, feats)
}
