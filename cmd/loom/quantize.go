package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quantize"
)

// cmdQuantize rewrites a GGUF file in another type or mix, as llama-quantize
// does without an importance matrix (byte-identical tensors).
func cmdQuantize(args []string) error {
	fs := newFlags("quantize")
	threads := fs.Int("threads", 0, "goroutines (0: every CPU)")
	fs.IntVar(threads, "t", 0, "same as --threads")
	quiet := fs.Bool("q", false, "no per-tensor progress")
	requant := fs.Bool("allow-requantize", false, "allow converting tensors that are already quantized (not F32, F16 or BF16), as llama-quantize's flag: the result is worse than quantizing the original")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 3 {
		return errors.New("want IN.gguf OUT.gguf TYPE (loom help quantize)")
	}
	if err := unexpected(pos, 3); err != nil {
		return err
	}
	if err := checkWorkers("--threads", *threads); err != nil {
		return err
	}
	in, out := pos[0], pos[1]
	ft, err := quantize.ParseFType(pos[2])
	if err != nil {
		return err
	}
	if a, b := filepath.Clean(in), filepath.Clean(out); a == b {
		return fmt.Errorf("the output %s is the input", out)
	}
	f, err := gguf.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	start := time.Now()
	opts := quantize.Options{Threads: *threads, AllowRequantize: *requant}
	if !*quiet {
		opts.Progress = func(i, n int, c quantize.Choice, d time.Duration) {
			what := "copied"
			if c.To != c.Type {
				what = fmt.Sprintf("%s → %s", c.Type, c.To)
				if c.Fallback {
					what += " (fallback)"
				}
			}
			fmt.Fprintf(os.Stderr, "[%4d/%4d] %-36s %-16v %s %.0f ms\n", i+1, n, c.Name, c.Dims, what, float64(d.Microseconds())/1000)
		}
	}
	var res quantize.Result
	if err := writeAtomic(out, func(w *bufio.Writer) error {
		res, err = quantize.Run(f, w, ft, opts)
		return err
	}); err != nil {
		if errors.Is(err, quantize.ErrRequantize) {
			return fmt.Errorf("%s: %w: quantize the F32, F16 or BF16 original, or give --allow-requantize (the result loses more than quantizing the original)", in, err)
		}
		return err
	}
	fmt.Fprintf(os.Stderr, "loom quantize: %s → %s (%s): %.1f MiB → %.1f MiB in %.2f s\n", in, out, ft,
		float64(res.BytesIn)/(1<<20), float64(res.BytesOut)/(1<<20), time.Since(start).Seconds())
	return nil
}
