package engine_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// The LoRA recordings of testdata/reference-lora: llama.cpp 2026
// (node-llama-cpp 3.22.1, record-lora.mjs, flash attention off, KV F16)
// on synthgguf's smollm2-135m Q8_0 with loragen adapters; tolerances are
// the shared reference's for that base model (0.397, 0.091), which hold
// llama.cpp's own variation with the adapters (at most 0.334 and 0.085
// over flash attention on/off × KV F16/F32: README.md there).
var loraRefs = []struct {
	file     string
	adapters []string  // loragen sources
	scales   []float32 // each adapter's scale
}{
	{"smollm2-135m-Q8_0-lora-a1.jsonl", []string{loraA1}, []float32{1}},
	{"smollm2-135m-Q8_0-lora-a1x0.5-a2x1.5.jsonl", []string{loraA1, loraA2}, []float32{0.5, 1.5}},
}

const (
	loraBase = "synthgguf -model smollm2-135m -type Q8_0 -seed 1"
	loraA1   = `loragen -rank 8 -alpha 16 -seed 1 -type F32 -targets attn_(q|v)\.weight|ffn_(up|down)\.weight`
	loraA2   = `loragen -rank 16 -alpha 8 -seed 2 -type F16 -targets attn_(k|output)\.weight|ffn_gate\.weight`
)

// TestLoRAReferences: the base model with LoRA adapters agrees with
// llama.cpp with the same adapters at the same scales, by the reference
// rules (prefill rows, decode steps, greedy tokens).
func TestLoRAReferences(t *testing.T) {
	base := testmodels.SynthArgs(t, loraBase)
	var shared testmodels.Ref // the base model's recording: its prompt and tolerances
	for _, r := range testmodels.References(t) {
		if r.File == "synth-smollm2-135m-Q8_0-s1.jsonl" {
			shared = r
		}
	}
	if shared.File == "" {
		t.Fatal("no shared reference for smollm2-135m Q8_0")
	}
	for _, r := range loraRefs {
		t.Run(strings.TrimSuffix(r.file, ".jsonl"), func(t *testing.T) {
			var files []engine.LoRAFile
			for i, src := range r.adapters {
				files = append(files, engine.LoRAFile{Path: testmodels.LoRAModel(t, base, src), Scale: r.scales[i]})
			}
			ref := shared
			ref.File, ref.Path, ref.Model = r.file, filepath.Join("..", "testdata", "reference-lora", r.file), shared.Model+" + LoRA"
			checkModelWith(t, ref, base, true, engine.Options{LoRA: files})
		})
	}
}

