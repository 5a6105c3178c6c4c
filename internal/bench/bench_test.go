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
