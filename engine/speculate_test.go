package engine_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
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

// specRun collects every choice's tokens, text and finish for req.
type specOut struct {
	ids    [][]int32
	texts  []string
	finish []string
	res    []engine.Result
}

func runAll(t *testing.T, e *engine.Engine, reqs []engine.Request) []specOut {
	t.Helper()
	out := make([]specOut, len(reqs))
	var streams [][]*engine.Stream
	for _, r := range reqs {
		st, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	for i, sts := range streams {
		for _, st := range sts {
			text, ids, res := st.Collect()
			if res.FinishReason == engine.FinishError {
				t.Fatalf("request %d: %v", i, res.Err)
			}
			out[i].ids = append(out[i].ids, ids)
			out[i].texts = append(out[i].texts, text)
			out[i].finish = append(out[i].finish, res.FinishReason+"/"+res.Detail)
			out[i].res = append(out[i].res, res)
		}
	}
	return out
}

// specRequests are greedy and sampled requests (penalties, logit bias, N
// choices, stop strings, a grammar) over prompts that repeat themselves,
// so n-gram drafts are often right and often wrong.
func specRequests(e *engine.Engine, g *grammar.Grammar) []engine.Request {
	prompts := []string{
		"Once upon a time there was a dog. The dog was big. The dog was",
		"Tom said: I like the red ball. Sue said: I like the red ball. Tom said: I like the",
		"The cat sat on the mat. The cat sat on the mat. The cat",
	}
	var reqs []engine.Request
	for i, p := range prompts {
		reqs = append(reqs,
			engine.Request{Prompt: p, MaxTokens: 40, Sample: sample.Params{Temp: 0}},
			engine.Request{Prompt: p, MaxTokens: 40, N: 2, Sample: sample.Params{Temp: 0.9, TopK: 40, Seed: uint64(7 + i),
				RepeatPenalty: 1.1, LogitBias: map[int32]float32{int32(10 + i): 2}}},
			engine.Request{Prompt: p, MaxTokens: 60, Stop: []string{"."}, Sample: sample.Params{Temp: 0.5, Seed: uint64(3 + i)}},
		)
	}
	if g != nil {
		reqs = append(reqs, engine.Request{Prompt: prompts[0], MaxTokens: 30, Grammar: g, Sample: sample.Params{Temp: 0.7, Seed: 5}})
	}
	return reqs
}

// runOneByOne is runAll one request at a time.
func runOneByOne(t *testing.T, e *engine.Engine, reqs []engine.Request) []specOut {
	var out []specOut
	for _, r := range reqs {
		out = append(out, runAll(t, e, []engine.Request{r})...)
	}
	return out
}

func withSpec(reqs []engine.Request, p engine.SpecParams) []engine.Request {
	out := slices.Clone(reqs)
	for i := range out {
		out[i].Spec = p
	}
	return out
}

// TestSpeculationExact: greedy and sampled output (penalties, logit bias,
// several choices, stop strings, a grammar) is token-identical with and
// without speculation, with n-gram drafts and with a draft model, on
// every kind of weight: each token is the sequence's own draw from rows
// bit-identical to one-token decodes' (TestVerificationRowsBitIdentical).
func TestSpeculationExact(t *testing.T) {
	g, err := grammar.Parse(`root ::= (" " [a-z]+)+ "."`)
	if err != nil {
		t.Fatal(err)
	}
	for name, path := range specModels(t) {
		t.Run(name, func(t *testing.T) {
			// The model drafts for itself: the ceiling of acceptance.
			e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 256, Parallel: 4, DraftModel: path})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			gg := g
			if e.Info().NVocab < 1000 { // stories260K spells few words
				gg = nil
			}
			reqs := specRequests(e, gg)
			run := runAll
			if float := strings.Contains(name, "F16") || strings.Contains(name, "F32"); float {
				// Float weights' products take another order in a batch of
				// several sequences (as llama.cpp's): compare one sequence
				// at a time, where plain decoding is one-token too.
				reqs = slices.DeleteFunc(reqs, func(r engine.Request) bool { return r.N > 1 })
				run = runOneByOne
			}
			modes := []engine.SpecParams{
				{Mode: engine.SpecNgram, Max: 4, Fixed: true},
				{Mode: engine.SpecNgram},
				{Mode: engine.SpecDraft, Max: 6, Fixed: true},
				{Mode: engine.SpecDraft},
			}
			if !strings.Contains(strings.ToLower(name), "stories") {
				// The synthgguf shapes: fewer requests, fixed modes (a
				// model drafting for itself costs a pass per draft).
				reqs = reqs[:3]
				modes = []engine.SpecParams{{Mode: engine.SpecNgram, Max: 4, Fixed: true}, {Mode: engine.SpecDraft, Max: 3, Fixed: true}}
			}
			plain := run(t, e, reqs)
			for _, p := range modes {
				got := run(t, e, withSpec(reqs, p))
				drafted, accepted, greedyDrafted, greedyAccepted := 0, 0, 0, 0
				for i := range reqs {
					for c := range got[i].ids {
						if !slices.Equal(got[i].ids[c], plain[i].ids[c]) || got[i].finish[c] != plain[i].finish[c] || got[i].texts[c] != plain[i].texts[c] {
							t.Fatalf("%+v request %d choice %d:\n spec %v %s\nplain %v %s", p, i, c, got[i].ids[c], got[i].finish[c], plain[i].ids[c], plain[i].finish[c])
						}
						drafted += got[i].res[c].Drafted
						accepted += got[i].res[c].Accepted
						if reqs[i].Sample.Temp == 0 {
							greedyDrafted += got[i].res[c].Drafted
							greedyAccepted += got[i].res[c].Accepted
						}
					}
				}
				t.Logf("%s max %d fixed %v: %d drafted, %d accepted (greedy: %d of %d)", p.Mode, p.Max, p.Fixed, drafted, accepted, greedyAccepted, greedyDrafted)
				if p.Fixed && drafted == 0 {
					t.Errorf("%+v: nothing drafted", p)
				}
				if p.Mode == engine.SpecDraft && p.Fixed && greedyAccepted*10 < greedyDrafted*9 {
					t.Errorf("the model drafting for itself under greedy decoding: %d of %d accepted", greedyAccepted, greedyDrafted)
				}
			}
			if st := e.Stats(); st.KVUsed != 0 {
				t.Errorf("%d KV blocks still held", st.KVUsed)
			}
		})
	}
}

