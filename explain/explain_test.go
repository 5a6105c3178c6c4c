package explain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/explain"
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/nn"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// TestToyAttention: the classic worked example through the attention code
// the model (and so explain) runs: d = 2, identity projections
// (Q = K = V = X), X = [[1,0],[0,1],[1,1]], causal mask, scale 1/√2.
func TestToyAttention(t *testing.T) {
	x := []float32{1, 0, 0, 1, 1, 1}         // [3 tokens, 2]
	k := make([]uint16, 2*kvcache.BlockSize) // one cache block: K transposed, [2, BlockSize]
	v := make([]uint16, 2*kvcache.BlockSize) // V [BlockSize, 2]
	for i, f := range x {
		k[(i%2)*kvcache.BlockSize+i/2] = quant.F32ToF16(f)
		v[i] = quant.F32ToF16(f)
	}
	seqs := []nn.Seq{{Blocks: []int32{0}, VRows: []int32{0, 2, 4}}}
	seqs[0].SetOrders(3, 2, 2)
	p := parallel.New(1)
	defer p.Close()
	a := nn.NewAttention(1, 1, 2, 3, 1)
	if math.Abs(float64(a.Scale)-1/math.Sqrt2) > 1e-7 {
		t.Fatalf("scale %v, want 1/√2", a.Scale)
	}
	weights := make([][]float32, 3)
	out := make([]float32, len(x))
	a.Forward(p, out, x, 3, []int32{0, 1, 2}, []int32{0, 0, 0}, seqs, k, v, func(tok, head int, w []float32) {
		weights[tok] = append([]float32(nil), w...)
	})
	want := [][]float64{{1}, {0.330, 0.670}, {0.248, 0.248, 0.503}}
	for i, row := range want {
		if len(weights[i]) != len(row) {
			t.Fatalf("token %d sees %d positions, want %d (causal)", i, len(weights[i]), len(row))
		}
		for j, w := range row {
			if math.Abs(float64(weights[i][j])-w) > 1.5e-3 {
				t.Errorf("weight[%d][%d] = %.4f, want ≈ %.3f", i, j, weights[i][j], w)
			}
		}
	}
	// Output of the third token: Σ_j w_j·V_j ≈ [0.751, 0.751] (the
	// weights are rounded to F16 before the weighted sum, as llama.cpp does).
	for i, w := range []float64{0.751, 0.751} {
		if math.Abs(float64(out[4+i])-w) > 1.5e-3 {
			t.Errorf("out[2][%d] = %.4f, want ≈ %.3f", i, out[4+i], w)
		}
	}
}

// reports lists the models checked: real TinyStories weights and synthgguf
// presets, each with a llama.cpp recording of the same prompt.
var reports = []string{
	"real-TinyStories-656K-Q8_0-p1.jsonl",
	"real-TinyStories-656K.f16-p2.jsonl",
	"synth-smollm2-135m-Q8_0-s1.jsonl",
	"synth-smollm2-135m-Q4_K_M-s1.jsonl",
}

func refByFile(t *testing.T, file string) testmodels.Ref {
	for _, r := range testmodels.References(t) {
		if r.File == file {
			return r
		}
	}
	t.Fatalf("%s is not in shared/reference/index.tsv", file)
	return testmodels.Ref{}
}

// fixedMachine keeps the tests from measuring bandwidth for every model;
// TestMeasure measures once.
var fixedMachine = &explain.Machine{BandwidthGBs: 20, PeakGFLOPS: 100, Threads: 2, Method: "test", CPU: "Test CPU: AVX2"}

