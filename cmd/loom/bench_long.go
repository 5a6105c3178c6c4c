package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/bench"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/machine"
)

// longFlags are loom bench's long-prompt measurement (issue 32): N
// streams' inter-token latency alone, then while a long prompt prefills.
type longFlags struct {
	prompt, step *int
	latency      *float64
}

func addLongFlags(fs *flag.FlagSet) *longFlags {
	return &longFlags{
		prompt:  fs.Int("long-prompt", 0, "with --parallel N: N clients decode (requests of -p prompt tokens, -n generated, one after another); their inter-token latency is measured alone, while a prompt of this many tokens prefills, and alone again, -r times"),
		step:    fs.Int("step-tokens", 0, "with --long-prompt: tokens per forward pass, decode tokens plus prompt chunks (0: the engine's default, 256)"),
		latency: fs.Float64("chunk-latency", 0, "with --long-prompt: bound a step holding prompt chunks to about `K` times a decode-only step (as loom serve --chunk-latency; 0: the token budget alone)"),
	}
}

func (l *longFlags) on() bool { return *l.prompt != 0 || *l.step != 0 }

// check refuses what the measurement cannot take, before any work; other
// is set when a flag of another measurement was given.
func (l *longFlags) check(par, n int, other bool) error {
	long, step := *l.prompt, *l.step
	switch {
	case !l.on():
		return nil
	case long == 0:
		return errors.New("--step-tokens is for --long-prompt")
	case long < 2 || long > 1<<20:
		return fmt.Errorf("--long-prompt %d: want 2 to %d tokens", long, 1<<20)
	case *l.latency < 0 || *l.latency > 1000 || *l.latency != *l.latency:
		return fmt.Errorf("--chunk-latency %g: want 0 (off) or a factor up to 1000", *l.latency)
	case step < 0 || step > 1<<20:
		return fmt.Errorf("--step-tokens %d: want 0 (the default) to %d", step, 1<<20)
	case par < 1:
		return errors.New("--long-prompt measures running streams: give --parallel N")
	case step != 0 && step < par+2:
		return fmt.Errorf("--step-tokens %d: want at least --parallel + 2 (%d): every stream's token and a prompt chunk of 2", step, par+2)
	case n < 2:
		return fmt.Errorf("-n %d: --long-prompt's streams generate at least 2 tokens per request", n)
	case other:
		return errors.New("--long-prompt is its own measurement: not with speculation, --bandwidth, --shared-prefix or -f")
	}
	return nil
}

// run loads path with o sized for the measurement (checked) and reports it.
func (l *longFlags) run(model, path string, o engine.Options, par, p, n, reps int, asJSON bool) error {
	long, step := *l.prompt, *l.step
	o.Parallel, o.StepTokens, o.ChunkLatency = par+1, step, *l.latency
	o.CtxLen = max(long, p+n) + 2
	if o.KVTokens == 0 && o.KVBytes == 0 {
		// The long prompt whole, and every stream's request twice (a
		// finished one's blocks may linger while its successor starts):
		// no preemption.
		o.KVTokens = (kvcache.BlocksFor(o.CtxLen) + par*2*kvcache.BlocksFor(p+n+1)) * kvcache.BlockSize
	}
	e, err := engine.Load(path, o)
	if err != nil {
		return kvError(err, fmt.Sprint(o.KVTokens), "--long-prompt")
	}
	warnContext(e)
	defer e.Close()
	res, err := bench.LongPrompt(e, bench.LongPromptOptions{Streams: par, StreamPrompt: p, StreamTokens: n, LongPrompt: long, Reps: reps})
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(struct {
			bench.LongPromptResult
			CPU string `json:"cpu"`
		}{res, machine.CPU().String()})
	}
	if step == 0 {
		step = 256
	}
	fmt.Printf("model      %s\ncpu        %s\nthreads    %d\nstreams    %d decoding (requests of -p %d, -n %d, greedy, one after another)\nlong       %d-token prompt, %d tokens per step, %d runs\n",
		model, machine.CPU(), o.Threads, par, p, n, long, step, reps)
	for i, x := range res.Runs {
		fmt.Printf("run %d      alone p50 %.1f ms, p99 %.1f ms (%d gaps) | prefilling p50 %.1f, p90 %.1f, p99 %.1f, max %.1f ms (%d gaps, %d to %d per stream; by quarter p50 %.0f %.0f %.0f %.0f ms) | p99/p50 alone %.2f× | after p50 %.1f ms | prefill %.1f s (%.0f tok/s, %d steps, %d preempted)\n",
			i+1, x.AloneP50ms, x.AloneP99ms, x.AloneGaps, x.DuringP50ms, x.DuringP90ms, x.DuringP99ms, x.DuringMaxms, x.DuringGaps, x.DuringMinStream, x.DuringMaxStream,
			x.DuringQuarterP50ms[0], x.DuringQuarterP50ms[1], x.DuringQuarterP50ms[2], x.DuringQuarterP50ms[3],
			x.Ratio, x.AfterP50ms, x.PrefillS, x.PrefillTokS, x.Steps, x.Preemptions)
	}
	fmt.Printf("alone      %.1f ms p50, %.1f ms p99 between tokens\nprefilling %.1f ms p50, %.1f ms p99 between tokens: p99 %.2f× the p50 alone (issue 32: under 3×)\nprefill    %.1f s, %.1f tok/s\npreempted  %d\n",
		res.AloneP50ms, res.AloneP99ms, res.DuringP50ms, res.DuringP99ms, res.Ratio, res.PrefillS, res.PrefillTokS, res.Preemptions)
	return nil
}
