package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loom-inference/loom/internal/testmodels"
)

// TestServeGracefulShutdown: SIGTERM lets an in-flight stream finish
// ([DONE]), then loom serve exits 0 and stops listening. The grace period
// is long (--shutdown-timeout 5m) so the property holds on a loaded
// machine, where 300 tokens can take more than the default 30 s.
func TestServeGracefulShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the smollm2-135m synthgguf file: run without -short")
	}
	m := testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1")
	cmd := loomCmd("serve", "-m", m, "--port", "0", "-t", "2", "--ctx-size", "1024", "--shutdown-timeout", "5m")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	addr := ""
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
		if strings.Contains(sc.Text(), "ready") {
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	if addr == "" {
		t.Fatal("no listening line")
	}
	resp, err := http.Post(addr+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":"Once","max_tokens":300,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	r.ReadString('\n') // the stream has started
	cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(r)
	if !strings.HasSuffix(strings.TrimSpace(string(rest)), "data: [DONE]") || strings.Count(string(rest), `"text"`) < 250 {
		t.Errorf("the in-flight stream did not finish: %d chunks, ends %q", strings.Count(string(rest), `"text"`), tail(string(rest)))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("loom serve did not exit after SIGTERM")
	}
	if _, err := http.Get(addr + "/health"); err == nil {
		t.Error("still listening after shutdown")
	}
}

func tail(s string) string {
	if len(s) > 80 {
		return s[len(s)-80:]
	}
	return s
}

// TestServeModelsDir: loom serve --models-dir starts with nothing loaded
// and lists the directory's models (and the pull cache's) as unloaded; a
// request loads the one it names.
func TestServeModelsDir(t *testing.T) {
	src := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
	dir, hubDir := t.TempDir(), t.TempDir()
	for _, p := range []string{filepath.Join(dir, "one.gguf"), filepath.Join(dir, "sub", "two.gguf"), filepath.Join(hubDir, "owner", "repo", "pulled-Q8_0.gguf")} {
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, err := os.ReadFile(src) // a copy each: links to one file are one model
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := loomCmd("serve", "--models-dir", dir, "--port", "0", "-t", "2", "--ctx-size", "256", "--models-max", "1", "--keep-alive", "10m")
	cmd.Env = append(os.Environ(), "LOOM_HUB_CACHE="+hubDir)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	addr, log := "", ""
	for sc.Scan() {
		log += sc.Text() + "\n"
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
		if strings.Contains(sc.Text(), "ready") {
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	if addr == "" || !strings.Contains(log, "3 model(s) on demand") || !strings.Contains(log, "at most 1 loaded at once") {
		t.Fatalf("loom serve --models-dir:\n%s", log)
	}
	list := func() map[string]string {
		resp, err := http.Get(addr + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l struct {
			Data []struct{ ID, Status string }
		}
		json.NewDecoder(resp.Body).Decode(&l)
		out := map[string]string{}
		for _, e := range l.Data {
			out[e.ID] = e.Status
		}
		return out
	}
	if got := list(); len(got) != 3 || got["one"] != "unloaded" || got["two"] != "unloaded" || got["pulled-Q8_0"] != "unloaded" {
		t.Fatalf("/v1/models at start: %v", got)
	}
	for _, id := range []string{"two", "sub/two", "owner/repo/pulled-Q8_0"} { // an id, or the path under its directory
		resp, err := http.Post(addr+"/v1/completions", "application/json", strings.NewReader(`{"model":"`+id+`","prompt":"Once","max_tokens":2}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s %s", id, resp.Status, b)
		}
	}
	if got := list(); got["pulled-Q8_0"] != "loaded" || got["two"] != "unloaded" || got["one"] != "unloaded" {
		t.Errorf("/v1/models after requests (--models-max 1): %v", got)
	}
}

// TestServeOnDemandFlags: the on-demand flags' values are checked.
func TestServeOnDemandFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--models-dir", dir, "--keep-alive", "soon"}, "--keep-alive"},
		{[]string{"--models-dir", dir, "--models-max", "-2"}, "--models-max"},
		{[]string{"--models-dir", dir, "--load-timeout", "0s"}, "--load-timeout"},
		{[]string{"--models-dir", filepath.Join(dir, "absent"), "--port", "0"}, "models directory"},
		{[]string{"--models-max", "1", "a.gguf", "b.gguf"}, "--models-max 1: 2 models"},
		{[]string{"--models-dir", dir, "--alias", "x"}, "--alias"},
	} {
		_, stderr, err := loom(t, append([]string{"serve"}, c.args...)...)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("loom serve %v: %v, stderr %q (want %q)", c.args, err, stderr, c.want)
		}
	}
}
