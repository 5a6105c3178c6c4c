package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/bench"
	"github.com/loom-inference/loom/internal/machine"
)

// cmdBench measures prefill and decode throughput like llama-bench.
func cmdBench(args []string) error {
	fs := newFlags("bench")
	quantizeTo := fs.String("quantize", "", "for a Hugging Face folder: quantize the weights while loading (Q8_0, Q4_K_M, …, as llama-quantize)")
	// loadFlags' -m and --tokenizer; -t, -p and -n take lists here.
	model := fs.String("m", "", "model file (.gguf, or llama2.c .bin with --tokenizer)")
	ts := &intList{vals: []int{defaultThreads()}}
	fs.Var(ts, "t", "`N` threads; a list (1,2) measures each")
	tok := fs.String("tokenizer", "", "llama2.c tokenizer.bin for a .bin checkpoint")
	ps, ns := &intList{vals: []int{128}}, &intList{vals: []int{64}}
	fs.Var(ps, "p", "`N` prompt tokens (prefill, one batch); a list (128,512) measures each")
	fs.Var(ns, "n", "`N` generated tokens (decode; 0: prefill only); a list (0,64) measures each")
	r := fs.Int("r", 3, "repetitions (the median is reported)")
	asJSON := fs.Bool("json", false, `print {"prefill_tok_s":…,"decode_tok_s":…,"cpu":…}`)
	bw := fs.Bool("bandwidth", false, "also measure the machine's read bandwidth and instruction peaks (8-bit VNNI, float32 FMA), and report decode's share of the first and prefill's of the second")
	par := fs.Int("parallel", 0, "serve N sequences at once through the scheduler (aggregate tok/s, per-token latency)")
	shared := fs.Int("shared-prefix", 0, "with --parallel: every prompt starts with the same P tokens")
	kvSize := fs.String("kv-size", "", "with --parallel: KV cache shared by all sequences: positions (4096) or bytes (512MiB, 2GB), at least -p + -n + 2; default: every sequence whole")
	spec := addSpecFlags(fs)
	lora := addLoRAFlags(fs)
	rf := addRopeFlags(fs)
	kvf := addCacheFlags(fs)
	fixed := fs.Bool("spec-fixed", false, "with speculation: draft --draft-max tokens at every step, without adapting to the acceptance and the batch (the ceiling a drafter allows)")
	long := addLongFlags(fs)
	promptFile := fs.String("f", "", "with speculation: the prompt is this file's text instead of -p tokens spread over the vocabulary (n-gram lookup needs a text the output repeats)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	p, n, threads := &ps.vals[0], &ns.vals[0], &ts.vals[0]
	lists := ps.multi() || ns.multi() || ts.multi()
	draft, specP, err := spec.params(false)
	if err != nil {
		return err
	}
	specOn := specP.Mode != engine.SpecOff
	set := setFlags(fs)
	if err := oneModel(model, pos); err != nil {
		return err
	}
	if *model == "" {
		return errors.New("no model: give it as the argument (loom bench MODEL) or with -m")
	}
	for _, v := range ps.vals {
		if v < 1 || v > 1<<20 {
			return fmt.Errorf("-p %d: want 1 to %d prompt tokens", v, 1<<20)
		}
	}
	for _, v := range ns.vals {
		if v < 0 || v > 1<<20 {
			return fmt.Errorf("-n %d: want 0 to %d generated tokens", v, 1<<20)
		}
	}
	for _, v := range ts.vals {
		if err := checkThreads("-t", v); err != nil {
			return err
		}
	}
	switch {
	case lists && (*par > 0 || long.on() || specOn || *bw || *promptFile != ""):
		return fmt.Errorf("-p %s -n %s -t %s: lists measure one sequence's prefill and decode; --parallel, --long-prompt, speculation, --bandwidth and -f take one value each", ps, ns, ts)
	case *n == 0 && *par > 0:
		return errors.New("-n 0: --parallel needs at least one generated token")
	case *r < 1 || *r > 1000:
		return fmt.Errorf("-r %d: want 1 to 1000 repetitions", *r)
	case *par < 0 || *par > 256:
		return fmt.Errorf("--parallel %d: want 1 to 256 sequences (0: one, without the scheduler)", *par)
	case *shared < 0 || *shared > *p:
		return fmt.Errorf("--shared-prefix %d: want 0 to -p (%d)", *shared, *p)
	case *shared > 0 && *par == 0:
		return errors.New("--shared-prefix is for --parallel")
	case *kvSize != "" && *par == 0:
		return errors.New("--kv-size is for --parallel (one sequence uses a context of -p + -n)")
	case *bw && *par > 0:
		return errors.New("--bandwidth measures one sequence: not with --parallel")
	case *bw && *asJSON:
		return errors.New("--bandwidth reports as text: not with --json")
	case *fixed && !specOn:
		return errors.New("--spec-fixed is for speculative decoding: give --spec ngram or --model-draft FILE")
	case *promptFile != "" && !specOn:
		return errors.New("-f is for speculative decoding (--spec ngram or --model-draft FILE); other measurements take -p random tokens")
	case *promptFile != "" && set["p"]:
		return errors.New("give -p or -f, not both")
	case specOn && *n == 0:
		return errors.New("-n 0: speculative decoding needs generated tokens")
	case specOn && *bw:
		return errors.New("--bandwidth measures decoding without speculation: not with --spec or --model-draft")
	case specOn && *shared > 0:
		return errors.New("--shared-prefix is not for speculative decoding's comparison")
	}
	if err := long.check(*par, *n, specOn || *bw || *shared > 0 || *promptFile != ""); err != nil {
		return err
	}
	if err := checkTokenizer(*tok, *model); err != nil {
		return err
	}
	kvTokens, kvBytes, err := parseKVSize(*kvSize)
	if err != nil {
		return err
	}
	path, err := resolveModel(*model)
	if err != nil {
		return err
	}
	o := kvf.apply(engine.Options{Quantize: *quantizeTo, Threads: *threads, Tokenizer: *tok, CtxLen: *p + *n + 2, Parallel: max(*par, 1),
		KVTokens: kvTokens, KVBytes: kvBytes, DraftModel: draft, LoRA: lora.adapters(), Rope: rf.override()})
	if long.on() {
		return long.run(*model, path, o, *par, *p, *n, *r, *asJSON)
	}
	if lists {
		return benchList(path, *model, o, ps.vals, ns.vals, ts.vals, *r, *asJSON)
	}
	if *par == 0 && !specOn {
		o.StepTokens = *p + 1 // the prompt in one forward pass, as llama-bench's pp test
	}
	var text string
	if *promptFile != "" {
		b, err := os.ReadFile(*promptFile)
		if err != nil {
			return err
		}
		text = string(b)
		o.CtxLen = 0 // the model's: the prompt's length is known once tokenized
	}
	e, err := engine.Load(path, o)
	if err != nil {
		return kvError(err, *kvSize, "-p and -n")
	}
	warnContext(e)
	defer e.Close()
	if specOn {
		specP.Fixed = *fixed
		return benchSpec(e, *model, *threads, *par, *p, *n, *r, text, *promptFile, specP, draft, *asJSON)
	}
	if *par > 0 {
		res, err := bench.Parallel(e, *par, *p, *n, *shared, *r)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(os.Stdout).Encode(struct {
				bench.ParallelResult
				CPU string `json:"cpu"`
			}{res, machine.CPU().String()})
		}
		fmt.Printf("model      %s\ncpu        %s\nthreads    %d\nparallel   %d  (-p %d, -n %d each)\nprefill    %8.2f tok/s (all prompts)\ndecode     %8.2f tok/s (aggregate)\nlatency    %.2f ms p50, %.2f ms p99 between tokens\nprompt     %d tokens: %d evaluated (recomputation after preemption included), %d reused from the prefix cache\npreempted  %d\n",
			*model, machine.CPU(), *threads, *par, *p, *n, res.PrefillTokS, res.DecodeTokS, res.ITLP50ms, res.ITLP99ms, res.PromptTokens, res.Computed, res.Reused, res.Preemptions)
		return nil
	}
	// With --bandwidth, the machine's read bandwidth is measured beside
	// every run (just before and just after it): a host's bandwidth can
	// change from one run to the next, and decode's share means something
	// only against the bandwidth it had.
	var roofs []float64
	var between func()
	var meter *machine.Meter
	if *bw && *n > 0 {
		meter = machine.NewMeter(*threads)
		defer meter.Close()
		between = func() { roofs = append(roofs, meter.Bandwidth()) }
	}
	res, err := bench.RunEach(e, *p, *n, *r, between)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"prefill_tok_s": res.PrefillTokS, "decode_tok_s": res.DecodeTokS, "cpu": machine.CPU().String()})
	}
	fmt.Printf("model   %s\ncpu     %s\nthreads %d\npp%-5d %8.2f tok/s  (runs %v)\n", *model, machine.CPU(), *threads, *p, res.PrefillTokS, round2(res.Prefill))
	if *n > 0 {
		fmt.Printf("tg%-5d %8.2f tok/s  (runs %v)\n", *n, res.DecodeTokS, round2(res.Decode))
	}
	printKernels(e.Kernels())
	printWeights(e)
	if *bw {
		// Decode is bound by reading the weights: compare its rate with
		// the machine's, measured now on the same threads.
		var m machine.Machine
		if meter != nil { // the meter's matrices, not a second set
			m = machine.MeasureWith(meter)
		} else {
			m = machine.Measure(*threads)
		}
		if *n > 0 {
			printDecodeShare(float64(e.DecodeBytes()), res.DecodeTokS, res.Decode, roofs, m.Method)
		}
		// Prefill is bound by arithmetic: its matrix-product GFLOP/s against
		// the instruction roofs of the threads' cores, measured now.
		gf := e.PrefillFLOPs(*p) / (float64(*p) / res.PrefillTokS) / 1e9
		// The same measurement explain places its roofline on.
		fmt.Printf("prefill %.1f GFLOP/s of matrix products (%d tokens)", gf, *p)
		if m.Int8GOPS > 0 {
			fmt.Printf(", %.0f%% of %d cores' 8-bit VNNI peak (%.0f GOP/s)", 100*gf/m.Int8GOPS, *threads, m.Int8GOPS)
		}
		if m.F32GFLOPS > 0 {
			fmt.Printf(", %.0f%% of their float32 FMA peak (%.0f GFLOP/s)", 100*gf/m.F32GFLOPS, m.F32GFLOPS)
		}
		fmt.Println()
	}
	return nil
}

