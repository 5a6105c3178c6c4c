package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loom-inference/loom/internal/machine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// loomIn runs loom with stdin and a time limit (a command that ignored its
// arguments could otherwise serve forever).
func loomIn(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, loomBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Stdin = strings.NewReader(stdin)
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("loom %v: still running after 2 minutes", args)
	}
	return out.String(), errb.String(), err
}

// TestPositionals: every command takes its positional arguments (model,
// prompt, text, files) with flags before, between or after them, "--"
// ends the flags, and an argument a command does not take is an error
// naming it — never ignored. Each case is compared with the flag form.
func TestPositionals(t *testing.T) {
	shared := testmodels.Shared(t)
	m := filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	s := filepath.Join(shared, "models", "stories260K", "stories260K.gguf")
	tmp := t.TempDir()
	ctxJSON := filepath.Join(tmp, "ctx.json")
	os.WriteFile(ctxJSON, []byte(`{"messages":[{"role":"user","content":"hi"}]}`), 0o644)
	tmpl := filepath.Join(tmp, "t.jinja")
	os.WriteFile(tmpl, []byte(`{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}`), 0o644)
	gen := []string{"-n", "8", "--temp", "0", "-t", "1"}
	cat := func(a ...[]string) []string {
		var out []string
		for _, x := range a {
			out = append(out, x...)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		args  []string
		same  []string // the same stdout as these arguments
		want  string   // stdout contains
		stdin string
	}{
		{name: "run PROMPT", args: cat([]string{"run", "Once upon a time"}, gen), same: cat([]string{"run", "-p", "Once upon a time"}, gen)},
		{name: "run PROMPT words", args: cat([]string{"run"}, gen, []string{"Once", "upon", "a", "time"}), same: cat([]string{"run", "-p", "Once upon a time"}, gen)},
		{name: "run MODEL PROMPT", args: cat([]string{"run", s, "Once upon a time"}, gen), same: cat([]string{"run", "-m", s, "-p", "Once upon a time"}, gen)},
		{name: "run MODEL -p", args: cat([]string{"run", s}, gen, []string{"-p", "Once upon a time"}), same: cat([]string{"run", "-m", s, "-p", "Once upon a time"}, gen)},
		{name: "run -m PROMPT", args: cat([]string{"run", "Once upon a time", "-m", s}, gen), same: cat([]string{"run", "-m", s, "-p", "Once upon a time"}, gen)},
		{name: "run -- PROMPT", args: cat([]string{"run", "-m", s}, gen, []string{"--", "-n", "x"}), same: cat([]string{"run", "-m", s, "-p", "-n x"}, gen)},
		{name: "tokenize -m TEXT", args: []string{"tokenize", "-m", s, "Once upon a time"}, want: "1 403 407 261 378\n"},
		{name: "tokenize TEXT -m", args: []string{"tokenize", "Once upon a time", "-m", s, "--no-bos"}, want: "403 407 261 378\n"},
		{name: "tokenize MODEL TEXT", args: []string{"tokenize", s, "Once", "upon", "a", "time"}, want: "1 403 407 261 378\n"},
		{name: "logits MODEL PROMPT", args: []string{"logits", s, "Once upon a time", "--top", "2", "-t", "1"}, same: []string{"logits", "-m", s, "-p", "Once upon a time", "--top", "2", "-t", "1"}},
		{name: "explain MODEL PROMPT", args: []string{"explain", s, "The dragon said", "--json", "--temp", "0", "--steps", "1", "-t", "1"}, want: `"prompt": "The dragon said"`},
		{name: "explain PROMPT", args: []string{"explain", "The", "dragon", "said", "--steps", "1", "-t", "1"}, want: "The dragon said"},
		{name: "bench MODEL", args: []string{"bench", s, "-p", "8", "-n", "4", "-r", "1", "-t", "1"}, want: "pp8"},
		{name: "bench lists", args: []string{"bench", s, "-p", "8,16", "-n", "0,4", "-r", "1", "-t", "1"}, want: "| 1 | 8 | 0 | "},
		{name: "bench lists repeated", args: []string{"bench", s, "-p", "8", "-p", "16", "-n", "4", "-r", "1", "-t", "1"}, want: "| 1 | 16 | 4 | "},
		{name: "chat MODEL", args: []string{"chat", s, "-n", "4", "--temp", "0", "-t", "1"}, stdin: "/stats\n", want: "0 messages"},
		{name: "inspect FILE", args: []string{"inspect", s}, want: "HYPERPARAMETERS"},
		{name: "template CTX --template", args: []string{"template", ctxJSON, "--template", tmpl}, want: "<user>hi"},
	} {
		out, stderr, err := loomIn(t, c.stdin, c.args...)
		if err != nil {
			t.Errorf("%s: loom %q: %v\n%s", c.name, c.args, err, stderr)
			continue
		}
		if c.want != "" && !strings.Contains(out, c.want) {
			t.Errorf("%s: loom %q printed %q, want %q", c.name, c.args, out, c.want)
		}
		if c.same != nil {
			want, stderr, err := loomIn(t, "", c.same...)
			if err != nil || out != want {
				t.Errorf("%s: loom %q printed %q; loom %q printed %q (%v %s)", c.name, c.args, out, c.same, want, err, stderr)
			}
		}
	}
	// Arguments a command does not take fail, naming the argument.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "-m", s, "-p", "Once", "upon"}, `"upon"`},
		{[]string{"run", s, "-f", ctxJSON, "extra"}, `"extra"`},
		{[]string{"tokenize", "-m", s, "-p", "a", "b"}, `"b"`},
		{[]string{"tokenize", "-m", s, "-p", "a", "-f", ctxJSON}, "-f"},
		{[]string{"tokenize", "Once"}, "Once"},
		{[]string{"logits", "-m", s, "--ids", "1 2", "x"}, `"x"`},
		{[]string{"chat", s, "extra"}, `"extra"`},
		{[]string{"chat", s, "-m", s}, "model"},
		{[]string{"bench", s, "extra"}, `"extra"`},
		{[]string{"inspect", s, "extra"}, `"extra"`},
		{[]string{"list", "extra"}, `"extra"`},
		{[]string{"rm", "a/b", "c/d"}, `"c/d"`},
		{[]string{"pull", "a/b", "c/d"}, `"c/d"`},
		{[]string{"health", "extra"}, `"extra"`},
		{[]string{"version", "extra"}, `"extra"`},
		{[]string{"template", ctxJSON, "extra", "--template", tmpl}, `"extra"`},
		{[]string{"grammar", "check", "extra", "--grammar", tmpl}, `"extra"`},
		{[]string{"grammar", "from-schema", ctxJSON, "extra"}, `"extra"`},
		{[]string{"quantize", m, filepath.Join(tmp, "x.gguf"), "Q4_0", "extra"}, `"extra"`},
		{[]string{"convert", tmp, filepath.Join(tmp, "x.gguf"), "extra"}, `"extra"`},
		{[]string{"serve", s, "--port", "0", "--alias", "a", "--alias", "b"}, "--alias"},
		{[]string{"help", "run", "extra"}, `"extra"`},
		{[]string{"run", "--no-such-flag"}, "no-such-flag"},
	} {
		_, stderr, err := loomIn(t, "", c.args...)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("loom %q: %v, stderr %q; want a failure naming %s", c.args, err, stderr, c.want)
		}
	}
}

