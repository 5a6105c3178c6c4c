package bench

import (
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestRunAndParallel: both measurements go through the engine's scheduler
// and report positive rates; Parallel refuses more sequences than the
// engine runs together.
func TestRunAndParallel(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 64, Parallel: 2, StepTokens: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := Run(e, 32, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.PrefillTokS <= 0 || r.DecodeTokS <= 0 || len(r.Prefill) != 2 || len(r.Decode) != 2 {
		t.Errorf("run: %+v", r)
	}
	// RunEach calls between after the warm-up and after every run.
	calls := 0
	if r, err := RunEach(e, 32, 8, 3, func() { calls++ }); err != nil || len(r.Decode) != 3 || calls != 4 {
		t.Errorf("RunEach: %+v, %v, between called %d times, want 4", r, err, calls)
	}
	if r, err := Run(e, 32, 0, 1); err != nil || r.PrefillTokS <= 0 || len(r.Decode) != 0 {
		t.Errorf("prefill only: %+v, %v", r, err)
	}
	p, err := Parallel(e, 2, 16, 4, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.PrefillTokS <= 0 || p.DecodeTokS <= 0 || p.PromptTokens != 32 || p.Reused+p.Computed != 32 {
		t.Errorf("parallel: %+v", p)
	}
	if _, err := Parallel(e, 3, 16, 4, 0, 1); err == nil {
		t.Error("3 sequences on an engine loaded for 2: no error")
	}
}

// TestSpeculation: the comparison runs speculation off and on alternately,
// reports both rates, and counts drafts as the engine does; with the model
// drafting for itself at a fixed length every draft is accepted (greedy),
// so a step yields Max+1 tokens, and the output is the same with and
// without. N-gram lookup on a copy-heavy text prompt, one sequence and
// three, drafts too. Modes other than ngram and draft are refused.
func TestSpeculation(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf")
	path := filepath.Join(dir, "TinyStories-656K-Q8_0.gguf")
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 160, Parallel: 3, DraftModel: filepath.Join(dir, "TinyStories-656K-Q4_0.gguf")})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	self, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 96, DraftModel: path})
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	r, err := Speculation(self, SpecOptions{Spec: engine.SpecParams{Mode: engine.SpecDraft, Max: 3, Fixed: true}, NPrompt: 16, NGen: 24, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Off) != 2 || len(r.On) != 2 || r.OffTokS <= 0 || r.SpecTokS <= 0 || r.Speedup <= 0 || !r.Identical || r.Generated != 25 || r.PromptTokens != 16 {
		t.Errorf("self-drafting: %+v", r)
	}
	if r.DraftTokens == 0 || r.Accepted != r.DraftTokens || r.AcceptanceRate != 1 || r.MeanAcceptedLength != 4 || r.TokensPerStep < 3 {
		t.Errorf("self-drafting, 3 drafts a step, all accepted: %+v", r)
	}
	text := "Tom has a red ball. Tom has a red ball. Tom has a red ball. Tom has a red ball. Tom has a red ball. Tom has"
	for _, par := range []int{1, 3} {
		r, err := Speculation(e, SpecOptions{Spec: engine.SpecParams{Mode: engine.SpecNgram, Max: 4, Fixed: true}, Prompt: e.Tokenize(text, true, false), NGen: 16, Reps: 1, Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		if r.Parallel != par || r.DraftTokens == 0 || r.Drafts == 0 || r.Accepted > r.DraftTokens || !r.Identical || r.TokensPerStep < 1 {
			t.Errorf("ngram, %d sequences: %+v", par, r)
		}
	}
	if _, err := Speculation(e, SpecOptions{Spec: engine.SpecParams{Mode: engine.SpecOff}, NPrompt: 8, NGen: 4, Reps: 1}); err == nil {
		t.Error("mode off: no error")
	}
	if _, err := Speculation(e, SpecOptions{Spec: engine.SpecParams{Mode: engine.SpecNgram}, NPrompt: 8, NGen: 4, Reps: 1, Parallel: 4}); err == nil {
		t.Error("4 sequences on an engine loaded for 3: no error")
	}
}
