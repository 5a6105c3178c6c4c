package main

import (
	"encoding/csv"
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

// TestTemplateShared: `loom template` prints every shared/chat render byte
// for byte and fails (exit ≠ 0, a message) on every error case.
func TestTemplateShared(t *testing.T) {
	shared := testmodels.Shared(t)
	f, err := os.Open(filepath.Join(shared, "chat", "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rd := csv.NewReader(f)
	rd.Comma, rd.LazyQuotes = '\t', true
	rows, err := rd.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows[1:] {
		out, stderr, err := loom(t, "template", "--template", filepath.Join(shared, row[0]), filepath.Join(shared, "chat", row[1]))
		name := filepath.Base(row[1])
		if row[3] == "error" {
			if err == nil || stderr == "" {
				t.Errorf("%s: exit %v, stderr %q; want a failure with a message", name, err, stderr)
			}
			continue
		}
		want, _ := os.ReadFile(filepath.Join(shared, "chat", row[2]))
		if err != nil || out != string(want) {
			t.Errorf("%s: %v %s\n got %q\nwant %q", name, err, stderr, out, want)
		}
	}
}

// TestChatScripted drives `loom chat` through stdin: multi-turn replies,
// the cache reused across turns (the second turn computes only what the
// first did not), /reset and /stats.
func TestChatScripted(t *testing.T) {
	shared := testmodels.Shared(t)
	models := []string{filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")}
	if !testing.Short() {
		models = append(models, testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1"))
	}
	stats := regexp.MustCompile(`last turn: (\d+) prompt tokens computed, (\d+) reused`)
	for _, m := range models {
		cmd := loomCmd("chat", "-m", m, "-n", "8", "--temp", "0", "-t", "2", "--system", "You tell short stories.")
		cmd.Stdin = strings.NewReader("Tell me about a cat.\n/stats\nAnd a dog?\n/stats\n/reset\n/stats\nHi\n/bye\nnever read\n")
		outb, err := cmd.CombinedOutput()
		out := string(outb)
		if err != nil {
			t.Fatalf("%s: %v\n%s", m, err, out)
		}
		st := stats.FindAllStringSubmatch(out, -1)
		if len(st) != 3 {
			t.Fatalf("%s: want 3 /stats lines:\n%s", filepath.Base(m), out)
		}
		c1, _ := strconv.Atoi(st[0][1])
		c2, _ := strconv.Atoi(st[1][1])
		r2, _ := strconv.Atoi(st[1][2])
		if r2 < c1-1 || c2 >= c1+r2 {
			t.Errorf("%s: turn 1 computed %d; turn 2 computed %d and reused %d (want the first turn's prompt reused)", filepath.Base(m), c1, c2, r2)
		}
		if !strings.Contains(out, "[conversation reset]") || strings.Contains(out, "never read") {
			t.Errorf("%s: /reset or /bye not handled:\n%s", filepath.Base(m), out)
		}
		t.Logf("%s: turn 1 computed %d, turn 2 computed %d and reused %d", filepath.Base(m), c1, c2, r2)
	}
}

// TestChatTerminal: `loom chat` on a pseudo-terminal (line editing):
// a reply streams, Ctrl-C stops a long reply without ending the program,
// Ctrl-D exits.
func TestChatTerminal(t *testing.T) {
	testChatTerminal(t)
}

func loomCmd(args ...string) *exec.Cmd { return exec.Command(loomBin, args...) }

func testChatTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the smollm2-135m synthgguf file: run without -short")
	}
	m := testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1")
	cmd := loomCmd("chat", "-m", m, "-n", "3000", "-t", "2", "-c", "4096")
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
	waitFor := func(what string, count int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			mu.Lock()
			s := screen.String()
			mu.Unlock()
			if strings.Count(s, what) >= count {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("waiting for %d× %q; screen:\n%s", count, what, screen.String())
	}
	waitFor(">>> ", 1)
	tty.Write([]byte("Tell me everything.\r"))
	time.Sleep(1500 * time.Millisecond) // the reply is streaming
	tty.Write([]byte{3})                // Ctrl-C
	waitFor("[stopped]", 1)
	waitFor(">>> ", 2)
	tty.Write([]byte("/stats\r"))
	waitFor("2 messages", 1)
	tty.Write([]byte{4}) // Ctrl-D
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("Ctrl-D did not end loom chat")
	}
}

// TestChatThinkCommand: /think on|off sets the template's enable_thinking
// for the next turns (SmolLM3's template lays the prompt out differently,
// so the first turn's prompt differs in length); /think hide|show folds
// the printed reasoning; an unknown argument says what is accepted.
func TestChatThinkCommand(t *testing.T) {
	m := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
	tmpl := filepath.Join("..", "..", "chat", "testdata", "modern", "templates", "HuggingFaceTB-SmolLM3-3B.jinja")
	stats := regexp.MustCompile(`last turn: (\d+) prompt tokens computed`)
	prompt := func(script string) (int, string) {
		t.Helper()
		cmd := loomCmd("chat", "-m", m, "--chat-template", tmpl, "-n", "2", "--temp", "0", "-t", "1")
		cmd.Stdin = strings.NewReader(script)
		outb, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, outb)
		}
		st := stats.FindStringSubmatch(string(outb))
		if st == nil {
			t.Fatalf("no /stats line:\n%s", outb)
		}
		n, _ := strconv.Atoi(st[1])
		return n, string(outb)
	}
	on, outOn := prompt("/think on\nHi\n/stats\n")
	off, outOff := prompt("/think off\n/think hide\n/think maybe\nHi\n/stats\n")
	if on == off {
		t.Errorf("the prompt has %d tokens with thinking on and off", on)
	}
	for _, want := range []string{"[thinking off]", "[reasoning hidden]", "[/think on|off|auto, or /think hide|show]"} {
		if !strings.Contains(outOff, want) {
			t.Errorf("missing %q:\n%s", want, outOff)
		}
	}
	if !strings.Contains(outOn, "[thinking on]") {
		t.Errorf("missing [thinking on]:\n%s", outOn)
	}
}
