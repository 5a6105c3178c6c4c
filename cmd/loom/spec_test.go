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
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
)

func tinyStories(t *testing.T, file string) string {
	return filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", file)
}

// TestRunSpeculative: loom run's speculative decoding flags (llama.cpp's
// -md/--model-draft, --draft-max and its aliases --draft and --draft-n,
// --draft-min, --draft-p-min, and --spec) change how the tokens are
// computed, never which: greedy and sampled output is the same with every
// drafter, the model given as a flag or positionally, and the stats line
// counts the drafts.
func TestRunSpeculative(t *testing.T) {
	model, draft := tinyStories(t, "TinyStories-656K-Q8_0.gguf"), tinyStories(t, "TinyStories-656K-Q4_0.gguf")
	const prompt = "Tom has a red ball. Tom has a red ball. Tom"
	for _, sampling := range [][]string{{"--temp", "0"}, {"--temp", "0.9", "--seed", "7"}} {
		base := append([]string{"run", "-m", model, "-p", prompt, "-n", "40", "-t", "1"}, sampling...)
		want, stderr, err := loom(t, base...)
		if err != nil || strings.TrimSpace(want) == "" {
			t.Fatalf("%v: %v\n%s", base, err, stderr)
		}
		if strings.Contains(stderr, "drafts:") {
			t.Errorf("without speculation the stats line counts drafts: %s", stderr)
		}
		for _, extra := range [][]string{
			{"--spec", "ngram"},
			{"--spec", "ngram", "--draft-max", "4", "--draft-min", "2"},
			{"--spec=off"},
			{"--model-draft", model},
			{"-md", draft, "--draft-max", "3", "--draft-p-min", "0"},
			{"--draft", draft, "--draft", "5"},
			{"-md", model, "--spec", "draft", "--draft-n", "6", "--draft-n-min", "1"},
			{"-md", draft, "--draft-max", "0"},
		} {
			got, stderr, err := loom(t, append(slicesClone(base), extra...)...)
			if err != nil {
				t.Errorf("%v: %v\n%s", extra, err, stderr)
				continue
			}
			if got != want {
				t.Errorf("%v %v: %q, without speculation %q", sampling, extra, got, want)
			}
		}
	}
	// The model positionally, the flags after the prompt; the model
	// drafting for itself with a fixed count is accepted whole: the stats
	// line says so.
	got, stderr, err := loom(t, "run", model, "Once", "upon", "a", "time", "-n", "24", "--temp", "0", "-t", "1", "-md", model, "--draft-p-min", "0")
	want, _, _ := loom(t, "run", model, "Once upon a time", "-n", "24", "--temp", "0", "-t", "1")
	if err != nil || got != want {
		t.Errorf("positional model with -md: %v %q, want %q\n%s", err, got, want, stderr)
	}
	if m := regexp.MustCompile(`drafts: (\d+) of (\d+) accepted`).FindStringSubmatch(stderr); m != nil && m[1] != m[2] {
		t.Errorf("the model drafting for itself greedily: %s", stderr)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestSpecFlagsRejected: bad speculative decoding flags fail before any
// work, naming the flag, in every command that takes them.
func TestSpecFlagsRejected(t *testing.T) {
	model := tinyStories(t, "TinyStories-656K-Q8_0.gguf")
	for _, cmd := range []string{"run", "chat", "serve", "bench", "explain"} {
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--spec", "eagle"}, "--spec"},
			{[]string{"--spec", "ngram", "--draft-max", "65"}, "--draft-max"},
			{[]string{"--spec", "ngram", "--draft-max", "-1"}, "--draft-max"},
			{[]string{"--spec", "ngram", "--draft-min", "20"}, "--draft-min"},
			{[]string{"--spec", "ngram", "--draft-p-min", "1.5"}, "--draft-p-min"},
			{[]string{"--spec", "draft"}, "--model-draft"},
			{[]string{"-md", "/no/such/draft.gguf"}, "--model-draft"},
			{[]string{"--draft-n", "x"}, "--draft-n"},
			{[]string{"--draft-max", "abc"}, "--draft-max"},
		} {
			args := append([]string{cmd, "-m", model}, c.args...)
			if cmd == "serve" {
				args = append(args, "--port", "0")
			}
			_, stderr, err := loom(t, args...)
			if err == nil || !strings.Contains(stderr, c.want) {
				t.Errorf("loom %v: %v, stderr %q: want an error naming %s", args, err, stderr, c.want)
			}
		}
	}
	// Tuning without a drafter is a mistake, except for serve, whose
	// requests may turn speculation on.
	for _, cmd := range []string{"run", "chat", "bench", "explain"} {
		_, stderr, err := loom(t, cmd, "-m", model, "--draft-max", "4")
		if err == nil || !strings.Contains(stderr, "--draft-max: speculative decoding is off") {
			t.Errorf("loom %s --draft-max without a drafter: %v %q", cmd, err, stderr)
		}
	}
	for _, c := range [][]string{{"--spec-fixed"}, {"-f", "x.txt"}, {"--spec", "ngram", "-f", "x.txt", "-p", "8"}, {"--spec", "ngram", "-n", "0"}} {
		if _, stderr, err := loom(t, append([]string{"bench", model}, c...)...); err == nil || stderr == "" {
			t.Errorf("loom bench %v: %v %q", c, err, stderr)
		}
	}
}

// TestBenchSpeculative: loom bench --spec / --model-draft compares decoding
// with and without speculation in one run: the JSON has both rates and
// vLLM's counts; the model drafting for itself at a fixed count has every
// draft accepted; -f takes a text prompt; --parallel runs several
// sequences; the text report names the numbers.
func TestBenchSpeculative(t *testing.T) {
	model := tinyStories(t, "TinyStories-656K-Q8_0.gguf")
	var r struct {
		Mode               string    `json:"mode"`
		Parallel           int       `json:"parallel"`
		PromptTokens       int       `json:"prompt_tokens"`
		Off                float64   `json:"decode_tok_s_off"`
		Spec               float64   `json:"decode_tok_s_spec"`
		Speedup            float64   `json:"speedup"`
		RunsOff            []float64 `json:"runs_off"`
		DraftTokens        int       `json:"draft_tokens"`
		Accepted           int       `json:"accepted_tokens"`
		AcceptanceRate     float64   `json:"acceptance_rate"`
		MeanAcceptedLength float64   `json:"mean_accepted_length"`
		TokensPerStep      float64   `json:"tokens_per_step"`
		Identical          bool      `json:"identical"`
		CPU                string    `json:"cpu"`
	}
	out, stderr, err := loom(t, "bench", model, "-md", model, "--spec-fixed", "--draft-max", "3", "-p", "16", "-n", "24", "-r", "2", "-t", "1", "--json")
	if err != nil || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("%v %q\n%s", err, out, stderr)
	}
	if r.Mode != "draft" || r.Parallel != 1 || r.PromptTokens != 16 || len(r.RunsOff) != 2 || r.Off <= 0 || r.Spec <= 0 || r.Speedup <= 0 ||
		r.DraftTokens == 0 || r.Accepted != r.DraftTokens || r.AcceptanceRate != 1 || r.MeanAcceptedLength != 4 || r.TokensPerStep < 3 || !r.Identical || !sameCPU(r.CPU) {
		t.Errorf("self-drafting bench: %s", out)
	}
	dir := t.TempDir()
	text := filepath.Join(dir, "copy.txt")
	os.WriteFile(text, []byte(strings.Repeat("Tom has a red ball. ", 6)+"Tom"), 0o644)
	out, stderr, err = loom(t, "bench", "-m", model, "--spec", "ngram", "--spec-fixed", "--draft-max", "4", "-f", text, "-n", "16", "-r", "1", "-t", "1", "--parallel", "2", "--json")
	if err != nil || json.Unmarshal([]byte(out), &r) != nil || r.Mode != "ngram" || r.Parallel != 2 || r.DraftTokens == 0 || !r.Identical || r.PromptTokens < 20 {
		t.Errorf("ngram bench with -f and --parallel 2: %v %s\n%s", err, out, stderr)
	}
	out, stderr, err = loom(t, "bench", model, "--spec", "ngram", "-p", "32", "-n", "16", "-r", "1", "-t", "1")
	for _, want := range []string{"\ncpu         ", "decode off", "decode spec", "acceptance", "tokens per target forward pass", "the same tokens with and without"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("bench text lacks %q: %v\n%s%s", want, err, out, stderr)
		}
	}
}

