package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/quantize"
)

// cmdConvert writes a Hugging Face folder as GGUF, as llama.cpp's
// converter does (F32, F16, BF16, Q8_0), or straight to a llama-quantize
// mix (through an F32 file, then quantized as llama-quantize would).
func cmdConvert(args []string) error {
	fs := newFlags("convert")
	typ := fs.String("type", "F16", "F32, F16, BF16, Q8_0 (the converter's), or a quantize mix (Q4_K_M, …)")
	threads := fs.Int("threads", 0, "goroutines for a quantize mix (0: every CPU)")
	quiet := fs.Bool("q", false, "no per-tensor progress")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return errors.New("want DIR OUT.gguf (loom help convert)")
	}
	if err := unexpected(pos, 2); err != nil {
		return err
	}
	if err := checkWorkers("--threads", *threads); err != nil {
		return err
	}
	dir, out := pos[0], pos[1]
	if _, converter := hfmodel.OutTypes[strings.ToUpper(*typ)]; converter && setFlags(fs)["threads"] {
		return fmt.Errorf("--threads is for a quantize mix; --type %s is written as the converter does, on one goroutine", *typ)
	}
	if !hfmodel.IsFolder(dir) {
		return fmt.Errorf("%s is not a Hugging Face model folder (no config.json)", dir)
	}
	fo, err := hfmodel.Open(dir)
	if err != nil {
		return err
	}
	defer fo.Close()
	start := time.Now()
	var progress hfmodel.Progress
	if !*quiet {
		progress = func(i, n int, name string, dims []uint64, from, to gguf.Type) {
			fmt.Fprintf(os.Stderr, "[%4d/%4d] %-36s %-16v %s → %s\n", i+1, n, name, dims, from, to)
		}
	}
	u := strings.ToUpper(*typ)
	if _, ok := hfmodel.OutTypes[u]; ok {
		if err := writeAtomic(out, func(w *bufio.Writer) error { return fo.Convert(w, u, progress) }); err != nil {
			return err
		}
	} else {
		ft, err := quantize.ParseFType(u)
		if err != nil {
			return err
		}
		tmp := out + ".f32.part"
		defer os.Remove(tmp)
		if err := writeAtomic(tmp, func(w *bufio.Writer) error { return fo.Convert(w, "F32", progress) }); err != nil {
			return err
		}
		f, err := gguf.Open(tmp)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := writeAtomic(out, func(w *bufio.Writer) error {
			_, err := quantize.Run(f, w, ft, quantize.Options{Threads: *threads})
			return err
		}); err != nil {
			return err
		}
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "loom convert: %s (%s, %s) → %s (%s, %.1f MiB) in %.2f s\n", dir, fo.HFArch, fo.Arch, out, u, float64(st.Size())/(1<<20), time.Since(start).Seconds())
	return nil
}

// writeAtomic writes path through a temporary file renamed into place on
// success, so a failure never leaves a partial model behind.
func writeAtomic(path string, write func(w *bufio.Writer) error) error {
	tmp := path + ".part"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	bw := bufio.NewWriterSize(f, 1<<20)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
