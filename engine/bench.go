package engine

import (
	"errors"
	"sort"
	"time"

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
	nv := e.Model.Config().NVocab
	logits := make([]float32, nv)
	// Tokens spread over the vocabulary, as llama-bench uses random ids.
	ids := make([]int32, nPrompt)
	for i := range ids {
		ids[i] = int32((100 + i*37) % nv)
	}
	one := make([]int32, 1)
	s := e.NewSession()
	defer s.Close()
	for range reps {
		s.Truncate(0)
		t0 := time.Now()
		if err := s.Eval(ids, false, logits); err != nil {
			return r, err
		}
		r.Prefill = append(r.Prefill, float64(nPrompt)/time.Since(t0).Seconds())
		if nGen == 0 {
			continue
		}
		t1 := time.Now()
		for range nGen {
			one[0] = sample.Greedy(logits)
			if err := s.Eval(one, false, logits); err != nil {
				return r, err
			}
		}
		r.Decode = append(r.Decode, float64(nGen)/time.Since(t1).Seconds())
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