func TestReportAgreesWithEngineAndReference(t *testing.T) {
	for _, file := range reports {
		t.Run(strings.TrimSuffix(file, ".jsonl"), func(t *testing.T) {
			ref := refByFile(t, file)
			rec := ref.Load(t)
			e, err := engine.Load(ref.ModelPath(t), engine.Options{Threads: 2, CtxLen: 256})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			r, err := explain.Run(e, explain.Options{Prompt: ref.Prompt, Layer: -1, Head: 1, Token: -1, Temp: 0.7, TopK: 12, Steps: 3, Seed: 7, Machine: fixedMachine})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int32
			for _, tk := range r.Tokens {
				ids = append(ids, tk.ID)
			}
			if !slices.Equal(ids, rec.Prompt.Tokens) {
				t.Fatalf("tokens %v, llama.cpp %v", ids, rec.Prompt.Tokens)
			}
			checkNext(t, e, r, ids, ref, rec)
			checkAttention(t, r)
			checkKV(t, e, r)
			checkWeights(t, e, r)
			checkCost(t, r)
		})
	}
}

// checkNext: the candidates are the top next-token logits the engine
// computes for generation, their probabilities the softmax of those
// logits, and both agree with llama.cpp.
func checkNext(t *testing.T, e *engine.Engine, r *explain.Report, ids []int32, ref testmodels.Ref, rec *testmodels.Recording) {
	last, err := e.NextLogits(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	lse := sample.LogSumExp(last)
	top := sample.TopK(last, 12)
	if len(r.Next) != len(top) {
		t.Fatalf("%d candidates, want %d", len(r.Next), len(top))
	}
	temp := float64(float32(0.7)) // as the option holds it
	var lseT float64
	mx := float64(top[0].Logit)
	for _, l := range last {
		lseT += math.Exp((float64(l) - mx) / temp)
	}
	lseT = mx/temp + math.Log(lseT)
	for i, c := range r.Next {
		if c.ID != top[i].ID || c.Logit != top[i].Logit {
			t.Errorf("candidate %d: %d %.6f, engine %d %.6f", i, c.ID, c.Logit, top[i].ID, top[i].Logit)
		}
		if p := math.Exp(float64(c.Logit) - lse); math.Abs(c.Prob-p) > 1e-9*math.Max(p, 1e-3) {
			t.Errorf("candidate %d: prob %.9g, softmax of the logits %.9g", i, c.Prob, p)
		}
		if p := math.Exp(float64(c.Logit)/temp - lseT); math.Abs(c.ProbTemp-p) > 1e-9*math.Max(p, 1e-3) {
			t.Errorf("candidate %d: prob at T=0.7 %.9g, want %.9g", i, c.ProbTemp, p)
		}
	}
	// Against llama.cpp's last position: logits within the file's
	// tolerance, log-probabilities within logit + lse tolerance.
	tf := rec.TF[len(rec.TF)-1]
	if tf.Pos != len(ids)-1 {
		t.Fatalf("reference's last teacher-forced position is %d, prompt has %d tokens", tf.Pos, len(ids))
	}
	byID := map[int32]explain.Candidate{}
	for _, c := range r.Next {
		byID[c.ID] = c
	}
	matched := 0
	for _, p := range tf.Top {
		c, ok := byID[int32(p[0])]
		if !ok {
			continue
		}
		matched++
		if d := math.Abs(float64(c.Logit) - p[1]); d > ref.LogitTol {
			t.Errorf("token %d: logit %.5f, llama.cpp %.5f", c.ID, c.Logit, p[1])
		}
		if d := math.Abs(math.Log(c.Prob) - (p[1] - tf.LSE)); d > ref.LogitTol+ref.LseTol {
			t.Errorf("token %d: log p %.5f, llama.cpp %.5f", c.ID, math.Log(c.Prob), p[1]-tf.LSE)
		}
	}
	if matched < 5 {
		t.Errorf("only %d of llama.cpp's top tokens are among the candidates", matched)
	}
	// Cut-offs: every candidate is in the top-k; the nucleus is a prefix.
	inP := 0
	for i, c := range r.Next {
		if !c.InTopK || (c.InTopP && i != inP) {
			t.Errorf("candidate %d: cut-off flags %+v", i, c)
		}
		if c.InTopP {
			inP++
		}
	}
	if inP != r.Sampling.Nucleus || inP == 0 {
		t.Errorf("nucleus %d, flagged %d", r.Sampling.Nucleus, inP)
	}
}

func checkAttention(t *testing.T, r *explain.Report) {
	n := len(r.Tokens)
	a := r.Attention
	if len(a.Heads) != r.Model.NHeads || a.Layer != r.Model.NLayers-1 || a.Token != n-1 {
		t.Fatalf("attention: %d heads, layer %d, token %d", len(a.Heads), a.Layer, a.Token)
	}
	if !slices.EqualFunc(a.Weights, a.Heads[a.Head], slices.Equal) {
		t.Error("weights are not the chosen head's matrix")
	}
	for h, m := range a.Heads {
		if len(m) != n {
			t.Fatalf("head %d: %d rows", h, len(m))
		}
		for i, row := range m {
			var s float64
			for j, w := range row {
				if j > i && w != 0 {
					t.Fatalf("head %d: weight[%d][%d] = %g above the diagonal", h, i, j, w)
				}
				if w < 0 {
					t.Fatalf("head %d: negative weight", h)
				}
				s += float64(w)
			}
			if math.Abs(s-1) > 1e-5 {
				t.Errorf("head %d row %d sums to %.8f", h, i, s)
			}
		}
	}
	if len(r.Residual) != r.Model.NLayers+1 {
		t.Errorf("%d residual norms, want %d", len(r.Residual), r.Model.NLayers+1)
	}
}

func checkKV(t *testing.T, e *engine.Engine, r *explain.Report) {
	c := e.Info()
	per := int64(2 * c.NLayers * c.NKVHeads * c.HeadDim * 2) // K and V, F16
	k := r.KVCache
	if k.DType != "f16" || k.BytesPerToken != per || k.BytesAtCtx != per*256 || k.CtxLen != 256 {
		t.Errorf("kv_cache %+v, want f16, %d bytes per token, %d at 256", k, per, per*256)
	}
	ci := e.Cache()
	if want := ci.Bytes / int64(ci.Blocks*ci.BlockSize); want != per {
		t.Errorf("the cache itself takes %d bytes per token, formula %d", want, per)
	}
}

func checkWeights(t *testing.T, e *engine.Engine, r *explain.Report) {
	var sum, file int64
	for _, c := range r.Weights.Components {
		sum += c.Bytes
	}
	f, err := gguf.Open(e.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, ti := range f.Tensors {
		file += int64(ti.Size)
	}
	if sum != r.Weights.TotalBytes || sum != file {
		t.Errorf("components sum to %d, total %d, file tensors %d", sum, r.Weights.TotalBytes, file)
	}
}

func checkCost(t *testing.T, r *explain.Report) {
	c := r.Cost
	if c.Prefill.Tokens != len(r.Tokens) || c.Prefill.Seconds <= 0 || c.Prefill.FLOPs <= 0 || c.Prefill.Bytes <= 0 {
		t.Errorf("prefill %+v", c.Prefill)
	}
	// Decode FLOPs per token: 2 per weight of every matrix but the
	// embedding table (plus the head) plus attention; bytes at least the
	// weights read per token.
	if c.Decode.Tokens != 3 || c.Decode.FLOPsPerToken < 2*float64(r.Model.Params-int64(r.Model.NVocab*r.Model.Dim))*0.95 {
		t.Errorf("decode %+v for %d params", c.Decode, r.Model.Params)
	}
	if c.Decode.Bound == "" || c.Decode.RoofTokS <= 0 || len(r.Sampling.Generated) != 3 {
		t.Errorf("decode %+v, generated %v", c.Decode, r.Sampling.Generated)
	}
}

// TestJSON checks the keys the JSON output promises.
func TestJSON(t *testing.T) {
	r := tinyReport(t)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"model.architecture", "model.n_layers", "model.dim", "model.n_heads", "model.n_kv_heads", "model.head_dim",
		"model.ffn_dim", "model.n_vocab", "model.ctx_len", "model.rope_theta",
		"attention.layer", "attention.head", "attention.weights",
		"kv_cache.dtype", "kv_cache.bytes_per_token", "kv_cache.bytes_at_ctx",
		"cost.prefill.tokens", "cost.prefill.seconds", "cost.prefill.flops", "cost.prefill.bytes",
		"cost.decode.tokens", "cost.decode.seconds", "cost.decode.flops_per_token", "cost.decode.bytes_per_token",
		"cost.machine.bandwidth_gbs", "cost.machine.peak_gflops",
	} {
		var v any = m
		for _, k := range strings.Split(path, ".") {
			v = v.(map[string]any)[k]
		}
		if v == nil {
			t.Errorf("JSON lacks %s", path)
		}
	}
	toks := m["tokens"].([]any)
	if first := toks[0].(map[string]any); first["id"] == nil || first["piece"] == nil {
		t.Errorf("token entry %v", first)
	}
	next := m["next"].([]any)[0].(map[string]any)
	for _, k := range []string{"id", "piece", "logit", "prob"} {
		if next[k] == nil {
			t.Errorf("next entry lacks %s", k)
		}
	}
	w := m["attention"].(map[string]any)["weights"].([]any)
	if len(w) != len(toks) || len(w[0].([]any)) != len(toks) {
		t.Errorf("weights is %d×?, want %d×%d", len(w), len(toks), len(toks))
	}
}

// TestText checks the terminal rendering has every section and the bars.
func TestText(t *testing.T) {
	r := tinyReport(t)
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"1. Tokens", "2. Embeddings and positions", "3. Transformer blocks", "4. Next token",
		"5. KV cache", "6. Cost", "7. Where the bytes are", "[BOS]", "GQA", "causal", "| #", "roofline", "θ =", "cpu: Test CPU: AVX2\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("text output lacks %q", want)
		}
	}
}