// TestExplainSpeculative: loom explain with speculation shows the passes:
// the drafts accepted, the model's token and the drafts rejected (text and
// JSON), and generates what it generates without.
func TestExplainSpeculative(t *testing.T) {
	model := tinyStories(t, "TinyStories-656K-Q8_0.gguf")
	args := []string{"explain", model, "Tom has a red ball. Tom has a red ball. Tom", "--temp", "0", "--steps", "12", "-t", "1"}
	plain, stderr, err := loom(t, append(slicesClone(args), "--json")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	out, stderr, err := loom(t, append(slicesClone(args), "--json", "-md", model, "--spec-fixed", "--draft-max", "3")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var a, b struct {
		Sampling struct {
			Text string `json:"text"`
		} `json:"sampling"`
		Speculation *struct {
			Drafted, Accepted int
			Steps             []json.RawMessage
		} `json:"speculation"`
	}
	json.Unmarshal([]byte(plain), &a)
	json.Unmarshal([]byte(out), &b)
	if a.Speculation != nil || b.Speculation == nil || b.Sampling.Text != a.Sampling.Text || b.Speculation.Drafted == 0 || b.Speculation.Accepted != b.Speculation.Drafted {
		t.Errorf("explain with a self-draft: %q vs %q, speculation %+v", b.Sampling.Text, a.Sampling.Text, b.Speculation)
	}
	txt, _, err := loom(t, append(slicesClone(args), "--spec", "ngram", "--spec-fixed")...)
	if err != nil || !strings.Contains(txt, "speculative decoding (ngram") || !strings.Contains(txt, "forward passes") {
		t.Errorf("explain text: %v\n%s", err, txt)
	}
}

// TestChatSpeculative: loom chat with -md or --spec ngram replies as it
// does without.
func TestChatSpeculative(t *testing.T) {
	model := tinyStories(t, "TinyStories-656K-Q8_0.gguf")
	chat := func(extra ...string) string {
		cmd := loomCmd(append([]string{"chat", "-m", model, "-n", "24", "--temp", "0", "-t", "1"}, extra...)...)
		cmd.Stdin = strings.NewReader("Tell me about a cat.\nAnd a dog?\n/stats\n")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, out)
		}
		return string(out)
	}
	strip := regexp.MustCompile(`(?m)^\[.*\]\n`)
	want := strip.ReplaceAllString(chat(), "")
	for _, extra := range [][]string{{"--spec", "ngram"}, {"-md", model, "--draft-p-min", "0"}} {
		if got := chat(extra...); strip.ReplaceAllString(got, "") != want {
			t.Errorf("chat %v:\n%s\nwithout:\n%s", extra, got, want)
		}
	}
}

