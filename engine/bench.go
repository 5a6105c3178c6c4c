package engine

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/sample"
)

// BenchResult is llama-bench style throughput: pp (prompt processing, one
// batch) and tg (text generation, one token at a time), medians over runs.
type BenchResult struct {
	PrefillTokS float64 `json:"prefill_tok_s"`
	DecodeTokS  float64 `json:"decode_tok_s"`
	Prefill     []float64
	Decode      []float64
}

// Bench evaluates nPrompt tokens in one batch, then generates nGen tokens
// greedily, reps times from an empty cache, like llama-bench -p/-n.
func (e *Engine) Bench(nPrompt, nGen, reps int) (BenchResult, error) {
	var r BenchResult
	if nPrompt < 1 || nGen < 0 || reps < 1 {
		return r, errors.New("engine: bench needs -p ≥ 1, -n ≥ 0, -r ≥ 1")
	}
	if nPrompt+nGen > e.ctxLen {
		return r, errors.New("engine: bench prompt and generation exceed the context")
	}
	nv := e.model.Config().NVocab
	logits := make([]float32, nv)
	// Tokens spread over the vocabulary, as llama-bench uses random ids.
	ids := make([]int32, nPrompt)
	for i := range ids {
		ids[i] = int32((100 + i*37) % nv)
	}
	s := e.NewSession()
	defer s.Close()
	for range reps {
		s.Truncate(0)
		t, err := s.TimedRun(ids, nGen, logits, sample.Greedy)
		if err != nil {
			return r, err
		}
		r.Prefill = append(r.Prefill, float64(nPrompt)/t.Prefill.Seconds())
		if nGen > 0 {
			r.Decode = append(r.Decode, float64(nGen)/t.Decode.Seconds())
		}
	}
	r.PrefillTokS, r.DecodeTokS = median(r.Prefill), median(r.Decode)
	return r, nil
}

// RunTimes are the wall times of a TimedRun's two phases.
type RunTimes struct {
	Prefill time.Duration // the prompt, one batch
	Decode  time.Duration // the decode steps, one token each, choosing excluded
}

// TimedRun evaluates ids in one batch, then steps tokens one at a time,
// each the one next picks from the latest logits (next sees the prompt's
// logits first); logits ([n_vocab]) ends with the last step's. The decode
// time counts the evaluations only, not next's work (sampling), as
// llama-bench's generation test has none. Bench and explain measure
// through it.
func (s *Session) TimedRun(ids []int32, steps int, logits []float32, next func(logits []float32) int32) (RunTimes, error) {
	var t RunTimes
	t0 := time.Now()
	if err := s.Eval(ids, false, logits); err != nil {
		return t, err
	}
	t.Prefill = time.Since(t0)
	one := make([]int32, 1)
	for range steps {
		one[0] = next(logits)
		t1 := time.Now()
		if err := s.Eval(one, false, logits); err != nil {
			return t, err
		}
		t.Decode += time.Since(t1)
	}
	return t, nil
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

// BenchParallel serves n sequences of nPrompt prompt tokens (their own
// tokens, as bench-parallel.mjs makes them) generating nGen+1 tokens each
// greedily through the scheduler, reps times, all submitted at once. With
// sharedPrefix > 0 every prompt starts with the same sharedPrefix tokens
// (the scheduler computes them once; the others wait for those blocks).
func (e *Engine) BenchParallel(n, nPrompt, nGen, sharedPrefix, reps int) (ParallelResult, error) {
	r := ParallelResult{Parallel: n}
	if n < 1 || nPrompt < 1 || nGen < 1 || reps < 1 || sharedPrefix < 0 || sharedPrefix > nPrompt {
		return r, errors.New("engine: bench --parallel needs N ≥ 1, -p ≥ 1, -n ≥ 1, -r ≥ 1 and 0 ≤ --shared-prefix ≤ -p")
	}
	if nPrompt+nGen+1 > e.ctxLen {
		return r, errors.New("engine: bench prompt and generation exceed the context")
	}
	nv := e.model.Config().NVocab
	span := max(1, min(nv-200, 20000))
	var pp, tg, p50, p99 []float64
	for range reps {
		e.DropCached()
		s := e.NewScheduler(SchedulerOptions{MaxRunning: n, MaxWaiting: n})
		stamps := make([][]time.Time, n)
		results := make([]GenResult, n)
		var wg sync.WaitGroup
		t0 := time.Now()
		submit := func(i int) error {
			toks := make([]int32, nPrompt)
			for k := range toks {
				src := i
				if k < sharedPrefix {
					src = 0
				}
				toks[k] = int32(100 + (k*37+src*101)%span)
			}
			st, err := s.Submit(context.Background(), GenRequest{Tokens: toks, MaxTokens: nGen + 1, IgnoreEOS: true})
			if err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					ev, ok := st[0].Next()
					if !ok {
						break
					}
					if ev.ID >= 0 {
						stamps[i] = append(stamps[i], ev.At)
					}
				}
				results[i] = st[0].Result()
			}()
			return nil
		}
		for i := range n {
			if err := submit(i); err != nil {
				s.Close()
				return r, err
			}
		}
		wg.Wait()
		t1 := time.Now()
		st := s.Stats()
		s.Close()
		var lastFirst time.Time
		var gaps []float64
		r.PromptTokens, r.Computed, r.Reused = 0, 0, 0
		for i, ts := range stamps {
			if results[i].FinishReason == "error" {
				return r, results[i].Err
			}
			if len(ts) == 0 {
				return r, errors.New("engine: a sequence generated nothing")
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
		r.Preemptions += st.Preemptions
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

// KernelUse says which kernels run one tensor type's matrix products.
type KernelUse struct {
	Type     string // ggml type name
	Decode   string // the kernel for one token
	Prefill  string // the kernel for a batch of tokens
	Matrices int
	Bytes    int64
}

// Kernels reports, per tensor type and kernel, the model's matrix
// products: so a benchmark result can be explained (VNNI or AVX2, packed
// or not, float GEMM or vec_dot).
func (e *Engine) Kernels() []KernelUse {
	idx := map[[3]string]int{}
	var out []KernelUse
	for _, m := range e.matrices() {
		k := [3]string{m.Type.String(), m.Kernel(), m.GemmKernel()}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, KernelUse{Type: k[0], Decode: k[1], Prefill: k[2]})
		}
		out[i].Matrices++
		out[i].Bytes += int64(len(m.Data))
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Bytes > out[b].Bytes })
	return out
}

