package engine

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestMixedBatchLogits pins what the scheduler's docs state: a sequence's
// logits inside a mixed batch (another sequence's prompt chunk and other
// sequences' decode tokens) are bit-identical to its logits alone when the
// weights are quantized (per-token products, attention in the sequence's
// own order), and within the reference tolerance for F16 weights (whose
// products llama.cpp, and Loom, sum in tinyBLAS's order for two or more
// tokens and in vec_dot's for one).
func TestMixedBatchLogits(t *testing.T) {
	shared := testmodels.Shared(t)
	files := []struct {
		name string
		path string
		tol  float64
	}{
		{"TinyStories-656K-Q8_0", filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"), 0},
		{"TinyStories-656K-Q4_0", filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q4_0.gguf"), 0},
		{"TinyStories-656K.f16", filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K.f16.gguf"), 0.05},
	}
	if !testing.Short() {
		files = append(files, struct {
			name string
			path string
			tol  float64
		}{"smollm2-135m-Q4_K_M", testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q4_K_M", "-seed", "1"), 0})
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			e, err := Load(f.path, Options{Threads: 2, CtxLen: 256, Parallel: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			nv := e.Info().NVocab
			prompts := [][]int32{
				e.Tokenize("Once upon a time there was a little girl named Lily. She liked to play outside.", true, false),
				e.Tokenize("The dog barked.", true, false),
				e.Tokenize("Tom and Sam went to the big park to", true, false),
			}
			next := []int32{42, 300, 7}
			// Alone: each sequence's prompt, then one decode token.
			aloneLogits := make([][]float32, len(prompts))
			for i, p := range prompts {
				runs := [][]int32{p}
				if i > 0 {
					runs = append(runs, next[i:i+1])
				}
				rows := EvalRuns(t, e, runs...)
				aloneLogits[i] = rows[len(rows)-1]
			}
			// Mixed: sequences 1 and 2 have their prompts cached; one batch
			// holds sequence 0's whole prompt and their decode tokens.
			seqs := []*kvcache.Seq{e.kv.NewSeq(), e.kv.NewSeq(), e.kv.NewSeq()}
			scratch := make([]float32, nv)
			for i := 1; i < 3; i++ {
				b := &model.Batch{Tokens: prompts[i], Pos: positions(0, len(prompts[i])), Seqs: seqs[i : i+1]}
				if _, err := e.runner.Forward(b, scratch); err != nil {
					t.Fatal(err)
				}
			}
			b := &model.Batch{Seqs: seqs}
			for k, tok := range prompts[0] {
				b.Tokens, b.Pos, b.Seq = append(b.Tokens, tok), append(b.Pos, int32(k)), append(b.Seq, 0)
				b.Logits = append(b.Logits, k == len(prompts[0])-1)
			}
			for i := 1; i < 3; i++ {
				b.Tokens, b.Pos, b.Seq = append(b.Tokens, next[i]), append(b.Pos, int32(len(prompts[i]))), append(b.Seq, int32(i))
				b.Logits = append(b.Logits, true)
			}
			out := make([]float32, 3*nv)
			if n, err := e.runner.Forward(b, out); err != nil || n != 3 {
				t.Fatalf("mixed forward: %d rows, %v", n, err)
			}
			for i := range prompts {
				var worst float64
				for j, a := range aloneLogits[i] {
					worst = max(worst, math.Abs(float64(out[i*nv+j]-a)))
				}
				t.Logf("sequence %d: worst |mixed − alone| %.3g (tol %g)", i, worst, f.tol)
				if worst > f.tol {
					t.Errorf("sequence %d: logits in the mixed batch differ from alone by %.3g (tol %g)", i, worst, f.tol)
				}
			}
			for _, s := range seqs {
				s.Free()
			}
		})
	}
}

func positions(from, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(from + i)
	}
	return p
}

// TestOneTokenPromptChunk: a prompt cut so that its last chunk is a single
// token, beside another sequence's decode token (as the chunk-latency
// limit cuts a long prompt deep in its prefill), gives the row of the
// prompt evaluated whole when that chunk attends in the batched order
// (Batch.Batched), bit for bit; in the one-token order it differs, so the
// flag is what makes them equal.
func TestOneTokenPromptChunk(t *testing.T) {
	// F32 weights: no activation quantization absorbs the attention
	// order's last bits (with Q8_0 weights both orders give the same row).
	path := filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.gguf")
	e, err := Load(path, Options{Threads: 2, CtxLen: 256, Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	nv := e.Info().NVocab
	// The last token at a position past 64, where the orders' lanes hold
	// several products each.
	prompt := e.Tokenize(strings.Repeat("Once upon a time there was a little girl named Lily. She liked to play outside in the sun. ", 5), true, false)
	other := e.Tokenize("The dog barked.", true, false)
	whole := EvalRuns(t, e, prompt)
	want := whole[len(whole)-1]
	last := len(prompt) - 1
	for _, batched := range []bool{true, false} {
		seq, os := e.kv.NewSeq(), e.kv.NewSeq()
		out := make([]float32, 2*nv)
		run := func(b *model.Batch) {
			t.Helper()
			if _, err := e.runner.Forward(b, out); err != nil {
				t.Fatal(err)
			}
		}
		run(&model.Batch{Tokens: other, Pos: positions(0, len(other)), Seqs: []*kvcache.Seq{os}})
		run(&model.Batch{Tokens: prompt[:last], Pos: positions(0, last), Seqs: []*kvcache.Seq{seq}})
		run(&model.Batch{Tokens: []int32{prompt[last], 42}, Pos: []int32{int32(last), int32(len(other))}, Seq: []int32{0, 1},
			Seqs: []*kvcache.Seq{seq, os}, Batched: []bool{batched, false}, Logits: []bool{true, true}})
		same := slices.Equal(out[:nv], want)
		if batched && !same {
			t.Errorf("a one-token chunk in the batched order: its row differs from the whole prompt's")
		}
		if !batched && same {
			t.Errorf("a one-token chunk in the one-token order gave the whole prompt's row: the test cannot tell the orders apart")
		}
		seq.Free()
		os.Free()
	}
}