// TestServeSpeculative: loom serve with --model-draft drafts for the
// requests (default mode draft), a request's speculative.mode can turn it
// off, the text is the same, and /metrics counts the drafts.
func TestServeSpeculative(t *testing.T) {
	model := tinyStories(t, "TinyStories-656K-Q8_0.gguf")
	cmd := loomCmd("serve", "-m", model, "--port", "0", "-t", "1", "-c", "256", "--parallel", "2", "-md", model, "--draft-max", "4", "--draft-p-min", "0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stderr)
	addr, line := "", ""
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
		if strings.Contains(sc.Text(), "speculative decoding") {
			line = sc.Text()
		}
		if strings.Contains(sc.Text(), "ready") {
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	if addr == "" || !strings.Contains(line, "speculative decoding draft model") {
		t.Fatalf("address %q, model line %q", addr, line)
	}
	complete := func(extra string) (string, map[string]any) {
		resp, err := http.Post(addr+"/v1/completions", "application/json",
			strings.NewReader(`{"prompt":"Once upon a time","max_tokens":40,"temperature":0`+extra+`}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Timings map[string]any `json:"timings"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || len(body.Choices) != 1 {
			t.Fatalf("%s: %v %+v", extra, err, body)
		}
		return body.Choices[0].Text, body.Timings
	}
	off, tm := complete(`,"speculative.mode":"off"`)
	if _, ok := tm["draft_n"]; ok {
		t.Errorf("speculative.mode off: timings %v", tm)
	}
	for _, extra := range []string{"", `,"speculative.n_max":2`, `,"speculative.mode":"ngram"`} {
		if got, _ := complete(extra); got != off {
			t.Errorf("%q: %q, with speculation off %q", extra, got, off)
		}
	}
	// Speculation adapts to what it measures (the draft here is the model
	// itself, so it barely pays, and a busy machine can tip the estimate
	// against it): a few more default-mode requests give the gate the
	// chance to draft before /metrics must show drafts.
	var m [][]byte
	for try := range 6 {
		if try > 0 {
			complete("")
		}
		resp, err := http.Get(addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m = regexp.MustCompile(`(?m)^vllm:spec_decode_num_draft_tokens_total\{model_name="[^"]+"\} (\d+)`).FindSubmatch(b); m != nil && string(m[1]) != "0" {
			return
		}
	}
	t.Errorf("/metrics: draft tokens %q after five more requests in the default (draft) mode", m)
}
