// Command loom runs large language models: loom run, chat, serve, bench,
// and the tools around them. It only reads the command line (commands in
// args.go) and calls the packages below.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"

	"github.com/loom-inference/loom/internal/machine"
)

func main() {
	args := os.Args[1:]
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, overview())
		os.Exit(2)
	}
	switch args[0] {
	case "-h", "-help", "--help", "help": // loom help CMD is loom CMD -h
		switch {
		case len(args) == 1:
			fmt.Print(overview())
			return
		case len(args) == 3 && args[1] == "grammar" && lookup("grammar "+args[2]) != nil:
			args = []string{"grammar", args[2], "-h"} // loom help grammar check
		case len(args) > 2:
			fail("help", fmt.Errorf("unexpected argument %q", args[2]))
		case lookup(args[1]) == nil || strings.Contains(args[1], " "):
			fail("help", fmt.Errorf("unknown command %q (loom -h lists them)", args[1]))
		default:
			args = []string{args[1], "-h"}
		}
	case "--version":
		args[0] = "version"
	}
	cmd := lookup(args[0])
	if cmd == nil || strings.Contains(args[0], " ") {
		fmt.Fprintf(os.Stderr, "loom: unknown command %q\n\n%s", args[0], overview())
		os.Exit(2)
	}
	if path := os.Getenv("LOOM_CPUPROFILE"); path != "" {
		// Developer aid: profile any command (go tool pprof FILE).
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := cmd.run(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) { // -h: the help was printed
			return
		}
		pprof.StopCPUProfile()
		fail(args[0], err)
	}
}

// fail prints a command's error and exits 1; an error of the command line
// itself points at the command's -h.
func fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "loom %s: %v\n", name, err)
	if s := err.Error(); strings.HasPrefix(s, "flag provided but not defined") || strings.HasPrefix(s, "flag needs an argument") ||
		strings.HasPrefix(s, "invalid value") || strings.HasPrefix(s, "invalid boolean") || strings.HasPrefix(s, "bad flag syntax") {
		fmt.Fprintf(os.Stderr, "Run 'loom help %s' for its arguments and flags.\n", name)
	}
	os.Exit(1)
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
	fmt.Printf("loom %s", v)
	if commit != "" {
		fmt.Printf(" (commit %s)", commit)
	}
	fmt.Printf("\n%s %s/%s\ncpu: %s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, machine.CPU())
}
