package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
)

// TestThinkPrinter: reasoning is framed by [Start thinking] and [End
// thinking] lines (as llama-cli prints it), the answer follows on its own
// line; --hide-thinking prints the answer alone.
func TestThinkPrinter(t *testing.T) {
	for _, c := range []struct {
		hide bool
		want string
	}{
		{false, "[Start thinking]\nI'm\nthinking\n[End thinking]\n\nHello"},
		{true, "Hello"},
	} {
		var b bytes.Buffer
		p := newThinkPrinter(&b, c.hide)
		p.reasoning("I'm\n")
		p.reasoning("thinking")
		p.content("Hel")
		p.content("lo")
		p.endThinking()
		if b.String() != c.want {
			t.Errorf("hide %v: %q, want %q", c.hide, b.String(), c.want)
		}
	}
}

// TestRunChatThinking: loom run --chat prints a thinking model's
// reasoning apart from its answer, or hides it (the reply is forced with
// a grammar on a random-weight model laid out by SmolLM3's template);
// --reasoning off reaches the template; the reasoning flags need --chat.
func TestRunChatThinking(t *testing.T) {
	m := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
	dir := t.TempDir()
	g := filepath.Join(dir, "think.gbnf")
	if err := os.WriteFile(g, []byte(`root ::= "<think>\nShort question.\n</think>\nHello there"`), 0o644); err != nil {
		t.Fatal(err)
	}
	tmpl := filepath.Join("..", "..", "chat", "testdata", "modern", "templates", "HuggingFaceTB-SmolLM3-3B.jinja")
	base := []string{"run", "-m", m, "--chat", "--chat-template", tmpl, "--grammar", g, "-n", "64", "-p", "Hi", "-t", "1"}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "[Start thinking]\nShort question.\n[End thinking]\n\nHello there\n"},
		{[]string{"--hide-thinking"}, "Hello there\n"},
		{[]string{"--reasoning", "off", "--hide-thinking"}, "Hello there\n"},
	} {
		out, stderr, err := loom(t, append(base, c.flags...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.flags, err, stderr)
		}
		if out != c.want {
			t.Errorf("%v: %q, want %q", c.flags, out, c.want)
		}
	}
	if _, stderr, err := loom(t, "run", "-m", m, "-p", "Hi", "--hide-thinking"); err == nil || !strings.Contains(stderr, "--chat") {
		t.Errorf("--hide-thinking without --chat: %v %s", err, stderr)
	}
	if _, stderr, err := loom(t, append(base, "--reasoning", "maybe")...); err == nil || !strings.Contains(stderr, "--reasoning") {
		t.Errorf("--reasoning maybe: %v %s", err, stderr)
	}
}
