package engine_test

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
)

// TestPublicAPI: go doc of the engine shows no internal package's type.
func TestPublicAPI(t *testing.T) {
	out, err := exec.Command("go", "doc", "-all", "github.com/loom-inference/loom/engine").CombinedOutput()
	if err != nil {
		t.Fatalf("go doc: %v\n%s", err, out)
	}
	internal := regexp.MustCompile(`\b(model|kvcache|kernels|hfmodel|quantize|llama2c|parallel|nn|quant|tensor|mmap|libm)\.[A-Z]\w*`)
	for i, line := range strings.Split(string(out), "\n") {
		if m := internal.FindString(line); m != "" {
			t.Errorf("line %d names an internal type %s: %s", i+1, m, strings.TrimSpace(line))
		}
	}
}

// TestLayering: the tools on top of the engine (explain and the CLI) reach
// the model only through it.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`,
		"github.com/loom-inference/loom/cmd/loom", "github.com/loom-inference/loom/explain", "github.com/loom-inference/loom/server").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := regexp.MustCompile(`loom/internal/(kernels|parallel|model)(/|\s|$)`)
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		for _, imp := range strings.Fields(imports) {
			if forbidden.MatchString(imp + " ") {
				t.Errorf("%s imports %s", pkg, imp)
			}
		}
	}
}

// TestHooksOption: observers given at load see the first forward pass.
func TestHooksOption(t *testing.T) {
	path, err := engine.FindModel(engine.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	layers := 0
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 32, Hooks: &engine.Hooks{Residual: func(int, []float32) { layers++ }}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Logits(t.Context(), e.Tokenize("Once", true, false)); err != nil {
		t.Fatal(err)
	}
	if layers != e.Info().NLayers {
		t.Fatalf("residual hook called %d times, want %d (one per layer)", layers, e.Info().NLayers)
	}
}