// TestSpeculationRollback: random drafts (some right, most wrong, of
// random lengths) across many concurrent sequences that share prompt
// prefixes, fork into choices and are preempted under a small KV pool:
// every output equals the output without speculation, every block comes
// back, and the prefix cache left behind still serves exact results
// (drafts never wrote into a block another sequence or the cache holds).
func TestSpeculationRollback(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 256, Parallel: 8, KVTokens: 3 * 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	long := " She had a small dog named Max, a red kite and a box of crayons, and every morning she drew the sun, the trees and the birds before breakfast."
	prefixes := []string{
		"Once upon a time there was a little girl named Lily." + long + long,
		"Tom had a big red ball. One day he took it to the beach." + long + long,
	}
	var reqs []engine.Request
	for i := range 16 {
		r := engine.Request{Prompt: prefixes[i%2] + strings.Repeat(" and then", i%5), MaxTokens: 30 + 7*(i%6)}
		switch i % 4 {
		case 1:
			r.Sample = sample.Params{Temp: 0.8, Seed: uint64(i)}
		case 2:
			r.N, r.Sample = 2, sample.Params{Temp: 1, TopK: 20, Seed: uint64(i)}
		case 3:
			r.Stop = []string{"."}
		}
		reqs = append(reqs, r)
	}
	e.DropCached()
	plain := runAll(t, e, reqs)
	e.DropCached()
	// The drafter knows every sequence's true continuation (the plain
	// run's) and proposes it cut and corrupted at a random point: long
	// accepted runs, rejections at every offset, random lengths.
	var full [][]int32
	for i, r := range reqs {
		for c := range plain[i].ids {
			full = append(full, append(e.Tokenize(r.Prompt, true, false), plain[i].ids[c]...))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	engine.SetTestDrafter(e, func(tokens []int32, k int) []int32 {
		var cont []int32
		for _, f := range full {
			if len(f) > len(tokens) && slices.Equal(f[:len(tokens)], tokens) {
				cont = f[len(tokens):]
				break
			}
		}
		n := rng.IntN(k + 1)
		out := make([]int32, 0, n)
		good := rng.IntN(n + 1)
		for i := range n {
			if i < good && i < len(cont) {
				out = append(out, cont[i])
			} else {
				out = append(out, int32(rng.IntN(2048)))
			}
		}
		return out
	})
	spec := runAll(t, e, withSpec(reqs, engine.SpecParams{Mode: engine.SpecNgram, Max: 8, Fixed: true}))
	drafted, accepted := 0, 0
	for i := range reqs {
		for c := range plain[i].ids {
			if !slices.Equal(spec[i].ids[c], plain[i].ids[c]) || spec[i].finish[c] != plain[i].finish[c] {
				t.Fatalf("request %d choice %d:\n spec %v %s\nplain %v %s", i, c, spec[i].ids[c], spec[i].finish[c], plain[i].ids[c], plain[i].finish[c])
			}
			drafted += spec[i].res[c].Drafted
			accepted += spec[i].res[c].Accepted
		}
	}
	st := e.Stats()
	t.Logf("%d drafted, %d accepted; %d preemptions", drafted, accepted, st.Preemptions)
	if drafted == 0 || accepted == 0 || accepted == drafted {
		t.Errorf("%d drafted, %d accepted: the test drafter should be partly right", drafted, accepted)
	}
	if st.KVUsed != 0 {
		t.Errorf("%d KV blocks still held", st.KVUsed)
	}
	// The cache speculation left: the same requests reuse it and agree.
	again := runAll(t, e, reqs)
	cached := 0
	for i := range reqs {
		for c := range plain[i].ids {
			if !slices.Equal(again[i].ids[c], plain[i].ids[c]) {
				t.Fatalf("request %d choice %d from the cache: %v, fresh %v", i, c, again[i].ids[c], plain[i].ids[c])
			}
			cached += again[i].res[c].CachedTokens
		}
	}
	if cached == 0 {
		t.Error("nothing reused from the prefix cache")
	}
	if st := e.Stats(); st.KVUsed != 0 {
		t.Errorf("%d KV blocks still held", st.KVUsed)
	}
}

// TestDraftFollowsPrefill: the draft model's cache follows the target's
// prompt chunk by chunk, so the first drafting step feeds it the one token
// sampled after the prompt, and later steps what the target accepted —
// never the prompt in one pass (which would stall every stream and count
// as drafting cost). Greedy output is unchanged.
func TestDraftFollowsPrefill(t *testing.T) {
	path := specModels(t)["TinyStories-656K-Q8_0"]
	const k = 3
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 512, StepTokens: 32, DraftModel: path})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := e.Tokenize(strings.Repeat("Once upon a time, there was a little girl named Lily. ", 30), true, false)
	if len(prompt) < 8*32 {
		t.Fatalf("prompt of %d tokens: want several chunks of 32", len(prompt))
	}
	out := func(p engine.SpecParams) []int32 {
		st, err := e.Submit(context.Background(), engine.Request{Tokens: prompt, MaxTokens: 24, IgnoreEOS: true, Spec: p})
		if err != nil {
			t.Fatal(err)
		}
		_, ids, _ := st[0].Collect()
		return ids
	}
	plain := out(engine.SpecParams{Mode: engine.SpecOff})
	e.DropCached() // the drafting request prefills its prompt again, chunk by chunk
	spec := out(engine.SpecParams{Mode: engine.SpecDraft, Max: k, Fixed: true})
	if !slices.Equal(spec, plain) {
		t.Fatalf("draft-model speculation changed the output:\n spec %v\nplain %v", spec, plain)
	}
	if st := e.Stats(); st.SpecDrafts == 0 {
		t.Fatal("nothing drafted")
	}
	if c := engine.DraftCatchUp(e); c > k+1 {
		t.Errorf("a drafting step fed the draft model %d tokens (prompt %d): want at most %d, the tokens one step accepts", c, len(prompt), k+1)
	}
	// The same prompt again: the target takes it from the prefix cache,
	// the draft model has none of it. Its cache catches up a step's
	// budget (32 tokens) per step, never the prompt in one pass.
	if again := out(engine.SpecParams{Mode: engine.SpecDraft, Max: k, Fixed: true}); !slices.Equal(again, plain) {
		t.Fatalf("draft-model speculation after a cached prompt changed the output:\n spec %v\nplain %v", again, plain)
	}
	if c := engine.DraftCatchUp(e); c > 32 {
		t.Errorf("after a cached prompt, a step fed the draft model %d tokens: want at most the step budget, 32", c)
	}
}
