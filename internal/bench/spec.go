package bench

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/loom-inference/loom/engine"
)

// SpecOptions configure Speculation.
type SpecOptions struct {
	// Spec is the speculation measured (Mode ngram or draft; the engine
	// must have been loaded with a draft model for draft).
	Spec engine.SpecParams
	// Prompt is the prompt's tokens (BOS included); nil: NPrompt tokens
	// spread over the vocabulary, as Run's, each sequence its own.
	Prompt   []int32
	NPrompt  int
	NGen     int // tokens generated per sequence after the first
	Reps     int // repetitions of the pair (off, speculative)
	Parallel int // sequences at once (0 or 1: one)
}

// SpecResult compares greedy decoding with and without speculation,
// measured alternately in the same run (off then on, then on then off, …,
// so that drifts of the machine fall on both). Rates are medians over the
// repetitions; the counts are sums over the speculative runs.
type SpecResult struct {
	Mode         string    `json:"mode"`
	Parallel     int       `json:"parallel"`
	PromptTokens int       `json:"prompt_tokens"` // each sequence's
	Generated    int       `json:"generated"`     // tokens each sequence generated
	OffTokS      float64   `json:"decode_tok_s_off"`
	SpecTokS     float64   `json:"decode_tok_s_spec"`
	Speedup      float64   `json:"speedup"` // SpecTokS / OffTokS
	Off          []float64 `json:"runs_off"`
	On           []float64 `json:"runs_spec"`
	// vLLM's counters over the speculative runs: drafts verified (one per
	// sequence and step that carried drafts), tokens drafted, accepted.
	Drafts      int64 `json:"drafts"`
	DraftTokens int64 `json:"draft_tokens"`
	Accepted    int64 `json:"accepted_tokens"`
	// AcceptanceRate is Accepted / DraftTokens; MeanAcceptedLength is
	// vLLM's 1 + Accepted / Drafts, the tokens a step that verified drafts
	// yields; TokensPerStep counts every decode step of the sequences
	// (with drafts or not): generated tokens per forward pass of the
	// target that evaluated a sequence's tokens (1 without speculation).
	AcceptanceRate     float64 `json:"acceptance_rate"`
	MeanAcceptedLength float64 `json:"mean_accepted_length"`
	TokensPerStep      float64 `json:"tokens_per_step"`
	// Identical: every sequence generated the same tokens with and
	// without speculation (greedy decoding; speculation never changes
	// the output).
	Identical bool `json:"identical"`
}