func tinyReport(t *testing.T) *explain.Report {
	t.Helper()
	ref := refByFile(t, "real-TinyStories-656K-Q8_0-p1.jsonl")
	e, err := engine.Load(ref.ModelPath(t), engine.Options{Threads: 2, CtxLen: 128})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := explain.Run(e, explain.Options{Prompt: "Once upon a time, there was a little", Steps: 4, Temp: 0.8, Seed: 1, Machine: fixedMachine})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOptionsRejected(t *testing.T) {
	ref := refByFile(t, "real-TinyStories-656K-Q8_0-p1.jsonl")
	e, err := engine.Load(ref.ModelPath(t), engine.Options{Threads: 1, CtxLen: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, o := range []explain.Options{
		{Prompt: "hi", Layer: 99},
		{Prompt: "hi", Head: -99},
		{Prompt: "hi", Token: 50},
		{Prompt: "hi", Steps: 100},
		{Prompt: "hi", Temp: -1},
		{Prompt: strings.Repeat("once upon a time ", 10)},
	} {
		if _, err := explain.Run(e, explain.Options{Prompt: o.Prompt, Layer: o.Layer, Head: o.Head, Token: o.Token, Steps: o.Steps, Temp: o.Temp, Machine: fixedMachine}); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestMeasure(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates 264 MiB")
	}
	m := explain.Measure(1)
	if m.BandwidthGBs <= 0 || m.PeakGFLOPS <= 0 || m.Method == "" {
		t.Fatalf("%+v", m)
	}
}

// TestFamilies: the report describes each family as it is: GPT-2's learned
// positions and LayerNorm, Mixtral's experts with the chosen token's
// routing in every layer (weights summing to 1), Gemma 2's post-norms,
// soft-capping and sliding window.
func TestFamilies(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"synth-gpt2-124m-Q8_0-s1.jsonl", []string{"positions: learned", "LayerNorm(x)", "LayerNorm with bias", "GELU MLP", "MHA"}},
		{"synth-mixtral-mini-Q8_0-s1.jsonl", []string{"mixture of experts: 8 experts", "2 per token", "experts chosen for token", "layer  7:"}},
		{"synth-gemma2-mini-Q8_0-s1.jsonl", []string{"GeGLU", "post-norms", "50·tanh(s/50)", "30·tanh(l/30)", "sliding-window attention on every 2 layers", "√dim"}},
		{"synth-phi3-mini-shape-Q8_0-s1.jsonl", []string{"RoPE"}}, // llama.cpp runs Phi-3 without its sliding window (src/models/phi3.cpp)
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			ref := refByFile(t, c.file)
			if ref.Large() && testing.Short() {
				t.Skip("large synthetic model: run without -short")
			}
			e, err := engine.Load(ref.ModelPath(t), engine.Options{Threads: 2, CtxLen: 64})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			r, err := explain.Run(e, explain.Options{Prompt: "The capital of France", Layer: -1, Token: -1, Machine: fixedMachine})
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("text lacks %q", w)
				}
			}
			if x := r.Blocks.Experts; x != nil {
				if len(x.Chosen) != e.Info().NLayers {
					t.Fatalf("routing of %d layers", len(x.Chosen))
				}
				for _, l := range x.Chosen {
					var s float32
					for _, w := range l.Weights {
						s += w
					}
					if len(l.Experts) != x.Used || s < 0.999 || s > 1.001 {
						t.Errorf("layer %d: experts %v weights %v", l.Layer, l.Experts, l.Weights)
					}
				}
			}
		})
	}
}

