package engine_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// qwen35Mini loads the Qwen3.5 hybrid preset (gated delta nets on 6 of 8
// layers): Q8_0, whose rows multiply in the same order alone or batched,
// so batched and alone runs agree token for token, sampled ones too.
func qwen35Mini(t *testing.T, o engine.Options) *engine.Engine {
	t.Helper()
	path := testmodels.Synth(t, "-model", "qwen35-mini", "-type", "Q8_0", "-seed", "1")
	if o.Threads == 0 {
		o.Threads = 2
	}
	e, err := engine.Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// checkStatesFree: no block and no live state slot is held once every
// request has ended (checkpoints may stay, evictable).
func checkStatesFree(t *testing.T, e *engine.Engine) {
	t.Helper()
	ci := e.Cache()
	if ci.Used != 0 || ci.StateFree != ci.StateSlots {
		t.Errorf("after every request ended: %d blocks held, %d of %d state slots free or evictable", ci.Used, ci.StateFree, ci.StateSlots)
	}
}

// TestHybridScheduler: a model with recurrent layers through the
// scheduler. Each sequence's state lives in the pool beside its KV blocks:
// 16 concurrent requests (prompt chunks and decode tokens of others in the
// same steps) produce what each produces alone; under a KV budget far
// below their needs, preempted sequences are recomputed exactly; forks (N
// > 1) copy the state; cancellation returns everything.
func TestHybridScheduler(t *testing.T) {
	t.Run("concurrent", func(t *testing.T) {
		e := qwen35Mini(t, engine.Options{CtxLen: 256, Parallel: 16, StepTokens: 48})
		reqs := testRequests(e, 16)
		got := submitAll(t, e, reqs)
		for i, r := range reqs {
			if want := alone(t, e, r); !slices.Equal(got[i], want) {
				t.Errorf("request %d (%d prompt tokens, temp %v): batched %v\nalone %v", i, len(r.Tokens), r.Sample.Temp, got[i], want)
			}
		}
		checkStatesFree(t, e)
	})
	t.Run("preemption", func(t *testing.T) {
		e := qwen35Mini(t, engine.Options{CtxLen: 256, KVTokens: 256, Parallel: 8, StepTokens: 64})
		reqs := testRequests(e, 8)
		for i := range reqs {
			reqs[i].MaxTokens, reqs[i].IgnoreEOS = 60+10*i, true
		}
		got := submitAll(t, e, reqs)
		for i, r := range reqs {
			if want := alone(t, e, r); !slices.Equal(got[i], want) {
				t.Errorf("request %d: with preemption %v\nalone %v", i, got[i], want)
			}
		}
		st := e.Stats()
		t.Logf("%d preemptions, %d steps", st.Preemptions, st.Steps)
		if st.Preemptions == 0 {
			t.Error("no preemption: the budget does not exercise it")
		}
		checkStatesFree(t, e)
	})
	t.Run("forks", func(t *testing.T) {
		e := qwen35Mini(t, engine.Options{CtxLen: 256, Parallel: 4})
		req := engine.Request{Tokens: e.Tokenize("Tom had a red ball. He threw it and", true, false), MaxTokens: 30,
			Sample: sample.Params{Temp: 1, Seed: 7}, N: 3}
		st, err := e.Submit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for i, stream := range st {
			_, ids, _ := stream.Collect()
			one := req
			one.N, one.Sample.Seed = 1, req.Sample.Seed+uint64(i)
			if want := alone(t, e, one); !slices.Equal(ids, want) {
				t.Errorf("choice %d: %v, alone %v", i, ids, want)
			}
		}
		checkStatesFree(t, e)
	})
	t.Run("cancel", func(t *testing.T) {
		e := qwen35Mini(t, engine.Options{CtxLen: 256, Parallel: 4, KVTokens: 8 * 256})
		var wg sync.WaitGroup
		for i, r := range testRequests(e, 12) {
			r.MaxTokens, r.IgnoreEOS = 120, true
			ctx, cancel := context.WithCancel(context.Background())
			st, err := e.Submit(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cancel()
				for n := 0; ; n++ {
					if _, ok := st[0].Next(); !ok {
						break
					}
					if i%2 == 0 && n == i {
						cancel()
					}
				}
				res := st[0].Result()
				if want := map[bool]string{true: "cancelled", false: "length"}[i%2 == 0]; res.FinishReason != want {
					t.Errorf("request %d finished %q, want %q", i, res.FinishReason, want)
				}
			}()
		}
		wg.Wait()
		checkStatesFree(t, e)
	})
	t.Run("no speculation", func(t *testing.T) {
		e := qwen35Mini(t, engine.Options{CtxLen: 256})
		_, err := e.Submit(context.Background(), engine.Request{Tokens: e.Tokenize("Once", true, false), MaxTokens: 4, Spec: engine.SpecParams{Mode: engine.SpecNgram}})
		if err == nil {
			t.Error("speculative decoding accepted for a model with recurrent layers")
		}
	})
}

// TestHybridPrefixReuse: a recurrent state cannot be cut back, so reuse
// resumes at the deepest cached block with a checkpoint of it. A request
// sharing a 512-token prefix (its prompt's chunks end on block boundaries
// there) computes only its own suffix; the second turn of a chat resumes
// at the first turn's latest checkpoint, whether its sequence was kept or
// freed (a server's next request); each output is what it is without
// reuse.
func TestHybridPrefixReuse(t *testing.T) {
	e := qwen35Mini(t, engine.Options{CtxLen: 1024, Parallel: 2, StepTokens: 256})
	var prefix []int32
	for len(prefix) < 512 {
		prefix = append(prefix, e.Tokenize(" The capital of France is Paris. The capital of Italy is Rome.", false, false)...)
	}
	prefix = prefix[:512]
	run := func(r engine.Request) ([]int32, engine.Result) {
		t.Helper()
		st, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		_, ids, res := st[0].Collect()
		if want := alone(t, e, r); !slices.Equal(ids, want) {
			t.Errorf("with reuse %v, without %v", ids, want)
		}
		t.Logf("prompt %d tokens: %d cached, %d computed; %d checkpoints", res.PromptTokens, res.CachedTokens, res.Computed, e.Cache().Checkpoints)
		return ids, res
	}
	first := engine.Request{Tokens: append(slices.Clone(prefix), e.Tokenize(" And Spain's is", false, false)...), MaxTokens: 8}
	if _, res := run(first); res.CachedTokens != 0 {
		t.Errorf("first request reused %d tokens of an empty cache", res.CachedTokens)
	}
	tail := e.Tokenize(" Germany's capital is", false, false)
	second := engine.Request{Tokens: append(slices.Clone(prefix), tail...), MaxTokens: 8}
	if _, res := run(second); res.CachedTokens != 512 || res.Computed != len(tail) {
		t.Errorf("a request sharing the 512-token prefix reused %d and computed %d, want 512 and %d", res.CachedTokens, res.Computed, len(tail))
	}

	// A chat: the next turn's prompt is the history, then a new message.
	one := append(slices.Clone(prefix[:300]), e.Tokenize(" Tell me more.", false, false)...)
	ids1, _ := run(engine.Request{Tokens: one, MaxTokens: 70, IgnoreEOS: true})
	msg := e.Tokenize(" And then?", false, false)
	two := append(append(slices.Clone(one), ids1...), msg...)
	// The first turn's sequence freed: its latest checkpoint (a block
	// boundary its generation crossed) is where the second resumes.
	_, res := run(engine.Request{Tokens: two, MaxTokens: 20})
	if most := len(msg) + 32; res.Computed > most {
		t.Errorf("second turn computed %d of %d prompt tokens, want at most %d (new ones and the tokens after the last checkpoint)", res.Computed, res.PromptTokens, most)
	}
	// A kept sequence continues its own state.
	q := e.NewSequence()
	turn := func(toks []int32, n int) ([]int32, engine.Result) {
		st, err := e.Submit(context.Background(), engine.Request{Tokens: toks, MaxTokens: n, IgnoreEOS: true, Sequence: q})
		if err != nil {
			t.Fatal(err)
		}
		_, ids, res := st[0].Collect()
		if want := alone(t, e, engine.Request{Tokens: toks, MaxTokens: n, IgnoreEOS: true}); !slices.Equal(ids, want) {
			t.Errorf("kept sequence %v, alone %v", ids, want)
		}
		return ids, res
	}
	other := append(e.Tokenize("Once upon a time", true, false), prefix[:100]...)
	a, _ := turn(other, 40)
	next := append(append(slices.Clone(other), a...), msg...)
	if _, res := turn(next, 10); res.Computed > len(msg)+1 {
		t.Errorf("kept sequence's second turn computed %d prompt tokens, want at most %d", res.Computed, len(msg)+1)
	}
	q.Close()
	checkStatesFree(t, e)
}

// TestHybridFamilies: every recurrent mixer through the scheduler — LFM2's
// short convolutions, Granite 4.0-H's Mamba-2 layers, and the Qwen3.5 MoE
// and Qwen3-Next gated delta nets: 8 concurrent requests (prompt
// chunks of 24 tokens beside others' decode tokens) equal their alone
// runs, and a
// request sharing a 256-token prefix computes only its own tokens and
// gives what it gives without reuse; nothing stays held.
func TestHybridFamilies(t *testing.T) {
	for _, preset := range []string{"lfm2-mini", "granitehybrid-mini", "qwen35moe-mini", "qwen3next-mini"} {
		t.Run(preset, func(t *testing.T) {
			// The MoE presets' routers are F32 products, whose batched
			// order (llama.cpp's tinyBLAS) rounds differently from the
			// one-token order, enough to flip a near-tie between experts
			// (as in llama.cpp): constant routers tie every expert, so
			// each token takes experts 0 and 1 whatever the rounding and
			// a batched run must equal its alone run bit for bit.
			src := "modelgen -model " + preset + " -type Q8_0 -seed 1"
			if preset != "lfm2-mini" {
				src += " -fill blk.*.ffn_gate_inp.weight=0.01"
			}
			path := testmodels.Modern(t, src)
			e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 512, Parallel: 8, StepTokens: 24})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			reqs := testRequests(e, 8) // greedy and sampled
			for i := range reqs {
				reqs[i].MaxTokens += 16
			}
			got := submitAll(t, e, reqs)
			for i, r := range reqs {
				if want := alone(t, e, r); !slices.Equal(got[i], want) {
					t.Errorf("request %d (%d prompt tokens, temp %v): batched %v\nalone %v", i, len(r.Tokens), r.Sample.Temp, got[i], want)
				}
			}
			var prefix []int32
			for len(prefix) < 256 {
				prefix = append(prefix, e.Tokenize(" The capital of France is Paris. The capital of Italy is Rome.", false, false)...)
			}
			prefix = prefix[:256]
			for i, tail := range []string{" And Spain's is", " Germany's capital is"} {
				toks := append(slices.Clone(prefix), e.Tokenize(tail, false, false)...)
				r := engine.Request{Tokens: toks, MaxTokens: 8}
				st, err := e.Submit(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				_, ids, res := st[0].Collect()
				if want := alone(t, e, r); !slices.Equal(ids, want) {
					t.Errorf("request %d with reuse %v, without %v", i, ids, want)
				}
				if i == 1 && (res.CachedTokens != 256 || res.Computed != len(toks)-256) {
					t.Errorf("a request sharing the 256-token prefix reused %d and computed %d of %d, want 256 and %d", res.CachedTokens, res.Computed, len(toks), len(toks)-256)
				}
			}
			checkStatesFree(t, e)
		})
	}
}