// benchSpec measures decoding with and without speculation, alternately.
func benchSpec(e *engine.Engine, model string, threads, par, p, n, reps int, text, file string, sp engine.SpecParams, draft string, asJSON bool) error {
	o := bench.SpecOptions{Spec: sp, NPrompt: p, NGen: n, Reps: reps, Parallel: par}
	if file != "" {
		o.Prompt = e.Tokenize(text, true, false)
		if len(o.Prompt) == 0 {
			return fmt.Errorf("-f %s: an empty prompt", file)
		}
		if len(o.Prompt)+n+1 > e.CtxLen() {
			return fmt.Errorf("-f %s: its %d tokens and -n %d do not fit the context of %d", file, len(o.Prompt), n, e.CtxLen())
		}
	}
	res, err := bench.Speculation(e, o)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(struct {
			bench.SpecResult
			CPU string `json:"cpu"`
		}{res, machine.CPU().String()})
	}
	prompt := fmt.Sprintf("%d random tokens", res.PromptTokens)
	if file != "" {
		prompt = fmt.Sprintf("%s (%d tokens)", file, res.PromptTokens)
	}
	how := "adaptive"
	if sp.Fixed {
		how = "fixed"
	}
	fmt.Printf("model       %s\ncpu         %s\nthreads     %d\nparallel    %d  (prompt %s, %d tokens generated each, greedy)\nspeculative %s, %s; %d runs each, alternating\n",
		model, machine.CPU(), threads, res.Parallel, prompt, res.Generated, specName(sp, draft), how, reps)
	fmt.Printf("decode off  %8.2f tok/s  (runs %v)\ndecode spec %8.2f tok/s  (runs %v)  %.2f×\n",
		res.OffTokS, round2(res.Off), res.SpecTokS, round2(res.On), res.Speedup)
	fmt.Printf("drafts      %d verified, %d tokens drafted, %d accepted: acceptance %.1f%%, mean accepted length %.2f (1 + accepted/drafts)\n",
		res.Drafts, res.DraftTokens, res.Accepted, 100*res.AcceptanceRate, res.MeanAcceptedLength)
	fmt.Printf("per step    %.2f tokens per target forward pass (1 without speculation)\n", res.TokensPerStep)
	if res.Identical {
		fmt.Println("output      the same tokens with and without speculation")
	} else {
		fmt.Println("output      DIFFERS with and without speculation (float weights in a batch of several sequences may take another order; else a bug)")
	}
	return nil
}