// TestServePositional: `loom serve MODEL --port P` serves MODEL on P (the
// flags after the model were once ignored: the embedded model on 8080).
func TestServePositional(t *testing.T) {
	s := filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.gguf")
	addr, names, stop := startServe(t, s, "--port", "0", "-t", "1", "--parallel", "2")
	defer stop()
	if strings.HasSuffix(addr, ":8080") || len(names) != 1 || names[0] != "stories260K" {
		t.Fatalf("serve %s --port 0: %s, models %v", s, addr, names)
	}
}

// TestServeAliases: --alias names the -m models in order; two models with
// the same id are refused at start.
func TestServeAliases(t *testing.T) {
	shared := testmodels.Shared(t)
	s := filepath.Join(shared, "models", "stories260K", "stories260K.gguf")
	m := filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	a, b := filepath.Join(t.TempDir(), "model.gguf"), filepath.Join(t.TempDir(), "model.gguf")
	os.Symlink(s, a)
	os.Symlink(m, b)
	_, stderr, err := loomIn(t, "", "serve", "-m", a, "-m", b, "--port", "0")
	if err == nil || !strings.Contains(stderr, `"model"`) || !strings.Contains(stderr, "--alias") || strings.Contains(stderr, "listening") {
		t.Errorf("two models named model: %v\n%s", err, stderr)
	}
	_, stderr, err = loomIn(t, "", "serve", "-m", a, "--alias", "x", "-m", b, "--alias", "x", "--port", "0")
	if err == nil || !strings.Contains(stderr, `"x"`) {
		t.Errorf("two aliases x: %v\n%s", err, stderr)
	}
	addr, names, stop := startServe(t, "-m", a, "--alias", "small", "-m", b, "--alias", "tiny", "--port", "0", "-t", "1", "--parallel", "2")
	defer stop()
	if strings.Join(names, ",") != "small,tiny" {
		t.Fatalf("%s serves %v, want small,tiny", addr, names)
	}
}

