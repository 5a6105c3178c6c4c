package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-inference/loom/internal/testmodels"
)

// TestPullRunListRm: `loom pull` against a local server that answers like
// the Hub, then `-m OWNER/REPO:QUANT` loads from the cache (and pulls on
// first use), `loom list` shows the file, `loom rm` removes it.
func TestPullRunListRm(t *testing.T) {
	model, err := os.ReadFile(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(model)
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/models/acme/tiny-GGUF":
			json.NewEncoder(w).Encode(map[string]any{"siblings": []map[string]any{
				{"rfilename": "tiny-Q8_0.gguf", "lfs": map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(model)}}}})
		case "/acme/tiny-GGUF/resolve/main/tiny-Q8_0.gguf":
			http.ServeContent(w, r, "tiny-Q8_0.gguf", time.Time{}, bytes.NewReader(model))
		default:
			http.NotFound(w, r)
		}
	}))
	defer hubSrv.Close()
	env := append(os.Environ(), "HF_ENDPOINT="+hubSrv.URL, "LOOM_HUB_CACHE="+t.TempDir())
	run := func(args ...string) (string, error) {
		cmd := exec.Command(loomBin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// -m pulls on first use, then loads from the cache.
	for i := range 2 {
		out, err := run("run", "-m", "acme/tiny-GGUF:Q8_0", "-p", "Once upon a time", "-n", "5", "--temp", "0")
		if err != nil || !strings.Contains(out, "generated: 5 tokens") {
			t.Fatalf("run -m acme/tiny-GGUF:Q8_0 (%d): %v\n%s", i, err, out)
		}
		if pulled := strings.Contains(out, "pulling"); pulled != (i == 0) {
			t.Errorf("run %d: pulled %v\n%s", i, pulled, out)
		}
	}
	if out, err := run("pull", "acme/tiny-GGUF"); err != nil || !strings.Contains(out, "tiny-Q8_0.gguf") {
		t.Errorf("pull: %v\n%s", err, out)
	}
	if out, err := run("list"); err != nil || !strings.Contains(out, "acme/tiny-GGUF/tiny-Q8_0.gguf") || !strings.Contains(out, "Q8_0") || !strings.Contains(out, "llama") {
		t.Errorf("list: %v\n%s", err, out)
	}
	if out, err := run("pull", "acme/missing"); err == nil || !strings.Contains(out, "not found") {
		t.Errorf("pull of a missing repository: %v\n%s", err, out)
	}
	if out, err := run("rm", "acme/tiny-GGUF:Q8_0"); err != nil || !strings.Contains(out, "removed") {
		t.Errorf("rm: %v\n%s", err, out)
	}
	if out, _ := run("list"); strings.Contains(out, "tiny-Q8_0") {
		t.Errorf("still listed after rm:\n%s", out)
	}
}