// printDecodeShare reports decode's share of the read bandwidth: each
// run's rate × the bytes per token against the mean of the bandwidth
// measured just before and just after it (roofs: one more than runs), and
// the median of those shares (tokS: the runs' median rate).
func printDecodeShare(per, tokS float64, runs, roofs []float64, method string) {
	shares := make([]float64, len(runs))
	each := make([]string, len(runs))
	lo, hi := roofs[0], roofs[0]
	for i, tokS := range runs {
		roof := (roofs[i] + roofs[i+1]) / 2
		shares[i] = per * tokS / 1e9 / roof
		each[i] = fmt.Sprintf("%.0f%% of %.1f", 100*shares[i], roof)
	}
	for _, r := range roofs {
		lo, hi = min(lo, r), max(hi, r)
	}
	mid := slices.Clone(shares)
	slices.Sort(mid)
	share := mid[len(mid)/2]
	fmt.Printf("decode  %.1f MB of weights per token × %.2f tok/s = %.1f GB/s; per run against the bandwidth measured beside it: %s GB/s; median %.0f%%",
		per/1e6, tokS, per*tokS/1e9, strings.Join(each, ", "), 100*share)
	if hi > 1.15*lo {
		fmt.Printf(" (the bandwidth changed during the runs: %.1f to %.1f GB/s)", lo, hi)
	}
	fmt.Printf(" (%s)\n", method)
}

