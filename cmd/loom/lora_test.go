package main

import (
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
)

// TestRunLoRA: loom run --lora FILE[:SCALE] applies adapters (the greedy
// text changes, and differs again at another scale); a model file given
// as an adapter, or a missing file, is a clear error.
func TestRunLoRA(t *testing.T) {
	base := testmodels.SynthArgs(t, "synthgguf -model smollm2-135m -type Q8_0 -seed 1")
	a1 := testmodels.LoRAModel(t, base, `loragen -rank 8 -alpha 16 -seed 1 -type F32 -targets attn_(q|v)\.weight|ffn_(up|down)\.weight`)
	run := func(extra ...string) string {
		t.Helper()
		out, stderr, err := loom(t, append([]string{"run", base, "The capital of France is", "-n", "8", "--temp", "0", "-t", "2"}, extra...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, stderr)
		}
		return out
	}
	plain, adapted, half := run(), run("--lora", a1), run("--lora", a1+":0.5")
	if plain == adapted || adapted == half || plain == half {
		t.Errorf("outputs: none %q, a1 %q, a1 at 0.5 %q", plain, adapted, half)
	}
	if zero := run("--lora", a1, "--lora-init-without-apply"); zero != plain {
		t.Errorf("an adapter loaded at scale 0 changed the output: %q, %q", zero, plain)
	}
	for _, c := range []struct{ arg, want string }{
		{base, `general.type is "model", want "adapter"`},
		{"/nonexistent/adapter.gguf", "adapter.gguf"},
	} {
		_, stderr, err := loom(t, "run", base, "hi", "-n", "2", "--lora", c.arg)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("--lora %s: err %v, stderr %q (want %q)", c.arg, err, stderr, c.want)
		}
	}
}