// startServe starts loom serve, waits until it is ready and returns its
// address and the ids /v1/models lists.
func startServe(t *testing.T, args ...string) (string, []string, func()) {
	t.Helper()
	cmd := loomCmd(append([]string{"serve"}, args...)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { cmd.Process.Kill(); cmd.Wait() }
	timer := time.AfterFunc(2*time.Minute, stop)
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
	timer.Stop()
	go io.Copy(io.Discard, stderr)
	if addr == "" || !strings.Contains(log, "ready") {
		stop()
		t.Fatalf("loom serve %q did not start:\n%s", args, log)
	}
	resp, err := http.Get(addr + "/v1/models")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	var names []string
	for _, d := range list.Data {
		names = append(names, d.ID)
	}
	return addr, names, stop
}

// TestQuantizeRequantize: like llama-quantize, converting a tensor that is
// already quantized (not F32, F16 or BF16) is refused unless
// --allow-requantize; a tensor kept in its type is no requantization.
func TestQuantizeRequantize(t *testing.T) {
	q8 := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	out := filepath.Join(t.TempDir(), "q4.gguf")
	_, stderr, err := loomIn(t, "", "quantize", q8, out, "Q4_0", "-q")
	if err == nil || !strings.Contains(stderr, "Q8_0") || !strings.Contains(stderr, "--allow-requantize") {
		t.Errorf("Q8_0 → Q4_0: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused quantize left its output")
	}
	if _, stderr, err := loomIn(t, "", "quantize", q8, out, "Q4_0", "--allow-requantize", "-q"); err != nil {
		t.Errorf("--allow-requantize: %v\n%s", err, stderr)
	}
	if _, stderr, err := loomIn(t, "", "quantize", q8, filepath.Join(t.TempDir(), "q8.gguf"), "Q8_0", "-q"); err != nil {
		t.Errorf("Q8_0 → Q8_0 (every tensor kept): %v\n%s", err, stderr)
	}
}

// TestContextAndKV: a context beyond the trained one is warned about; a KV
// cache that cannot hold one full context is refused at start, naming
// --kv-size; bench --parallel's default KV cache holds every sequence
// (no preemption).
func TestContextAndKV(t *testing.T) {
	m := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	_, stderr, err := loomIn(t, "", "run", "-m", m, "-c", "1024", "-n", "1", "-p", "Once", "-t", "1")
	if err != nil || !strings.Contains(stderr, "warning") || !strings.Contains(stderr, "512") {
		t.Errorf("-c 1024 on a 512-token model: %v\n%s", err, stderr)
	}
	_, stderr, err = loomIn(t, "", "run", "-m", m, "-c", "256", "-n", "1", "-p", "Once", "-t", "1")
	if err != nil || strings.Contains(stderr, "warning") {
		t.Errorf("-c 256: %v\n%s", err, stderr)
	}
	for _, args := range [][]string{
		{"serve", "-m", m, "--kv-size", "1", "--port", "0"},
		{"serve", "-m", m, "--kv-size", "1KiB", "--port", "0"},
		{"serve", "-m", m, "--kv-size", "256", "--ctx-size", "512", "--port", "0"},
		{"bench", "-m", m, "--kv-size", "16", "--parallel", "2", "-p", "64", "-n", "16", "-r", "1"},
	} {
		_, stderr, err := loomIn(t, "", args...)
		if err == nil || !strings.Contains(stderr, "--kv-size") || strings.Contains(stderr, "ready") {
			t.Errorf("loom %q: %v\n%s", args, err, stderr)
		}
	}
	for _, pn := range [][2]string{{"40", "10"}, {"100", "30"}, {"10", "10"}} {
		out, stderr, err := loomIn(t, "", "bench", "-m", m, "--parallel", "4", "-p", pn[0], "-n", pn[1], "-r", "1", "-t", "1")
		if err != nil || !strings.Contains(out, "preempted  0") || !strings.Contains(out, "\ncpu        ") {
			t.Errorf("bench --parallel 4 -p %s -n %s: %v\n%s%s", pn[0], pn[1], err, out, stderr)
		}
	}
}

// TestParseArgs: the shared parser takes flags anywhere, keeps the
// positional arguments in order, reads a value flag's next argument as its
// value whatever it looks like, and stops reading flags at "--".
func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  string // joined with |
		n    int
		chat bool
		p    string
		err  string
	}{
		{args: []string{"m.gguf", "-n", "12", "The", "dragon"}, pos: "m.gguf|The|dragon", n: 12},
		{args: []string{"-n=3", "--chat", "x"}, pos: "x", n: 3, chat: true},
		{args: []string{"--chat=false", "x", "--n", "4"}, pos: "x", n: 4},
		{args: []string{"-p", "-n", "a"}, pos: "a", p: "-n"},
		{args: []string{"-p", "--", "a"}, pos: "a", p: "--"},
		{args: []string{"a", "--", "-n", "5", "--chat"}, pos: "a|-n|5|--chat"},
		{args: []string{"-", "b"}, pos: "-|b"},
		{args: []string{"a", "-n"}, err: "flag needs an argument"},
		{args: []string{"a", "--nope", "b"}, err: "--nope"},
		{args: []string{"-n", "x"}, err: "invalid value"},
	} {
		fs := newFlags("run")
		n := fs.Int("n", 0, "")
		chat := fs.Bool("chat", false, "")
		p := fs.String("p", "", "")
		pos, err := parseArgs(fs, c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want an error with %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(pos, "|") != c.pos || *n != c.n || *chat != c.chat || *p != c.p {
			t.Errorf("%q: pos %q n %d chat %v p %q err %v; want %q %d %v %q", c.args, pos, *n, *chat, *p, err, c.pos, c.n, c.chat, c.p)
		}
	}
}