// printWeights says where the weights' products read them from: copies
// repacked at load, memory on huge pages, or the file's mapping.
func printWeights(e *engine.Engine) {
	fmt.Println(weightsLine(e.RepackedWeights(), e.HugePageWeights()))
}

// weightsLine is printWeights' line for repacked and copied bytes.
func weightsLine(repacked, copied int64) string {
	mb := func(b int64) float64 { return float64(b) / 1e6 }
	switch {
	case repacked > 0 && copied > 0:
		return fmt.Sprintf("weights %.1f MB repacked at load, %.1f MB copied into huge pages (--mmap reads those from the file)", mb(repacked), mb(copied))
	case repacked > 0:
		return fmt.Sprintf("weights %.1f MB repacked at load; the rest read from the file's mapping", mb(repacked))
	case copied > 0:
		return fmt.Sprintf("weights %.1f MB copied into huge pages (--mmap reads them from the file)", mb(copied))
	}
	return "weights read from the file's mapping"
}

// printKernels names the kernels each weight type runs on.
func printKernels(ks []engine.KernelUse) {
	for _, k := range ks {
		fmt.Printf("kernels %-6s %4d matrices %8.1f MB  decode: %s  prefill: %s\n", k.Type, k.Matrices, float64(k.Bytes)/1e6, k.Decode, k.Prefill)
	}
}

func round2(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(int(x*100+0.5)) / 100
	}
	return out
}

// kvError explains engine.KVTooSmallError with the flags that set the
// sizes: kvFlag's value, and the flags that set the context (ctxFlags).
func kvError(err error, kvFlag, ctxFlags string) error {
	var ke *engine.KVTooSmallError
	if !errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("--kv-size %s: the KV cache holds %d positions, less than one sequence of the %d-position context; it must hold at least one full context: give --kv-size %d (%.1f MiB) or more, or a smaller %s",
		kvFlag, ke.Positions, ke.CtxLen, ke.CtxLen, float64(int64(ke.CtxLen)*ke.BytesPerPosition)/(1<<20), ctxFlags)
}

// parseKVSize reads --kv-size: a number of positions, or bytes with a unit
// (KB, MB, GB, KiB, MiB, GiB).
func parseKVSize(s string) (tokens int, bytes int64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || v <= 0 || v*float64(u.mult) > 1<<40 {
				return 0, 0, fmt.Errorf("--kv-size %q: want a positive size up to 1 TiB, e.g. 512MiB", s)
			}
			return 0, int64(v * float64(u.mult)), nil
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, 0, fmt.Errorf("--kv-size %q: want a number of positions (e.g. 8192) or bytes with a unit (e.g. 512MiB)", s)
	}
	return n, 0, nil
}