// TestSplitPrompt: the observers index the prompt's one forward pass, so an
// engine that evaluates prompts in chunks is refused, naming the option.
func TestSplitPrompt(t *testing.T) {
	ref := refByFile(t, "real-TinyStories-656K-Q8_0-p1.jsonl")
	e, err := engine.Load(ref.ModelPath(t), engine.Options{Threads: 1, CtxLen: 64, StepTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = explain.Run(e, explain.Options{Prompt: "Once upon a time, there was a little", Token: -1, Machine: fixedMachine})
	if err == nil || !strings.Contains(err.Error(), "StepTokens") {
		t.Errorf("a prompt in chunks of 4: %v", err)
	}
}

// TestHybridState: for a hybrid model (qwen35-mini: gated delta nets on 6
// of 8 layers) the report counts K/V for the 2 attention layers only,
// gives the recurrent layers' state per sequence as the engine's pool
// holds it, shows an attention layer's weights when asked for a recurrent
// one, and grows the cache far slower with context than the same shape
// with attention everywhere.
func TestHybridState(t *testing.T) {
	path := testmodels.Synth(t, "-model", "qwen35-mini", "-type", "Q8_0", "-seed", "1")
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := explain.Run(e, explain.Options{Prompt: "The capital of France is", Layer: 0, Steps: 2, Seed: 1, Machine: fixedMachine})
	if err != nil {
		t.Fatal(err)
	}
	k := r.KVCache
	// 2 attention layers × K,V × 1 head of 256 × F16; 6 delta nets of
	// (4−1)·512 conv values + 4 heads × 64×64, F32.
	if want := int64(2 * 2 * 256 * 2); k.BytesPerToken != want {
		t.Errorf("K/V per token %d, want %d (attention layers only)", k.BytesPerToken, want)
	}
	if want := int64(6 * 4 * (3*512 + 4*64*64)); k.StateLayers != 6 || k.StateBytes != want || k.StateBytes != e.Cache().StateBytes {
		t.Errorf("%d recurrent layers with %d state bytes per sequence, want 6 and %d (the pool's %d)", k.StateLayers, k.StateBytes, want, e.Cache().StateBytes)
	}
	if len(r.Attention.Weights) == 0 || r.Attention.Layer != 3 {
		t.Errorf("asked for recurrent layer 0: shown layer %d with %d rows of weights, want layer 3's", r.Attention.Layer, len(r.Attention.Weights))
	}
	if len(k.Growth) == 0 {
		t.Fatal("no context growth for a hybrid model")
	}
	for _, g := range k.Growth {
		if g.Ctx >= 4096 && (g.Bytes*3 > g.AttnOnlyBytes || g.FLOPs >= g.AttnOnlyFLOPs) {
			t.Errorf("at %d tokens: %d cache bytes and %.3g FLOPs against %d and %.3g with attention everywhere", g.Ctx, g.Bytes, g.FLOPs, g.AttnOnlyBytes, g.AttnOnlyFLOPs)
		}
	}
}
