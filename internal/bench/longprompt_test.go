package bench

import (
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestLongPrompt: the measurement runs its clients, submits the long
// prompt once per repetition and reports gaps from both phases, the
// prompt computed whole and in chunks (several steps) without
// preemption; it refuses an engine that cannot run the streams and the
// long prompt together.
func TestLongPrompt(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 512, Parallel: 3, StepTokens: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The streams' requests outlast a prefill (400 tokens against its
	// 10 steps or more), so every stream has gaps to measure during it.
	o := LongPromptOptions{Streams: 2, StreamPrompt: 8, StreamTokens: 400, LongPrompt: 300, Alone: 8, Reps: 2}
	r, err := LongPrompt(e, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Runs) != 2 || r.AloneP50ms <= 0 || r.DuringP99ms <= 0 || r.PrefillTokS <= 0 || r.Ratio <= 0 || r.Preemptions != 0 {
		t.Fatalf("%+v", r)
	}
	for i, x := range r.Runs {
		// 300 tokens in chunks of at most 32 − 2 decoding: 10 steps or more.
		if x.Computed != o.LongPrompt || x.AloneGaps < o.Streams*o.Alone || x.DuringGaps == 0 || x.Steps < 10 {
			t.Errorf("run %d: %+v", i, x)
		}
	}
	t.Logf("%+v", r)
	o.Streams = 3
	if _, err := LongPrompt(e, o); err == nil {
		t.Error("3 streams and a long prompt on an engine loaded for 3 sequences: no error")
	}
}
