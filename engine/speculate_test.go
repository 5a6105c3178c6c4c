package engine_test

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// specModels are files of every kind of weight speculation verifies on:
// real quantized and float TinyStories weights, a float32 llama2.c-born
// model, synthgguf shapes with K-quants, a mixture of experts and GPT-2.
func specModels(t *testing.T) map[string]string {
	shared := testmodels.Shared(t)
	ts := filepath.Join(shared, "models", "tinystories-656k", "gguf")
	m := map[string]string{
		"TinyStories-656K-Q8_0": filepath.Join(ts, "TinyStories-656K-Q8_0.gguf"),
		"TinyStories-656K-Q4_0": filepath.Join(ts, "TinyStories-656K-Q4_0.gguf"),
		"TinyStories-656K-F16":  filepath.Join(ts, "TinyStories-656K.f16.gguf"),
		"stories260K-F32":       filepath.Join(shared, "models", "stories260K", "stories260K.gguf"),
	}
	if !testing.Short() {
		m["smollm2-135m-Q4_K_M"] = testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q4_K_M", "-seed", "1")
		m["smollm2-135m-F16"] = testmodels.Synth(t, "-model", "smollm2-135m", "-type", "F16", "-seed", "1")
		m["mixtral-mini-Q8_0"] = testmodels.Synth(t, "-model", "mixtral-mini", "-type", "Q8_0", "-seed", "1")
		m["gpt2-124m-Q8_0"] = testmodels.Synth(t, "-model", "gpt2-124m", "-type", "Q8_0", "-seed", "1")
	}
	return m
}

// TestVerificationRowsBitIdentical: k+1 tokens evaluated in one forward
// pass one by one (as speculative decoding verifies drafts) give rows
// bit-identical to k+1 one-token decodes, on every weight type: attention
// takes each token's one-token order and padded view, and the products
// their one-token (vec_dot) order. This is what makes greedy speculation
// token-identical to plain decoding.
func TestVerificationRowsBitIdentical(t *testing.T) {
	for name, path := range specModels(t) {
		t.Run(name, func(t *testing.T) {
			e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 256})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			prompt := e.Tokenize("Once upon a time there was a", true, false)
			nv := int32(e.Info().NVocab)
			next := []int32{}
			for i := range 7 {
				next = append(next, int32(100+i*37)%nv)
			}
			runs := [][]int32{prompt}
			for _, tok := range next {
				runs = append(runs, []int32{tok})
			}
			one := engine.EvalRuns(t, e, runs...)[len(prompt)-1:]
			ver := engine.EvalRunsOneByOne(t, e, prompt, next)[len(prompt)-1:]
			batched := engine.EvalRuns(t, e, prompt, next)[len(prompt)-1:]
			var worstBatched float64
			for i := range one {
				for j := range one[i] {
					if math.Float32bits(one[i][j]) != math.Float32bits(ver[i][j]) {
						t.Fatalf("row %d token %d: verified %v, one-token decode %v", i, j, ver[i][j], one[i][j])
					}
					worstBatched = max(worstBatched, math.Abs(float64(batched[i][j]-one[i][j])))
				}
			}
			t.Logf("%d rows bit-identical; the batched (prefill) order differs by up to %s", len(one), fmt.Sprintf("%.3g", worstBatched))
		})
	}
}
