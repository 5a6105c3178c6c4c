package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/bench"
	"github.com/loom-inference/loom/internal/machine"
)

// intList is a flag of one integer or several, as llama-bench takes them:
// comma-separated (-p 128,512) or repeated (-t 1 -t 2). The first value
// given replaces the default.
type intList struct {
	vals []int
	set  bool
}

// maxListValues bounds a list flag: every combination of -p, -n and -t is
// a measurement.
const maxListValues = 64

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(l.vals))
	for i, v := range l.vals {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(s string) error {
	if !l.set {
		l.vals, l.set = nil, true
	}
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q: want an integer or a comma-separated list of them (128,512)", s)
		}
		if len(l.vals) == maxListValues {
			return fmt.Errorf("%q: at most %d values", s, maxListValues)
		}
		l.vals = append(l.vals, v)
	}
	return nil
}

func (l *intList) multi() bool { return len(l.vals) > 1 }

// benchList measures every combination of the threads, prompt and
// generated-token counts, one engine per thread count, and prints a row
// each (a JSON line each with asJSON), as llama-bench does for lists.
func benchList(path, model string, o engine.Options, ps, ns, ts []int, reps int, asJSON bool) error {
	maxP, maxN := slices.Max(ps), slices.Max(ns)
	o.CtxLen, o.StepTokens = maxP+maxN+2, maxP+1 // each prompt in one forward pass
	if !asJSON {
		fmt.Printf("model   %s\ncpu     %s\n\n| threads | -p | -n | prefill tok/s | decode tok/s |\n|---:|---:|---:|---:|---:|\n", model, machine.CPU())
	}
	var kernels []engine.KernelUse
	for i, t := range ts {
		o.Threads = t
		ks, err := benchThreads(path, o, ps, ns, reps, asJSON, i == 0)
		if err != nil {
			return err
		}
		if kernels == nil {
			kernels = ks
		}
	}
	if !asJSON {
		fmt.Println()
		printKernels(kernels)
	}
	return nil
}

// benchThreads is benchList's rows for one thread count (o.Threads), on
// an engine of its own (warning once, with warn, of a context longer than
// the model's); it returns the engine's kernels.
func benchThreads(path string, o engine.Options, ps, ns []int, reps int, asJSON, warn bool) ([]engine.KernelUse, error) {
	e, err := engine.Load(path, o)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	if warn {
		warnContext(e)
	}
	for _, p := range ps {
		for _, n := range ns {
			res, err := bench.Run(e, p, n, reps)
			if err != nil {
				return nil, err
			}
			if asJSON {
				if err := json.NewEncoder(os.Stdout).Encode(map[string]any{"threads": o.Threads, "p": p, "n": n,
					"prefill_tok_s": res.PrefillTokS, "decode_tok_s": res.DecodeTokS, "cpu": machine.CPU().String()}); err != nil {
					return nil, err
				}
				continue
			}
			dec := "—"
			if n > 0 {
				dec = fmt.Sprintf("%.2f", res.DecodeTokS)
			}
			fmt.Printf("| %d | %d | %d | %.2f | %s |\n", o.Threads, p, n, res.PrefillTokS, dec)
		}
	}
	return e.Kernels(), nil
}