// Speculation runs o.Parallel sequences greedily (end-of-generation
// ignored) with speculation off and with o.Spec, alternately, o.Reps
// times each, through the scheduler like every request. The decode rate
// is bench-parallel.mjs's aggregate one (tokens after the last sequence's
// first token, over the time from then to the end), which for one
// sequence is its tokens after the first over the wall time from its
// first token to its last: drafting (the draft model's forward passes,
// the n-gram lookups) is inside it.
func Speculation(e *engine.Engine, o SpecOptions) (SpecResult, error) {
	n := max(o.Parallel, 1)
	r := SpecResult{Mode: o.Spec.Mode, Parallel: n, Identical: true}
	switch {
	case o.Spec.Mode != engine.SpecNgram && o.Spec.Mode != engine.SpecDraft:
		return r, fmt.Errorf("bench: speculation mode %q (want ngram or draft)", o.Spec.Mode)
	case o.NGen < 1 || o.Reps < 1 || o.Prompt == nil && o.NPrompt < 1:
		return r, errors.New("bench: speculation needs -n ≥ 1, -r ≥ 1 and a prompt")
	case n > e.Parallel():
		return r, fmt.Errorf("bench: --parallel %d on an engine loaded for %d sequences (Options.Parallel)", n, e.Parallel())
	}
	prompts := make([][]int32, n)
	nv := e.Info().NVocab
	span := max(1, min(nv-200, 20000))
	for i := range prompts {
		if o.Prompt != nil {
			prompts[i] = o.Prompt
			continue
		}
		prompts[i] = make([]int32, o.NPrompt)
		for k := range prompts[i] {
			prompts[i][k] = int32(100 + (k*37+i*101)%span)
		}
	}
	r.PromptTokens = len(prompts[0])
	if r.PromptTokens+o.NGen+1 > e.CtxLen() {
		return r, fmt.Errorf("bench: a prompt of %d tokens and %d generated exceed the context of %d", r.PromptTokens, o.NGen+1, e.CtxLen())
	}
	var want [][]int32 // the tokens without speculation
	var steps, gen int
	for rep := range 2 * o.Reps {
		on := rep%2 == 1
		if rep/2%2 == 1 { // every other pair: speculation first
			on = !on
		}
		spec := engine.SpecParams{Mode: engine.SpecOff}
		if on {
			spec = o.Spec
		}
		before := settled(e)
		rate, toks, results, err := decodeAll(e, prompts, o.NGen, spec)
		if err != nil {
			return r, err
		}
		if !on {
			r.Off = append(r.Off, rate)
			if want == nil {
				want = toks
			}
		} else {
			r.On = append(r.On, rate)
			st := settled(e)
			r.Drafts += st.SpecDrafts - before.SpecDrafts
			r.DraftTokens += st.SpecDraftTokens - before.SpecDraftTokens
			accepted := int(st.SpecAccepted - before.SpecAccepted)
			r.Accepted += int64(accepted)
			// Each decode step of a sequence yields its accepted drafts
			// and one token of its own; the first token came with the
			// prompt. (The engine's counters, not Result.Accepted: they
			// count every step.)
			g := sumGenerated(results) - len(results)
			gen += g
			steps += g - accepted
		}
		if want != nil {
			for i := range toks {
				if !slices.Equal(toks[i], want[i]) {
					r.Identical = false
				}
			}
		}
		r.Generated = len(toks[0])
	}
	r.OffTokS, r.SpecTokS = median(r.Off), median(r.On)
	if r.OffTokS > 0 {
		r.Speedup = r.SpecTokS / r.OffTokS
	}
	if r.DraftTokens > 0 {
		r.AcceptanceRate = float64(r.Accepted) / float64(r.DraftTokens)
	}
	if r.Drafts > 0 {
		r.MeanAcceptedLength = 1 + float64(r.Accepted)/float64(r.Drafts)
	}
	if steps > 0 {
		r.TokensPerStep = float64(gen) / float64(steps)
	}
	return r, nil
}

// settled returns e's counters once they include every step run so far:
// the scheduler publishes them after a step, when the streams it finished
// may already have been read.
func settled(e *engine.Engine) engine.SchedStats {
	st := e.Stats()
	for deadline := time.Now().Add(time.Second); (st.Running > 0 || st.Waiting > 0) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
		st = e.Stats()
	}
	return st
}

func sumGenerated(rs []engine.Result) int {
	n := 0
	for _, r := range rs {
		n += r.Generated
	}
	return n
}

// decodeAll submits one greedy request per prompt at once, each
// generating nGen+1 tokens with spec, and returns the aggregate decode
// rate, each sequence's tokens and results.
func decodeAll(e *engine.Engine, prompts [][]int32, nGen int, spec engine.SpecParams) (float64, [][]int32, []engine.Result, error) {
	e.DropCached()
	reqs := make([]engine.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = engine.Request{Tokens: p, MaxTokens: nGen + 1, IgnoreEOS: true, Spec: spec}
	}
	stamps, toks, results, err := submitAll(e, reqs)
	if err != nil {
		return 0, nil, nil, err
	}
	var first, last time.Time
	for i, ts := range stamps {
		if results[i].FinishReason == engine.FinishError {
			return 0, nil, nil, results[i].Err
		}
		if len(ts) < 2 {
			return 0, nil, nil, fmt.Errorf("bench: a sequence generated %d tokens (%s, %s)", len(ts), results[i].FinishReason, results[i].Detail)
		}
		if ts[0].After(first) {
			first = ts[0]
		}
		if end := ts[len(ts)-1]; end.After(last) {
			last = end
		}
	}
	after := 0
	for _, ts := range stamps {
		for _, t := range ts {
			if t.After(first) {
				after++
			}
		}
	}
	if !last.After(first) {
		return 0, toks, results, nil
	}
	return float64(after) / last.Sub(first).Seconds(), toks, results, nil
}
