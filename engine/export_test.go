package engine

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/testmodels"
)

// EvalRuns evaluates runs of tokens, one forward pass each, in a new
// sequence straight on the runner, and returns the logits after every
// token of every run ([Σ len(run)][n_vocab]). Tests use it to compare
// evaluation orders the scheduler would not choose (a prompt one token at
// a time, llama.cpp's tokens fed after a prompt).
func EvalRuns(t *testing.T, e *Engine, runs ...[]int32) [][]float32 {
	t.Helper()
	return evalRuns(t, e, false, nil, runs)
}

// EvalDecode evaluates prompt without logits (from the prefix cache as
// far as it holds it), then each of steps, and returns the steps' logits
// rows only: the decode check of a long recording needs no [len(prompt),
// nVocab] product or buffer for the prompt's rows, nor a second prefill.
func EvalDecode(t *testing.T, e *Engine, prompt []int32, steps ...[]int32) [][]float32 {
	t.Helper()
	return evalRuns(t, e, false, prompt, steps)
}

// EvalRunsOneByOne is EvalRuns with every run after the first verified
// one by one (Batch.OneByOne), as speculative decoding evaluates drafts.
func EvalRunsOneByOne(t *testing.T, e *Engine, runs ...[]int32) [][]float32 {
	t.Helper()
	return evalRuns(t, e, true, nil, runs)
}

// evalRuns evaluates prompt without logits (its cached blocks reused, as
// the scheduler would), then runs, and returns the runs' logits rows.
func evalRuns(t *testing.T, e *Engine, oneByOne bool, prompt []int32, runs [][]int32) [][]float32 {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	set, salt, err := e.adapters(nil) // the engine's default LoRA adapters, as a request without a list
	if err != nil {
		t.Fatal(err)
	}
	seq := e.kv.NewSeqSalted(salt)
	defer seq.Free()
	batch := func(r []int32, logits bool) *model.Batch {
		b := &model.Batch{Tokens: r, Pos: positions(seq.Len(), len(r)), Seqs: []*kvcache.Seq{seq}, Logits: make([]bool, len(r))}
		if set != nil {
			b.Adapters = [][]model.AdapterScale{set}
		}
		if oneByOne && seq.Len() > 0 {
			b.OneByOne = []bool{true}
		}
		for i := range b.Logits {
			b.Logits[i] = logits
		}
		return b
	}
	if len(prompt) > 0 {
		rest := prompt[seq.Reuse(prompt):]
		if _, err := e.runner.Forward(batch(rest, false), nil); err != nil {
			t.Fatal(err)
		}
	}
	nv := e.model.Config().NVocab
	var out [][]float32
	for _, r := range runs {
		flat := make([]float32, len(r)*nv)
		if _, err := e.runner.Forward(batch(r, true), flat); err != nil {
			t.Fatal(err)
		}
		for i := range r {
			out = append(out, flat[i*nv:(i+1)*nv])
		}
	}
	return out
}

// TestBatchVsIncremental: evaluating a prompt in one batch or one token at a
// time gives the same logits, up to the summation orders llama.cpp itself
// switches between: at one token ggml's vec_dot (64 lanes for attention, 8
// for F16 weights), for a batch tinyBLAS (16 lanes). Quantized weight
// products are bit-identical either way (the packed and multi-token kernels
// reproduce the one-token ones), and on the Q8_0 file the activations'
// 8-bit rounding absorbs the attention's last-bit differences: measured
// bit-identical, so the tolerance is 0. F16 weights: measured worst
// difference 0.0023, bounded at 0.005, a tenth of the tolerance of the F16
// reference recordings.
func TestBatchVsIncremental(t *testing.T) {
	for _, c := range []struct {
		file string
		tol  float64
	}{
		{"TinyStories-656K-Q8_0.gguf", 0},
		{"TinyStories-656K.f16.gguf", 5e-3},
	} {
		t.Run(c.file, func(t *testing.T) {
			e, err := Load(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", c.file), Options{Threads: 2, CtxLen: 256})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ids := e.Tokenize("The little dog ran to the park. He saw", true, false)
			batch, err := e.Logits(t.Context(), ids)
			if err != nil {
				t.Fatal(err)
			}
			var runs [][]int32
			for i := range ids {
				runs = append(runs, ids[i:i+1])
			}
			var worst float64
			for i, out := range EvalRuns(t, e, runs...) {
				for j := range out {
					d := math.Abs(float64(out[j] - batch[i][j]))
					worst = max(worst, d)
					if d > c.tol {
						t.Fatalf("pos %d token %d: incremental %v, batch %v", i, j, out[j], batch[i][j])
					}
				}
			}
			t.Logf("worst |incremental − batch| %.2g (tol %g)", worst, c.tol)
		})
	}
}

// GrammarIndex is the engine's grammar index, for the external tests.
func GrammarIndex(e *Engine) *grammar.Index { return e.grammarIndex() }

// DraftCatchUp is the most tokens one drafting step fed the draft model to
// catch a sequence's draft cache up (read while no request runs).
func DraftCatchUp(e *Engine) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sched.draftCatchUp
}

// SetTestDrafter replaces the n-gram drafter of e's scheduler (nil: back
// to the n-grams); set it while no request runs.
func SetTestDrafter(e *Engine, f func(tokens []int32, k int) []int32) { e.sched.testDrafter = f }
