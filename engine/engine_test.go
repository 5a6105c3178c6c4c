package engine_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

func load(t *testing.T, path string, threads int) *engine.Engine {
	t.Helper()
	e, err := engine.Load(path, engine.Options{Threads: threads, CtxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestRaceThreadsAgree: 1 thread and 3 threads give bit-identical logits
// (work is split by output rows, so every dot product is the same), and
// the multi-threaded path runs under -race.
func TestRaceThreadsAgree(t *testing.T) {
	path := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q4_K_M", "-seed", "1")
	e1, e3 := load(t, path, 1), load(t, path, 3)
	ids := e1.Tokenize("The quick brown fox jumps over the lazy dog", true, false)
	a, err := e1.Logits(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e3.Logits(t.Context(), ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				t.Fatalf("pos %d token %d: %v (1 thread) vs %v (3 threads)", i, j, a[i][j], b[i][j])
			}
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	e := load(t, filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.gguf"), 1)
	long := strings.Repeat("Once upon a time ", 200)
	_, err := e.Generate(context.Background(), engine.Request{Prompt: long}, func(string) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "context") {
		t.Fatalf("oversized prompt: %v", err)
	}
	if _, err := e.Logits(t.Context(), []int32{1, 99999}); err == nil {
		t.Fatal("out-of-vocabulary id accepted")
	}
	stop := errors.New("stop")
	n := 0
	_, err = e.Generate(context.Background(), engine.Request{MaxTokens: 20, Sample: sample.Params{Temp: 0}},
		func(string) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("callback error not propagated: %v after %d calls", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := e.Generate(ctx, engine.Request{MaxTokens: 20}, func(string) error { return nil })
	if err != nil || st.FinishReason != engine.FinishCancelled || st.Generated != 0 {
		t.Fatalf("cancelled: %+v, %v", st, err)
	}
}

func TestSeededGenerate(t *testing.T) {
	e := load(t, filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.gguf"), 2)
	gen := func(seed uint64) string {
		var sb strings.Builder
		_, err := e.Generate(context.Background(), engine.Request{Prompt: "Once", MaxTokens: 40,
			Sample: sample.Params{Temp: 1, TopK: 40, TopP: 0.95, Seed: seed}}, func(s string) error { sb.WriteString(s); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return sb.String()
	}
	if a, b := gen(5), gen(5); a != b {
		t.Fatalf("same seed, different text:\n%q\n%q", a, b)
	}
	if a, b := gen(5), gen(6); a == b {
		t.Fatalf("different seeds, same 40 tokens: %q", a)
	}
}

// TestLearnedPositionsContext: a context longer than GPT-2's position
// table is refused at load, not read out of bounds later.
func TestLearnedPositionsContext(t *testing.T) {
	path := testmodels.Synth(t, "-model", "gpt2-124m", "-type", "Q8_0", "-seed", "1")
	if _, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 2048}); err == nil || !strings.Contains(err.Error(), "1024 positions") {
		t.Fatalf("ctx 2048 on GPT-2: %v", err)
	}
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// TestKernels: every matrix product of the model is accounted for, under
// a named kernel for one token and for a batch.
func TestKernels(t *testing.T) {
	e := load(t, testmodels.Synth(t, "-model", "tiny-test", "-type", "Q4_K_M", "-seed", "1"), 1)
	ks := e.Kernels()
	if len(ks) == 0 {
		t.Fatal("no kernels reported")
	}
	total, types := 0, map[string]bool{}
	for _, k := range ks {
		if k.Decode == "" || k.Prefill == "" || k.Matrices <= 0 || k.Bytes <= 0 {
			t.Errorf("incomplete %+v", k)
		}
		total += k.Matrices
		types[k.Type] = true
		t.Logf("%+v", k)
	}
	// tiny-test: 2 layers × 7 products + the LM head; Q4_K_M mixes types.
	if c := e.Info(); total != 7*c.NLayers+1 || len(types) < 2 {
		t.Errorf("%d matrices of %d types", total, len(types))
	}
}
