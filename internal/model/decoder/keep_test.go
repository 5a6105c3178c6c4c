package decoder_test

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestKeepWanted: the last layer's queries, output projection and FFN run
// only for the tokens that want output (Step.KeepWanted), and the rows they
// get are bit for bit the rows the whole ubatch gives — checked against the
// same batches run with an observer, which sees every token and so keeps
// them all; with flash attention too (the tiled path attends for every
// token, then cuts). Each
// family that calls KeepWanted is here (Llama-style pre-norm with Q8_0, F16
// and F32 weights and experts; Gemma 2's post-norms; Granite; GPT-2; Gemma
// 4's per-layer inputs, moved with their rows; hybrid recurrent layers),
// with the logits wanted for the last token only (one row: the products
// must keep the batch's order, Workspace.BatchOrder), for a few tokens in
// the middle, for none (then the next token's decode reads the cache the
// cut ubatch wrote), and for every token (nothing to cut).
func TestKeepWanted(t *testing.T) {
	shared := func(rel ...string) func(t *testing.T) string {
		return func(t *testing.T) string {
			return filepath.Join(append([]string{testmodels.Shared(t), "models"}, rel...)...)
		}
	}
	synth := func(src string) func(t *testing.T) string {
		return func(t *testing.T) string { return testmodels.SynthArgs(t, src) }
	}
	modern := func(src string) func(t *testing.T) string {
		return func(t *testing.T) string { return testmodels.Modern(t, src) }
	}
	for _, c := range []struct {
		name string
		path func(t *testing.T) string
	}{
		{"TinyStories-656K-Q8_0", shared("tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")},
		{"TinyStories-656K-F16", shared("tinystories-656k", "gguf", "TinyStories-656K.f16.gguf")},
		{"stories260K-F32", shared("stories260K", "stories260K.gguf")},
		{"gemma2-mini-F16", synth("synthgguf -model gemma2-mini -type F16 -seed 1")},
		{"granite-mini-Q8_0", synth("synthgguf -model granite-mini -type Q8_0 -seed 1")},
		{"gpt2-124m-F16", synth("synthgguf -model gpt2-124m -type F16 -seed 1")},
		{"gemma4-mini-F16", modern("modelgen -model gemma4-mini -type F16 -seed 1")},
		{"gemma4moe-mini-F16", modern("modelgen -model gemma4moe-mini -type F16 -seed 1")},
		{"qwen35moe-mini-F16", modern("modelgen -model qwen35moe-mini -type F16 -seed 1")},
		{"granitehybrid-mini-F16", modern("modelgen -model granitehybrid-mini -type F16 -seed 1")},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := loadGGUF(t, c.path(t))
			cfg := m.Config()
			prompt := make([]int32, 40)
			for i := range prompt {
				prompt[i] = int32(i*11+3) % int32(cfg.NVocab)
			}
			wants := map[string]func(i int) bool{
				"last":   func(i int) bool { return i == len(prompt)-1 },
				"middle": func(i int) bool { return i == 3 || i == 17 || i == 30 },
				"none":   func(int) bool { return false },
				"every":  func(int) bool { return true },
			}
			for name, want := range wants {
				for _, flash := range []bool{false, true} {
					keepCheck(t, m, prompt, fmt.Sprintf("%s/flash=%v", name, flash), want, flash)
				}
			}
		})
	}
}

// keepCheck runs prompt with the logits want picks, cut and observed, and
// compares the rows.
func keepCheck(t *testing.T, m model.Model, prompt []int32, name string, want func(int) bool, flash bool) {
	t.Helper()
	nv := m.Config().NVocab
	cut, rows := keepRun(t, m, prompt, want, nil, flash)
	all, full := keepRun(t, m, prompt, want, &model.Hooks{Residual: func(int, []float32) {}}, flash)
	nWant := 0
	for i := range prompt {
		if want(i) {
			nWant++
		}
	}
	if wantRows := max(1, nWant); rows != wantRows || full != len(prompt) {
		t.Errorf("%s: the last layer ran %d rows cut and %d observed, want %d and %d", name, rows, full, wantRows, len(prompt))
	}
	if len(cut) != len(all) {
		t.Fatalf("%s: %d logits cut, %d whole", name, len(cut), len(all))
	}
	for k := range cut {
		if math.Float32bits(cut[k]) != math.Float32bits(all[k]) {
			t.Fatalf("%s: logit %d (row %d) = %v with the last layer cut to the wanted rows, %v run for every token", name, k, k/nv, cut[k], all[k])
		}
	}
}

// keepRun evaluates prompt in one ubatch with logits for the tokens want
// picks, then one decode step, on a new runner with hooks h (and flash
// attention: the tiled path, which cuts after attending); it returns
// every logit written and the rows the prompt's last layer ended with.
func keepRun(t *testing.T, m model.Model, prompt []int32, want func(int) bool, h *model.Hooks, flash bool) ([]float32, int) {
	t.Helper()
	c := m.Config()
	r := m.NewRunner(model.RunnerOptions{Threads: 2, MaxCtx: 128, FlashAttn: flash})
	defer r.Close()
	r.(*decoder.Runner).SetHooks(h)
	pool := newPool(t, c, kvcache.BlocksFor(128), 2)
	seq := pool.NewSeq()
	n := len(prompt)
	b := &model.Batch{Tokens: prompt, Seqs: []*kvcache.Seq{seq}, Logits: make([]bool, n)}
	for i := range n {
		b.Pos = append(b.Pos, int32(i))
		b.Logits[i] = want(i)
	}
	out := make([]float32, (n+1)*c.NVocab)
	got, err := r.Forward(b, out)
	if err != nil {
		t.Fatal(err)
	}
	rows := decoder.StepRows(r.(*decoder.Runner))
	step := &model.Batch{Tokens: []int32{5}, Pos: []int32{int32(n)}, Seqs: []*kvcache.Seq{seq}}
	if _, err := r.Forward(step, out[got*c.NVocab:]); err != nil {
		t.Fatal(fmt.Errorf("decode step: %w", err))
	}
	return out[:(got+1)*c.NVocab], rows
}