// TestHybridCacheUsage: a hybrid model's cache usage counts the states
// its sequences hold beside their blocks: a kept sequence holds one state
// slot, whose bytes the usage includes; once closed, nothing.
func TestHybridCacheUsage(t *testing.T) {
	e := qwen35Mini(t, engine.Options{CtxLen: 256, Parallel: 2})
	q := e.NewSequence()
	st, err := e.Submit(context.Background(), engine.Request{Tokens: e.Tokenize("Once upon a time", true, false), MaxTokens: 4, Sequence: q})
	if err != nil {
		t.Fatal(err)
	}
	st[0].Collect()
	ci, s := e.Cache(), e.Stats()
	kv := float64(ci.Bytes - ci.StateBytes*int64(ci.StateSlots))
	blocksOnly := kv * float64(ci.Used) / float64(ci.Blocks) / float64(ci.Bytes)
	if live := ci.StateSlots - ci.StateFree; live != 1 || ci.Used == 0 {
		t.Fatalf("a kept sequence holds %d state slots and %d blocks, want 1 and some", live, ci.Used)
	}
	if want := blocksOnly + float64(ci.StateBytes)/float64(ci.Bytes); math.Abs(s.CacheUsage-want) > 1e-9 {
		t.Errorf("cache usage %.6f, want %.6f (blocks %.6f + one state of %d bytes of %d)", s.CacheUsage, want, blocksOnly, ci.StateBytes, ci.Bytes)
	}
	q.Close()
	if u := e.Stats().CacheUsage; u != 0 {
		t.Errorf("cache usage %.6f with no sequence", u)
	}
}
