package main

import (
	"bufio"
	"io"
	"net/http"
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
