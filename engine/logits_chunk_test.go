package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestLogitsAcrossChunks: Logits returns every prompt row when the prompt
// is evaluated in several chunks, beside other requests in the same
// steps: each row equals the row of a one-chunk evaluation (Q8_0 rows
// multiply in the same order however the batch is cut). The last row of
// each inner chunk was once dropped, and the rows after it shifted.
func TestLogitsAcrossChunks(t *testing.T) {
	path := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	whole, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 256, StepTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer whole.Close()
	chunked, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 256, StepTokens: 16, Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer chunked.Close()
	prompts := make([][]int32, 3)
	for i := range prompts {
		for j := range 40 + 25*i {
			prompts[i] = append(prompts[i], int32(1+(j*7+i*13)%400))
		}
	}
	got := make([][][]float32, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() {
			rows, err := chunked.Logits(context.Background(), p)
			if err != nil {
				t.Error(err)
			}
			got[i] = rows
		})
	}
	wg.Wait()
	for i, p := range prompts {
		want, err := whole.Logits(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got[i]) != len(want) {
			t.Fatalf("prompt %d: %d rows, want %d", i, len(got[i]), len(want))
		}
		for pos := range want {
			if !slices.Equal(got[i][pos], want[pos]) {
				t.Errorf("prompt %d (%d tokens) row %d differs from the one-chunk evaluation", i, len(p), pos)
				break
			}
		}
	}
}
