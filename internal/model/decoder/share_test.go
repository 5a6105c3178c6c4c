package decoder_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestRunnersShareModel: a loaded model is immutable, so runners sharing
// it may evaluate at once. Two runners over one model, each with its own
// KV pool and thread pool, run different prompts (a prefill batch, then
// decode steps) concurrently in two goroutines, and each gets bit for bit
// the logits it gets alone. Run it with -race: any write to the weights
// (a matrix's scratch, a layer's buffer) during a forward pass is a race
// between the two.
//
// The models cover the product paths: Q8_0 (packed groups, or rows where
// the CPU has no packed kernels), F16 and F32 (the float GEMM for the
// prompt, vec_dot for decode), and a mixture of experts built in memory
// (F16 attention, a Q8_0 head, Q8_0/Q4_0 experts in mul_mat_id's order).
func TestRunnersShareModel(t *testing.T) {
	shared := func(rel ...string) func(t *testing.T) model.Model {
		return func(t *testing.T) model.Model {
			return loadGGUF(t, filepath.Join(append([]string{testmodels.Shared(t), "models"}, rel...)...))
		}
	}
	for _, c := range []struct {
		name string
		load func(t *testing.T) model.Model
	}{
		{"TinyStories-656K-Q8_0", shared("tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")},
		{"TinyStories-656K-F16", shared("tinystories-656k", "gguf", "TinyStories-656K.f16.gguf")},
		{"stories260K-F32", shared("stories260K", "stories260K.gguf")},
		{"tiny-moe", tinyMoE},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := c.load(t)
			nv := int32(m.Config().NVocab)
			prompts := make([][]int32, 2)
			for i, n := range []int{45, 29} { // the first spans two cache blocks
				for j := range n {
					prompts[i] = append(prompts[i], int32(j*(7+2*i)+3+i)%nv)
				}
			}
			const steps = 6
			alone := make([][]float32, len(prompts))
			for i, p := range prompts {
				var err error
				if alone[i], err = evaluate(m, p, steps); err != nil {
					t.Fatal(err)
				}
			}
			for round := range 2 {
				got := make([][]float32, len(prompts))
				errs := make([]error, len(prompts))
				var wg sync.WaitGroup
				for i, p := range prompts {
					wg.Go(func() { got[i], errs[i] = evaluate(m, p, steps) })
				}
				wg.Wait()
				for i := range prompts {
					if errs[i] != nil {
						t.Fatal(errs[i])
					}
					for k := range alone[i] {
						if math.Float32bits(got[i][k]) != math.Float32bits(alone[i][k]) {
							t.Fatalf("round %d, prompt %d: logit %d (token %d) = %v together, %v alone",
								round, i, k, k/int(nv), got[i][k], alone[i][k])
						}
					}
				}
			}
		})
	}
}

// evaluate runs prompt through a new runner of m with its own KV pool:
// the prompt as one batch with logits for every token, then steps decode
// steps of one token each (fixed tokens, so the runs compare exactly). It
// returns every logit in order.
func evaluate(m model.Model, prompt []int32, steps int) ([]float32, error) {
	c := m.Config()
	r := m.NewRunner(model.RunnerOptions{Threads: 2, MaxCtx: 128})
	defer r.Close()
	pool, err := kvcache.NewPool(c.NLayers, c.KVDim(), kvcache.BlocksFor(128))
	if err != nil {
		return nil, err
	}
	seq := pool.NewSeq()
	n := len(prompt)
	b := &model.Batch{Tokens: prompt, Seqs: []*kvcache.Seq{seq}, Logits: make([]bool, n)}
	for i := range n {
		b.Pos = append(b.Pos, int32(i))
		b.Logits[i] = true
	}
	out := make([]float32, (n+steps)*c.NVocab)
	if _, err := r.Forward(b, out); err != nil {
		return nil, err
	}
	for s := range steps {
		tok := int32((s*13 + 5) % c.NVocab)
		step := &model.Batch{Tokens: []int32{tok}, Pos: []int32{int32(seq.Len())}, Seqs: []*kvcache.Seq{seq}}
		if _, err := r.Forward(step, out[(n+s)*c.NVocab:]); err != nil {
			return nil, fmt.Errorf("decode step %d: %w", s, err)
		}
	}
	return out, nil
}

// tinyMoE is a 2-layer Mixtral-style Llama built in memory: width 64, 4
// heads over 2 KV heads, 4 experts of width 64 with 2 per token, 80
// tokens; F16 attention projections, Q8_0 output projection and head,
// F32 router, Q8_0 gate/up and Q4_0 down experts.
func tinyMoE(t *testing.T) model.Model {
	cfg := &model.Config{Arch: "llama", Dim: 64, HiddenDim: 64, NLayers: 2, NHeads: 4, NKVHeads: 2, HeadDim: 16,
		NVocab: 80, CtxLen: 256, Eps: 1e-5, RopeBase: 10000, RopeDims: 16, RopeScale: 1, SlidingEvery: 1,
		NExperts: 4, NExpertsUsed: 2, ExpertHidden: 64}
	rng := rand.New(rand.NewPCG(21, 22))
	src := model.MapSource{}
	// add stores a tensor of ggml shape dims (dims[0] the row length) with
	// values base + N(0, sd).
	add := func(name string, typ tensor.DType, base, sd float64, dims ...int) {
		n := 1
		ud := make([]uint64, len(dims))
		for i, d := range dims {
			n *= d
			ud[i] = uint64(d)
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(base + sd*rng.NormFloat64())
		}
		size, err := tensor.RowBytes(typ, uint64(n))
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		if err := quant.Quantize(typ, data, x); err != nil {
			t.Fatal(err)
		}
		src[name] = model.Tensor{Name: name, Type: typ, Dims: ud, Data: data}
	}
	d, e, h, kv := cfg.Dim, cfg.NExperts, cfg.ExpertHidden, cfg.KVDim()
	add("token_embd.weight", tensor.F32, 0, 1, d, cfg.NVocab)
	add("output_norm.weight", tensor.F32, 1, 0.1, d)
	add("output.weight", tensor.Q8_0, 0, 0.3, d, cfg.NVocab)
	for l := range cfg.NLayers {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", tensor.F32, 1, 0.1, d)
		add(p+"attn_q.weight", tensor.F16, 0, 0.3, d, d)
		add(p+"attn_k.weight", tensor.F16, 0, 0.3, d, kv)
		add(p+"attn_v.weight", tensor.F16, 0, 0.3, d, kv)
		add(p+"attn_output.weight", tensor.Q8_0, 0, 0.2, d, d)
		add(p+"ffn_norm.weight", tensor.F32, 1, 0.1, d)
		add(p+"ffn_gate_inp.weight", tensor.F32, 0, 0.5, d, e)
		add(p+"ffn_gate_exps.weight", tensor.Q8_0, 0, 0.2, d, h, e)
		add(p+"ffn_up_exps.weight", tensor.Q8_0, 0, 0.2, d, h, e)
		add(p+"ffn_down_exps.weight", tensor.Q4_0, 0, 0.2, h, d, e)
	}
	a, err := model.Lookup(cfg.Arch)
	if err != nil {
		t.Fatal(err)
	}
	m, err := a.Build(cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
