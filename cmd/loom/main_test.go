package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
)

var loomBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "loomcli")
	if err != nil {
		panic(err)
	}
	loomBin = filepath.Join(dir, "loom")
	if out, err := exec.Command("go", "build", "-o", loomBin, ".").CombinedOutput(); err != nil {
		panic(string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func loom(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(loomBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func TestLogitsFormat(t *testing.T) {
	shared := testmodels.Shared(t)
	model := filepath.Join(shared, "models", "stories260K", "stories260K.gguf")
	out, _, err := loom(t, "logits", "-m", model, "-p", "Once upon a time", "-t", "1")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first struct {
		Kind   string  `json:"kind"`
		NVocab int     `json:"n_vocab"`
		Tokens []int32 `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Kind != "prompt" || first.NVocab != 512 {
		t.Fatalf("first line %q: %v", lines[0], err)
	}
	if want := []int32{1, 403, 407, 261, 378}; len(first.Tokens) != len(want) || len(lines) != 1+len(want) {
		t.Fatalf("tokens %v, %d lines", first.Tokens, len(lines))
	}
	// The first tf line agrees with the reference's first line to 1e-4.
	ref, _ := os.ReadFile(filepath.Join(shared, "reference", "real-stories260K-p1.jsonl"))
	refLines := strings.Split(string(ref), "\n")
	var a, b struct {
		Kind string       `json:"kind"`
		LSE  float64      `json:"lse"`
		Top  [][2]float64 `json:"top"`
	}
	json.Unmarshal([]byte(lines[1]), &a)
	json.Unmarshal([]byte(refLines[1]), &b)
	if a.Kind != "tf" || len(a.Top) != 10 || a.Top[0][0] != b.Top[0][0] || a.LSE-b.LSE > 1e-4 || b.LSE-a.LSE > 1e-4 {
		t.Fatalf("tf line %q vs reference %q", lines[1], refLines[1])
	}
	out2, _, err := loom(t, "logits", "-m", model, "--ids", "1 403 407 261 378", "--top", "3")
	if err != nil || strings.Count(out2, "\n") != 6 || !strings.Contains(out2, `"tokens":[1,403,407,261,378]`) {
		t.Fatalf("--ids: %v\n%s", err, out2)
	}
}

func TestTokenize(t *testing.T) {
	model := filepath.Join(testmodels.Shared(t), "models", "stories260K", "stories260K.gguf")
	out, _, err := loom(t, "tokenize", "-m", model, "-p", "Once upon a time")
	if err != nil || strings.TrimSpace(out) != "1 403 407 261 378" {
		t.Fatalf("%q %v", out, err)
	}
	out, _, err = loom(t, "tokenize", "-m", model, "-p", "Once upon a time", "--no-bos")
	if err != nil || strings.TrimSpace(out) != "403 407 261 378" {
		t.Fatalf("--no-bos: %q %v", out, err)
	}
}

func TestInspect(t *testing.T) {
	shared := testmodels.Shared(t)
	out, _, err := loom(t, "inspect", filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"blk.0.attn_q.weight", "Q8_0", "HYPERPARAMETERS", "parameters"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}
	// A truncated file fails with a message naming the problem.
	b, _ := os.ReadFile(filepath.Join(shared, "models", "stories260K", "stories260K.gguf"))
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, b[:5000], 0o644)
	_, stderr, err := loom(t, "inspect", bad)
	if err == nil || !strings.Contains(stderr, "bad.gguf") {
		t.Fatalf("truncated file: err %v, stderr %q", err, stderr)
	}
	// An unsupported architecture is an error too.
	_, stderr, err = loom(t, "inspect", filepath.Join(shared, "models", "vocab", "ggml-vocab-falcon.gguf"))
	if err == nil || !strings.Contains(stderr, "architecture") {
		t.Fatalf("vocab-only falcon file: err %v, stderr %q", err, stderr)
	}
}

func TestRunLlama2C(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "stories260K")
	out, stderr, err := loom(t, "run", "-m", filepath.Join(dir, "stories260K.bin"), "--tokenizer", filepath.Join(dir, "tok512.bin"), "--temp", "0", "-n", "20")
	if err != nil {
		t.Fatal(err, stderr)
	}
	if !strings.HasPrefix(out, "Once upon a time, there was a little girl named Lily.") {
		t.Fatalf("output %q", out)
	}
	if !strings.Contains(stderr, "prompt: 1 tokens") || !strings.Contains(stderr, "generated: 20 tokens") {
		t.Fatalf("stats line %q", stderr)
	}
}

// TestRunEmbeddedModel: with nothing on disk (no shared/, an empty model
// directory and cache) `loom run` uses the model the binary embeds, writing
// it to the cache once.
func TestRunEmbeddedModel(t *testing.T) {
	cache := t.TempDir()
	for range 2 {
		cmd := exec.Command(loomBin, "run", "-p", "Once upon a time", "-n", "8", "--temp", "0")
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "LOOM_MODELS="+t.TempDir(), "XDG_CACHE_HOME="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "generated: 8 tokens") {
			t.Fatalf("run with the embedded model: %v\n%s", err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "loom", "models", "TinyStories-656K-Q8_0.gguf")); err != nil {
		t.Errorf("the embedded model was not cached: %v", err)
	}
	// Another missing model is still a clear error.
	out, err := exec.Command(loomBin, "run", "-m", "no-such.gguf").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no-such.gguf") {
		t.Errorf("missing model: %v\n%s", err, out)
	}
}

// TestTokenizeVocabVectors runs the CLI the way the tokenizer issue states
// it: one .inp string per file, compared with its .out line.
func TestTokenizeVocabVectors(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "vocab")
	for _, name := range []string{"llama-spm", "gpt-2", "bert-bge", "deepseek-coder"} {
		base := filepath.Join(dir, "ggml-vocab-"+name+".gguf")
		inp, _ := os.ReadFile(base + ".inp")
		out, _ := os.ReadFile(base + ".out")
		texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
		want := strings.Split(string(out), "\n")
		for i, text := range texts[:len(texts)-1] {
			f := filepath.Join(t.TempDir(), "in.txt")
			os.WriteFile(f, []byte(text), 0o644)
			got, stderr, err := loom(t, "tokenize", "-m", base, "--no-bos", "--no-parse-special", "-f", f)
			if err != nil {
				t.Fatal(err, stderr)
			}
			if strings.TrimSpace(got) != strings.TrimSpace(want[i]) {
				t.Errorf("%s %q: got %q, want %q", name, text, strings.TrimSpace(got), strings.TrimSpace(want[i]))
			}
		}
	}
}

func TestExplain(t *testing.T) {
	model := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	html := filepath.Join(t.TempDir(), "x.html")
	out, errOut, err := loom(t, "explain", "-m", model, "-p", "Once upon a time", "--layer", "1", "--head", "3", "--steps", "2", "--html", html, "-t", "1")
	if err != nil {
		t.Fatalf("%v: %s", err, errOut)
	}
	for _, want := range []string{"1. Tokens", "layer 1 head 3", "4. Next token", "5. KV cache", "6. Cost", "HTML report: " + html} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") {
		t.Errorf("html: %v", err)
	}
	out, _, err = loom(t, "explain", "-m", model, "-p", "Once upon a time", "--json", "--temp", "0", "-t", "1")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Model struct {
			NLayers int `json:"n_layers"`
		} `json:"model"`
		Tokens []struct {
			ID int32 `json:"id"`
		} `json:"tokens"`
		Next []struct {
			Prob float64 `json:"prob"`
		} `json:"next"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Model.NLayers != 2 || len(r.Tokens) == 0 || len(r.Next) != 10 {
		t.Fatalf("json: %v %+v", err, r)
	}
	if _, _, err := loom(t, "explain", "-m", model, "--layer", "7"); err == nil {
		t.Error("--layer 7 of 2 accepted")
	}
}

// TestHelp: every command's -h (--help, loom help CMD) prints to standard
// output, exit 0, a usage line, a one-line description and its flags;
// `loom version` names the Go version and CPU features.
func TestHelp(t *testing.T) {
	for _, c := range []struct{ name, flag string }{
		{"run", "-temp"}, {"chat", "-system"}, {"serve", "-alias"}, {"bench", "-parallel"}, {"template", "-template"},
		{"logits", "-ids"}, {"inspect", ""}, {"tokenize", "-no-bos"}, {"explain", "-layer"}, {"health", "-url"},
		{"pull", ""}, {"list", ""}, {"rm", ""}, {"grammar", "from-schema"}, {"convert", "-type"},
		{"quantize", "-allow-requantize"}, {"version", ""},
	} {
		head := regexp.MustCompile(`^usage: loom ` + c.name + `\b[^\n]*\n(  +loom [^\n]*\n)*\n[A-Z][^\n]+\n`)
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}} {
			out, stderr, err := loom(t, args...)
			if err != nil || stderr != "" || !head.MatchString(out) || !strings.Contains(out, "flags:") || !strings.Contains(out, c.flag) {
				t.Errorf("loom %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr)
			}
		}
	}
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		out, stderr, err := loom(t, args...)
		if err != nil || stderr != "" || !strings.Contains(out, "loom run") || !strings.Contains(out, "loom help COMMAND") {
			t.Errorf("loom %v: %v\n%s%s", args, err, out, stderr)
		}
	}
	if _, stderr, err := loom(t); err == nil || !strings.Contains(stderr, "loom run") {
		t.Errorf("loom: %v %q", err, stderr)
	}
	if _, stderr, err := loom(t, "help", "nosuch"); err == nil || !strings.Contains(stderr, "nosuch") {
		t.Errorf("loom help nosuch: %v %q", err, stderr)
	}
	out, _, err := loom(t, "version")
	if err != nil || !strings.Contains(out, "go1.") || !strings.Contains(out, "cpu:") {
		t.Errorf("loom version: %v %q", err, out)
	}
}

// TestRejectedFlags: out-of-range values fail before any work, naming the
// flag and its range.
func TestRejectedFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"run", "--temp", "-1"}, "--temp"},
		{[]string{"run", "--top-p", "2"}, "--top-p"},
		{[]string{"run", "--top-p", "0"}, "--top-p"},
		{[]string{"run", "--min-p", "1.5"}, "--min-p"},
		{[]string{"run", "--top-k", "-3"}, "--top-k"},
		{[]string{"run", "--repeat-penalty", "0"}, "--repeat-penalty"},
		{[]string{"run", "--frequency-penalty", "5"}, "--frequency-penalty"},
		{[]string{"run", "--presence-penalty", "-5"}, "--presence-penalty"},
		{[]string{"run", "--repeat-last-n", "-1"}, "--repeat-last-n"},
		{[]string{"run", "-t", "0"}, "-t"},
		{[]string{"run", "-c", "-5"}, "-c"},
		{[]string{"run", "-n", "-2"}, "-n"},
		{[]string{"run", "--stop", ""}, "stop"},
		{[]string{"run", "--logprobs", "21"}, "--logprobs"},
		{[]string{"run", "--logprobs", "-1"}, "--logprobs"},
		{[]string{"run", "--completions", "0"}, "--completions"},
		{[]string{"run", "--completions", "129"}, "--completions"},
		{[]string{"run", "--logit-bias", "7"}, `--logit-bias: want TOKEN=BIAS`},
		{[]string{"run", "--logit-bias", "7=inf"}, "--logit-bias"},
		{[]string{"chat", "--temp", "-1"}, "--temp"},
		{[]string{"serve", "--port", "70000"}, "--port"},
		{[]string{"serve", "--parallel", "0"}, "--parallel"},
		{[]string{"bench", "-m", "x.gguf", "--kv-size", "-3", "--parallel", "2"}, "--kv-size"},
		{[]string{"chat", "--ctx-size", "-1"}, "--ctx-size"},
		{[]string{"serve", "--ctx-size", "-5", "--port", "0"}, "--ctx-size"},
		{[]string{"serve", "-c", "-5", "--port", "0"}, "-c"},
		{[]string{"serve", "-t", "1000", "--port", "0"}, "-t"},
		{[]string{"serve", "-t", "0", "--port", "0"}, "-t"},
		{[]string{"serve", "--max-waiting", "0", "--port", "0"}, "--max-waiting"},
		{[]string{"serve", "--shutdown-timeout", "-1s", "--port", "0"}, "--shutdown-timeout"},
		{[]string{"serve", "--alias", "", "--port", "0"}, "--alias"},
		{[]string{"bench", "-m", "x.gguf", "-t", "0"}, "-t"},
		{[]string{"bench", "-m", "x.gguf", "-p", "-5"}, "-p"},
		{[]string{"bench", "-m", "x.gguf", "-p", "8,x"}, "-p"},
		{[]string{"bench", "-m", "x.gguf", "-p", "8,-5"}, "-p -5"},
		{[]string{"bench", "-m", "x.gguf", "-t", "1,0"}, "-t 0"},
		{[]string{"bench", "-m", "x.gguf", "-p", "8,16", "--parallel", "2"}, "--parallel"},
		{[]string{"bench", "-m", "x.gguf", "-t", "1,2", "--bandwidth"}, "--bandwidth"},
		{[]string{"bench", "-m", "x.gguf", "-n", "-1"}, "-n"},
		{[]string{"bench", "-m", "x.gguf", "-r", "0"}, "-r"},
		{[]string{"bench", "-m", "x.gguf", "--parallel", "-2"}, "--parallel"},
		{[]string{"bench", "-m", "x.gguf", "--parallel", "2", "--bandwidth"}, "--bandwidth"},
		{[]string{"bench", "-m", "x.gguf", "--json", "--bandwidth"}, "--bandwidth"},
		{[]string{"logits", "-m", "x.gguf", "-p", "x", "--top", "-3"}, "--top"},
		{[]string{"logits", "-m", "x.gguf", "-p", "x", "-t", "0"}, "-t"},
		{[]string{"explain", "-t", "0"}, "-t"},
		{[]string{"explain", "--top", "-1"}, "--top"},
		{[]string{"explain", "--top-p", "2"}, "--top-p"},
		{[]string{"explain", "--temp", "-1"}, "--temp"},
		{[]string{"explain", "--steps", "-1"}, "--steps"},
		{[]string{"health", "--timeout", "-1s"}, "--timeout"},
		{[]string{"quantize", "a.gguf", "b.gguf", "Q4_0", "--threads", "-3"}, "--threads"},
		{[]string{"convert", "dir", "b.gguf", "--threads", "-1"}, "--threads"},
		{[]string{"run", "--tokenizer", "tok.bin", "-p", "x", "-n", "1"}, "--tokenizer"},
		{[]string{"run", "--chat-template", "chatml", "-p", "x", "-n", "1"}, "--chat-template"},
		{[]string{"run", "--lenient-schema", "-p", "x", "-n", "1"}, "--lenient-schema"},
		{[]string{"grammar", "check", "--grammar", "g.gbnf", "--lenient-schema"}, "--lenient-schema"},
		{[]string{"convert", "dir", "b.gguf", "--type", "f16", "--threads", "2"}, "--threads"},
		{[]string{"bench", "-m", "x.gguf", "--kv-size", "4096"}, "--kv-size"},
		{[]string{"run", "-m", "no-such.gguf", "-p", "x"}, "no-such.gguf: no such"},
		{[]string{"bench", "-m", "no-such.gguf"}, "no-such.gguf: no such"},
		{[]string{"inspect", "no-such.gguf"}, "no-such.gguf: no such"},
	} {
		_, stderr, err := loomIn(t, "", c.args...)
		if err == nil || !strings.Contains(stderr, c.flag) {
			t.Errorf("loom %v: %v, stderr %q (want a failure naming %s)", c.args, err, stderr, c.flag)
		}
	}
}

// TestPromptSources: -f FILE and -p - (standard input) give the same
// greedy text as -p.
func TestPromptSources(t *testing.T) {
	want, _, err := loom(t, "run", "-p", "Once upon a time", "-n", "12", "--temp", "0")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "prompt.txt")
	os.WriteFile(f, []byte("Once upon a time"), 0o644)
	got, _, err := loom(t, "run", "-f", f, "-n", "12", "--temp", "0")
	if err != nil || got != want {
		t.Errorf("-f: %v %q, want %q", err, got, want)
	}
	cmd := exec.Command(loomBin, "run", "-p", "-", "-n", "12", "--temp", "0")
	cmd.Stdin = strings.NewReader("Once upon a time")
	out, err := cmd.Output()
	if err != nil || string(out) != want {
		t.Errorf("-p -: %v %q, want %q", err, out, want)
	}
}