// DecodeBytes is what one decode step reads of the weights: every matrix
// multiplied, with mixture-of-experts tensors counted for the experts a
// token uses only (NExpertsUsed of NExperts), plus one embedding row. The
// KV cache and activations are not counted.
func (e *Engine) DecodeBytes() int64 {
	c := e.model.Config()
	var total float64
	for _, m := range e.matrices() {
		b := float64(len(m.Data))
		if c.NExperts > 0 && strings.Contains(m.Name, "_exps") {
			b *= float64(c.NExpertsUsed) / float64(c.NExperts)
		}
		total += b
	}
	for _, t := range e.tensors {
		if t.Name == "token_embd.weight" && len(t.Dims) == 2 && t.Dims[1] > 0 {
			total += float64(t.Bytes) / float64(t.Dims[1])
		}
	}
	return int64(total)
}

// PrefillFLOPs is the matrix-product work of evaluating n prompt tokens in
// one batch: 2 operations per multiply-add, every layer matrix for every
// token (mixture-of-experts tensors for the experts a token uses), the LM
// head for the last token only, as a prefill computes it. Attention's own
// products (2·n²·d per layer) are left out: at benchmark prompt lengths
// they are a few percent.
func (e *Engine) PrefillFLOPs(n int) float64 {
	c := e.model.Config()
	var perToken, head float64
	for _, m := range e.matrices() {
		f := 2 * float64(m.Rows) * float64(m.Cols)
		switch {
		case m.Name == "output.weight" || m.Embedding:
			head += f
		case c.NExperts > 0 && strings.Contains(m.Name, "_exps"):
			perToken += f * float64(c.NExpertsUsed) / float64(c.NExperts)
		default:
			perToken += f
		}
	}
	return float64(n)*perToken + head
}

// matrices lists the model's multiplied weights once each (a tied LM head
// is the embedding table; nil when the model cannot list them).
func (e *Engine) matrices() []*kernels.Matrix {
	mm, ok := e.model.(interface{ Matrices() []*kernels.Matrix })
	if !ok {
		return nil
	}
	var out []*kernels.Matrix
	seen := map[*kernels.Matrix]bool{}
	for _, m := range mm.Matrices() {
		if m != nil && !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}