// TestLoRAMixedBatch: requests with two adapter sets and none, run
// together (one batch applies each token's adapters), each generate what
// they generate alone; a request's adapter list overrides the defaults;
// the prefix cache never hands one adapter set's blocks to another.
func TestLoRAMixedBatch(t *testing.T) {
	base := testmodels.SynthArgs(t, loraBase)
	a1, a2 := testmodels.LoRAModel(t, base, loraA1), testmodels.LoRAModel(t, base, loraA2)
	e, err := engine.Load(base, engine.Options{Threads: 2, CtxLen: 256, Parallel: 3,
		LoRA: []engine.LoRAFile{{Path: a1, Scale: 1}, {Path: a2, Scale: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if ad := e.Adapters(); len(ad) != 2 || ad[0].Scale != 1 || ad[1].Path != a2 {
		t.Fatalf("adapters %+v", ad)
	}
	ctx := context.Background()
	prompt := "The capital of France is Paris. The capital of Germany is"
	sets := []struct {
		name string
		lora []engine.LoRAScale
	}{
		{"default (a1)", nil},
		{"none", []engine.LoRAScale{}},
		{"a1x0.5+a2x1.5", []engine.LoRAScale{{ID: 0, Scale: 0.5}, {ID: 1, Scale: 1.5}}},
	}
	gen := func(l []engine.LoRAScale) []int32 {
		st, err := e.Submit(ctx, engine.Request{Prompt: prompt, MaxTokens: 12, IgnoreEOS: true, Sample: sample.Params{Temp: 0}, LoRA: l})
		if err != nil {
			t.Fatal(err)
		}
		_, toks, _ := st[0].Collect()
		return toks
	}
	alone := make([][]int32, len(sets))
	for i, s := range sets {
		e.DropCached()
		alone[i] = gen(s.lora)
	}
	if slices.Equal(alone[0], alone[1]) || slices.Equal(alone[1], alone[2]) || slices.Equal(alone[0], alone[2]) {
		t.Fatalf("adapters change nothing: %v", alone)
	}
	for round := range 2 { // round 1 runs with every prefix cached
		got := make([][]int32, len(sets))
		var wg sync.WaitGroup
		for i, s := range sets {
			wg.Add(1)
			go func() { defer wg.Done(); got[i] = gen(s.lora) }()
		}
		wg.Wait()
		for i := range sets {
			if !slices.Equal(got[i], alone[i]) {
				t.Errorf("round %d, %s: together %v, alone %v", round, sets[i].name, got[i], alone[i])
			}
		}
	}
	// The scheduler reports which adapters its running requests apply.
	st, err := e.Submit(ctx, engine.Request{Prompt: prompt, MaxTokens: 64, IgnoreEOS: true, LoRA: sets[2].lora})
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for ev := range st[0].Events() {
		if s := e.Stats(); ev.ID >= 0 && slices.Equal(s.RunningAdapters, []int{0, 1}) {
			seen = true
		}
	}
	if !seen {
		t.Errorf("running adapters never [0 1]: %+v", e.Stats())
	}
	if s := e.Stats(); len(s.RunningAdapters) != 0 || len(s.WaitingAdapters) != 0 {
		t.Errorf("adapters still reported after the request: %+v", s)
	}
	if _, err := e.Submit(ctx, engine.Request{Prompt: "x", LoRA: []engine.LoRAScale{{ID: 2, Scale: 1}}}); err == nil || !strings.Contains(err.Error(), "adapter id 2") {
		t.Errorf("unknown adapter: %v", err)
	}
}

// TestLoRARefused: an adapter for another architecture, one whose shapes
// do not fit the model, a model file given as an adapter, and an adapter
// of weights Loom does not adapt are refused, naming the file and the
// reason.
func TestLoRARefused(t *testing.T) {
	base := testmodels.SynthArgs(t, loraBase)
	other := testmodels.SynthArgs(t, "synthgguf -model tiny-test -type Q8_0 -seed 1")
	for _, c := range []struct {
		name, path, want string
	}{
		{"a model, not an adapter", other, `general.type is "model", want "adapter"`},
		{"another model's shapes", testmodels.LoRAModel(t, other, loraA1), "maybe the wrong base model"},
		{"embeddings", testmodels.LoRAModel(t, base, `loragen -rank 4 -alpha 4 -seed 3 -type F32 -targets token_embd`), `adapting "token_embd.weight" is not supported`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := engine.Load(base, engine.Options{Threads: 1, CtxLen: 64, LoRA: []engine.LoRAFile{{Path: c.path, Scale: 1}}})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(c.path)) {
				t.Errorf("error %v, want one naming the file and %q", err, c.want)
			}
		})
	}
}

// TestLoRASetAdapterScales: SetAdapterScales replaces the default scales
// (llama.cpp's POST /lora-adapters: the adapters not listed are off), which
// Adapters reports and every request without its own list applies, while
// a request's list still overrides them; a bad list changes nothing; and
// requests submitted while the defaults change each apply one whole set,
// the one of their submission.
func TestLoRASetAdapterScales(t *testing.T) {
	base := testmodels.SynthArgs(t, loraBase)
	a1, a2 := testmodels.LoRAModel(t, base, loraA1), testmodels.LoRAModel(t, base, loraA2)
	e, err := engine.Load(base, engine.Options{Threads: 2, CtxLen: 128, Parallel: 4,
		LoRA: []engine.LoRAFile{{Path: a1, Scale: 1}, {Path: a2, Scale: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	gen := func(l []engine.LoRAScale) []int32 {
		t.Helper()
		st, err := e.Submit(ctx, engine.Request{Prompt: "The capital of France is", MaxTokens: 8, IgnoreEOS: true, Sample: sample.Params{Temp: 0}, LoRA: l})
		if err != nil {
			t.Fatal(err)
		}
		_, toks, _ := st[0].Collect()
		return toks
	}
	scales := func() []float32 {
		var out []float32
		for _, a := range e.Adapters() {
			out = append(out, a.Scale)
		}
		return out
	}
	a1Only, both, none := []engine.LoRAScale{{ID: 0, Scale: 1}}, []engine.LoRAScale{{ID: 0, Scale: 0.5}, {ID: 1, Scale: 1.5}}, []engine.LoRAScale{}
	first, mixed, off := gen(a1Only), gen(both), gen(none)
	if slices.Equal(first, mixed) || slices.Equal(first, off) || slices.Equal(mixed, off) {
		t.Fatalf("adapters change nothing: %v %v %v", first, mixed, off)
	}
	if got := gen(nil); !slices.Equal(got, first) {
		t.Errorf("the loaded defaults: %v, want a1's %v", got, first)
	}
	if err := e.SetAdapterScales([]engine.LoRAScale{{ID: 1, Scale: 1.5}, {ID: 0, Scale: 0.5}}); err != nil {
		t.Fatal(err)
	}
	if got := scales(); !slices.Equal(got, []float32{0.5, 1.5}) {
		t.Errorf("Adapters after the set: scales %v", got)
	}
	if got := gen(nil); !slices.Equal(got, mixed) {
		t.Errorf("new defaults: %v, want %v", got, mixed)
	}
	if got := gen(a1Only); !slices.Equal(got, first) {
		t.Errorf("a request's own list over the new defaults: %v, want %v", got, first)
	}
	if err := e.SetAdapterScales([]engine.LoRAScale{{ID: 1, Scale: 0.25}}); err != nil {
		t.Fatal(err)
	}
	if got := scales(); !slices.Equal(got, []float32{0, 0.25}) {
		t.Errorf("an adapter not listed is off: scales %v", got)
	}
	if err := e.SetAdapterScales(nil); err != nil {
		t.Fatal(err)
	}
	if got := gen(nil); !slices.Equal(got, off) {
		t.Errorf("all off: %v, want the base model's %v", got, off)
	}
	for _, bad := range [][]engine.LoRAScale{
		{{ID: 2, Scale: 1}}, {{ID: -1, Scale: 1}}, {{ID: 0, Scale: 1}, {ID: 0, Scale: 2}},
		{{ID: 0, Scale: float32(math.NaN())}}, {{ID: 1, Scale: float32(math.Inf(1))}}, {{ID: 0, Scale: 1}, {ID: 1, Scale: float32(math.Inf(-1))}},
	} {
		if err := e.SetAdapterScales(bad); err == nil || !strings.Contains(err.Error(), "LoRA adapter") {
			t.Errorf("%v: error %v", bad, err)
		}
	}
	if got := scales(); !slices.Equal(got, []float32{0, 0}) {
		t.Errorf("a refused list changed the scales: %v", got)
	}
	// Requests while the defaults flip between two sets (a1 alone and
	// none: batching either gives each request its solo output): each
	// applies the set it was submitted with, whole.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			set := a1Only
			if i%2 == 1 {
				set = none
			}
			if err := e.SetAdapterScales(set); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	results := make([][]int32, 6)
	var reqs sync.WaitGroup
	for i := range results {
		reqs.Add(1)
		go func() { defer reqs.Done(); results[i] = gen(nil) }()
	}
	reqs.Wait()
	close(stop)
	wg.Wait()
	for i, got := range results {
		if !slices.Equal(got, first) && !slices.Equal(got, off) {
			t.Errorf("request %d while the defaults change: %v, want a1's %v or the base model's %v", i, got, first, off)
		}
	}
	// An engine without adapters takes only the empty list.
	plain, err := engine.Load(base, engine.Options{Threads: 1, CtxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.SetAdapterScales(nil); err != nil || len(plain.Adapters()) != 0 {
		t.Errorf("no adapters, empty list: %v", err)
	}
	if err := plain.SetAdapterScales([]engine.LoRAScale{{ID: 0, Scale: 1}}); err == nil {
		t.Error("no adapters: id 0 accepted")
	}
}
