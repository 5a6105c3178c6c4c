// Package bench measures an engine's throughput the way llama.cpp's tools
// do (llama-bench's pp/tg, bench-parallel.mjs's N sequences), through the
// engine's scheduler like every other request.
package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/loom-inference/loom/engine"
)

// Result is llama-bench style throughput: pp (prompt processing, one
// batch) and tg (text generation, one token at a time), medians over runs.
type Result struct {
	PrefillTokS float64 `json:"prefill_tok_s"`
	DecodeTokS  float64 `json:"decode_tok_s"`
	Prefill     []float64
	Decode      []float64
}

// Run evaluates nPrompt tokens, then generates nGen tokens greedily, reps
// times from an empty cache, like llama-bench -p/-n, through the
// scheduler like every request: the prompt is one forward pass when the
// engine's StepTokens allow it (loom bench loads with StepTokens -p), and
// the decode time counts the forward passes only (Result.DecodeEval), not
// choosing the tokens, as llama-bench's generation test has no sampling.
func Run(e *engine.Engine, nPrompt, nGen, reps int) (Result, error) {
	return RunEach(e, nPrompt, nGen, reps, nil)
}

// RunEach is Run calling between (when not nil; untimed) after the
// warm-up and after every repetition: reps+1 calls, so each repetition
// has a call just before and just after it (loom bench --bandwidth
// measures the machine's bandwidth there).
func RunEach(e *engine.Engine, nPrompt, nGen, reps int, between func()) (Result, error) {
	var r Result
	if nPrompt < 1 || nGen < 0 || reps < 1 {
		return r, errors.New("bench: needs -p ≥ 1, -n ≥ 0, -r ≥ 1")
	}
	if nPrompt+nGen > e.CtxLen() {
		return r, errors.New("bench: prompt and generation exceed the context")
	}
	nv := e.Info().NVocab
	// Tokens spread over the vocabulary, as llama-bench uses random ids.
	ids := make([]int32, nPrompt)
	for i := range ids {
		ids[i] = int32((100 + i*37) % nv)
	}
	// nGen decode steps: the first token comes from the prompt's logits,
	// each step evaluates one and chooses the next.
	req := engine.Request{Tokens: ids, MaxTokens: nGen + 1, IgnoreEOS: true}
	if nGen == 0 {
		req = engine.Request{Tokens: ids, EvalOnly: true}
	}
	// One untimed run first, as llama-bench's warm-up: the first touches
	// of the weights' pages, the KV blocks and the runner's buffers would
	// otherwise count against the first repetition.
	e.DropCached()
	if _, err := e.Generate(context.Background(), engine.Request{Tokens: ids, MaxTokens: min(nGen, 2) + 1, IgnoreEOS: true}, func(string) error { return nil }); err != nil {
		return r, err
	}
	if between != nil {
		between()
	}
	for range reps {
		e.DropCached()
		res, err := e.Generate(context.Background(), req, func(string) error { return nil })
		if err != nil {
			return r, err
		}
		if res.FinishReason == engine.FinishLength && res.Detail == engine.DetailContext {
			return r, errors.New("bench: generation reached the context")
		}
		r.Prefill = append(r.Prefill, float64(nPrompt)/res.Prefill.Seconds())
		if nGen > 0 {
			r.Decode = append(r.Decode, float64(nGen)/res.DecodeEval.Seconds())
		}
		if between != nil {
			between()
		}
	}
	r.PrefillTokS, r.DecodeTokS = median(r.Prefill), median(r.Decode)
	return r, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// ParallelResult is the aggregate throughput of N sequences served at once,
// with the definitions of shared/tools/llamacpp-bench/bench-parallel.mjs:
//   - PrefillTokS: all prompt tokens / time until every sequence has its
//     first token;
//   - DecodeTokS: tokens generated after the last first token / time from
//     then to the end;
//   - ITL: gaps between consecutive tokens of a sequence, over all
//     sequences (milliseconds).
//
// Medians over the repetitions.
type ParallelResult struct {
	Parallel     int     `json:"parallel"`
	PrefillTokS  float64 `json:"prefill_tok_s"`
	DecodeTokS   float64 `json:"decode_tok_s"`
	ITLP50ms     float64 `json:"itl_p50_ms"`
	ITLP99ms     float64 `json:"itl_p99_ms"`
	PromptTokens int     `json:"prompt_tokens_total"`    // per repetition
	Computed     int     `json:"prompt_tokens_computed"` // of which evaluated
	Reused       int     `json:"prompt_tokens_reused"`   // of which taken from the prefix cache
	Preemptions  int64   `json:"preemptions"`
}

// Parallel serves n sequences of nPrompt prompt tokens (their own
// tokens, as bench-parallel.mjs makes them) generating nGen+1 tokens each
// greedily through the scheduler, reps times, all submitted at once. With
// sharedPrefix > 0 every prompt starts with the same sharedPrefix tokens
// (the scheduler computes them once; the others wait for those blocks).
func Parallel(e *engine.Engine, n, nPrompt, nGen, sharedPrefix, reps int) (ParallelResult, error) {
	r := ParallelResult{Parallel: n}
	if n < 1 || nPrompt < 1 || nGen < 1 || reps < 1 || sharedPrefix < 0 || sharedPrefix > nPrompt {
		return r, errors.New("bench: --parallel needs N ≥ 1, -p ≥ 1, -n ≥ 1, -r ≥ 1 and 0 ≤ --shared-prefix ≤ -p")
	}
	if nPrompt+nGen+1 > e.CtxLen() {
		return r, errors.New("bench: prompt and generation exceed the context")
	}
	nv := e.Info().NVocab
	span := max(1, min(nv-200, 20000))
	var pp, tg, p50, p99 []float64
	if p := e.Parallel(); n > p {
		return r, fmt.Errorf("bench: --parallel %d on an engine loaded for %d sequences (Options.Parallel)", n, p)
	}
	for range reps {
		e.DropCached()
		before := e.Stats()
		reqs := make([]engine.Request, n)
		for i := range reqs {
			toks := make([]int32, nPrompt)
			for k := range toks {
				src := i
				if k < sharedPrefix {
					src = 0
				}
				toks[k] = int32(100 + (k*37+src*101)%span)
			}
			reqs[i] = engine.Request{Tokens: toks, MaxTokens: nGen + 1, IgnoreEOS: true}
		}
		t0 := time.Now()
		stamps, _, results, err := submitAll(e, reqs)
		if err != nil {
			return r, err
		}
		t1 := time.Now()
		st := e.Stats()
		var lastFirst time.Time
		var gaps []float64
		r.PromptTokens, r.Computed, r.Reused = 0, 0, 0
		for i, ts := range stamps {
			if results[i].FinishReason == engine.FinishError {
				return r, results[i].Err
			}
			if len(ts) == 0 {
				return r, errors.New("bench: a sequence generated nothing")
			}
			if ts[0].After(lastFirst) {
				lastFirst = ts[0]
			}
			for k := 1; k < len(ts); k++ {
				gaps = append(gaps, ts[k].Sub(ts[k-1]).Seconds()*1000)
			}
			r.PromptTokens += results[i].PromptTokens
			r.Computed += results[i].Computed
			r.Reused += results[i].CachedTokens
		}
		after := 0
		for _, ts := range stamps {
			for _, x := range ts {
				if x.After(lastFirst) {
					after++
				}
			}
		}
		r.Preemptions += st.Preemptions - before.Preemptions
		pp = append(pp, float64(n*nPrompt)/lastFirst.Sub(t0).Seconds())
		tg = append(tg, float64(after)/t1.Sub(lastFirst).Seconds())
		sort.Float64s(gaps)
		p50 = append(p50, pct(gaps, 0.5))
		p99 = append(p99, pct(gaps, 0.99))
	}
	r.PrefillTokS, r.DecodeTokS, r.ITLP50ms, r.ITLP99ms = median(pp), median(tg), median(p50), median(p99)
	return r, nil
}

// pct is bench-parallel.mjs's percentile of sorted xs.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[min(len(xs)-1, int(p*float64(len(xs))))]
}

// submitAll submits reqs at once and reads every stream: each sequence's
// token times and ids, and its result. A Submit error is returned after
// the streams already submitted have ended.
func submitAll(e *engine.Engine, reqs []engine.Request) ([][]time.Time, [][]int32, []engine.Result, error) {
	n := len(reqs)
	stamps, toks, results := make([][]time.Time, n), make([][]int32, n), make([]engine.Result, n)
	var wg sync.WaitGroup
	for i, req := range reqs {
		st, err := e.Submit(context.Background(), req)
		if err != nil {
			wg.Wait()
			return nil, nil, nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range st[0].Events() {
				if ev.ID >= 0 {
					stamps[i] = append(stamps[i], ev.At)
					toks[i] = append(toks[i], ev.ID)
				}
			}
			results[i] = st[0].Result()
		}()
	}
	wg.Wait()
	return stamps, toks, results, nil
}
