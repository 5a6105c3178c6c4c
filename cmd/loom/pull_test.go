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
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

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

// TestPullInterrupt: on a terminal, Ctrl-C during `loom pull` prints its
// message on a line of its own, not after the progress bar, and the bar's
// ETA counts seconds (a download paced at ~4 s shows more than 0s).
func TestPullInterrupt(t *testing.T) {
	model, err := os.ReadFile(filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	hubSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/models/acme/slow-GGUF":
			json.NewEncoder(w).Encode(map[string]any{"siblings": []map[string]any{
				{"rfilename": "slow-Q8_0.gguf", "lfs": map[string]any{"size": len(model)}}}})
		case "/acme/slow-GGUF/resolve/main/slow-Q8_0.gguf":
			w.Header().Set("Content-Length", strconv.Itoa(len(model)))
			step := len(model) / 40
			for i := 0; i < len(model); i += step {
				if _, err := w.Write(model[i:min(i+step, len(model))]); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer hubSrv.Close()
	cmd := loomCmd("pull", "acme/slow-GGUF")
	cmd.Env = append(os.Environ(), "HF_ENDPOINT="+hubSrv.URL, "LOOM_HUB_CACHE="+t.TempDir())
	tty, err := pty.Start(cmd)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var screen strings.Builder
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	read := func() string { mu.Lock(); defer mu.Unlock(); return screen.String() }
	deadline := time.Now().Add(30 * time.Second)
	started := regexp.MustCompile(` [2-7]\d% `) // a quarter or so downloaded
	for !started.MatchString(read()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("loom pull did not stop on Ctrl-C:\n%q", read())
	}
	time.Sleep(100 * time.Millisecond)
	s := read()
	if err == nil {
		t.Errorf("an interrupted pull exited 0:\n%q", s)
	}
	i := strings.Index(s, "loom pull:")
	if i < 0 || !strings.HasSuffix(s[:i], "\n") {
		t.Errorf("the interrupt message does not start a line:\n%q", s)
	}
	if etas := regexp.MustCompile(`ETA ([1-9]\d*s)`).FindAllString(s, -1); len(etas) == 0 {
		t.Errorf("no ETA above 0s during a ~4s download:\n%q", s)
	}
}