// TestBenchLists: loom bench takes lists of -p, -n and -t as llama-bench
// does and measures every combination: a table row each, or a JSON line
// each with --json naming its values.
func TestBenchLists(t *testing.T) {
	s := filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.gguf")
	out, stderr, err := loomIn(t, "", "bench", s, "-p", "8,16", "-n", "0,4", "-t", "1,2", "-r", "1", "--json")
	if err != nil {
		t.Fatalf("loom bench lists --json: %v\n%s", err, stderr)
	}
	var got [][3]int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Threads, P, N int
			Prefill       float64 `json:"prefill_tok_s"`
			Decode        float64 `json:"decode_tok_s"`
			CPU           string  `json:"cpu"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if r.Prefill <= 0 || (r.N > 0) != (r.Decode > 0) {
			t.Errorf("line %q: want a prefill rate, and a decode rate exactly when -n > 0", line)
		}
		if !sameCPU(r.CPU) {
			t.Errorf("line %q: cpu %q, want %q", line, r.CPU, machine.CPU())
		}
		got = append(got, [3]int{r.Threads, r.P, r.N})
	}
	want := [][3]int{{1, 8, 0}, {1, 8, 4}, {1, 16, 0}, {1, 16, 4}, {2, 8, 0}, {2, 8, 4}, {2, 16, 0}, {2, 16, 4}}
	if len(got) != len(want) {
		t.Fatalf("combinations %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("combinations %v, want %v", got, want)
		}
	}
	out, stderr, err = loomIn(t, "", "bench", s, "-p", "8", "-n", "0,4", "-t", "1", "-r", "1")
	if err != nil || !strings.Contains(out, "| 1 | 8 | 0 | ") || !strings.Contains(out, "| 1 | 8 | 4 | ") || !strings.Contains(out, "kernels ") {
		t.Errorf("loom bench lists: %v\n%s%s", err, out, stderr)
	}
}
