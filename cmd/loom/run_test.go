package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
)

// runToken and runEnd are the JSON lines of loom run --logprobs.
type runToken struct {
	Index       int     `json:"index"`
	ID          int32   `json:"id"`
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	TopLogprobs []struct {
		ID      int32   `json:"id"`
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
	} `json:"top_logprobs"`
}

type runEnd struct {
	Index            int     `json:"index"`
	Text             *string `json:"text"`
	FinishReason     string  `json:"finish_reason"`
	Detail           string  `json:"detail"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
}

// runJSON splits --logprobs output into each completion's token lines and
// closing line.
func runJSON(t *testing.T, out string) (map[int][]runToken, map[int]runEnd) {
	t.Helper()
	toks, ends := map[int][]runToken{}, map[int]runEnd{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e runEnd
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if e.Text != nil {
			if _, dup := ends[e.Index]; dup {
				t.Fatalf("completion %d ends twice", e.Index)
			}
			ends[e.Index] = e
			continue
		}
		if _, done := ends[e.Index]; done {
			t.Fatalf("a token line after completion %d ended: %q", e.Index, line)
		}
		var tok runToken
		json.Unmarshal([]byte(line), &tok)
		toks[tok.Index] = append(toks[tok.Index], tok)
	}
	return toks, ends
}

// TestRunLogprobs: --logprobs N prints a JSON line per generated token
// (the greedy token is the most likely one, its log-probability the
// log-softmax of the logits loom logits prints for the prompt) and one
// closing line with the text plain `loom run` prints and the finish
// reason.
func TestRunLogprobs(t *testing.T) {
	model := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	text, _, err := loom(t, "run", "-m", model, "-p", "Once upon a time", "-n", "6", "--temp", "0", "-t", "1")
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := loom(t, "run", "-m", model, "-p", "Once upon a time", "-n", "6", "--temp", "0", "-t", "1", "--logprobs", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	toks, ends := runJSON(t, out)
	end, ok := ends[0]
	if !ok || len(ends) != 1 || len(toks[0]) != 6 {
		t.Fatalf("%d completions, %d token lines:\n%s", len(ends), len(toks[0]), out)
	}
	if *end.Text+"\n" != text || end.FinishReason != "length" || end.Detail != "max_tokens" || end.CompletionTokens != 6 || end.PromptTokens == 0 {
		t.Errorf("closing line %+v (text %q), plain run printed %q", end, *end.Text, text)
	}
	var joined strings.Builder
	for i, tok := range toks[0] {
		joined.WriteString(tok.Token)
		if len(tok.TopLogprobs) != 3 || tok.TopLogprobs[0].ID != tok.ID || tok.TopLogprobs[0].Logprob != tok.Logprob ||
			tok.Logprob > 0 || tok.TopLogprobs[1].Logprob > tok.TopLogprobs[0].Logprob || tok.TopLogprobs[2].Logprob > tok.TopLogprobs[1].Logprob {
			t.Errorf("token %d: %+v: want the greedy token first among 3, in order", i, tok)
		}
	}
	if joined.String() != *end.Text {
		t.Errorf("the tokens spell %q, the text is %q", joined.String(), *end.Text)
	}
	// The first token's log-probability is the log-softmax of the prompt's
	// last logits row.
	lg, _, err := loom(t, "logits", "-m", model, "-p", "Once upon a time", "--top", "1", "-t", "1")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(lg), "\n")
	var last struct {
		LSE float64      `json:"lse"`
		Top [][2]float64 `json:"top"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || len(last.Top) != 1 {
		t.Fatalf("logits line %q: %v", lines[len(lines)-1], err)
	}
	if first := toks[0][0]; int32(last.Top[0][0]) != first.ID || math.Abs(last.Top[0][1]-last.LSE-first.Logprob) > 1e-3 {
		t.Errorf("first token %d logprob %v; loom logits: token %v, logit − lse %v", first.ID, first.Logprob, last.Top[0][0], last.Top[0][1]-last.LSE)
	}
	// --logprobs 0: the chosen token's only.
	out, _, err = loom(t, "run", "-m", model, "-p", "Once upon a time", "-n", "2", "--temp", "0", "-t", "1", "--logprobs", "0")
	if err != nil {
		t.Fatal(err)
	}
	if toks, _ := runJSON(t, out); len(toks[0]) != 2 || len(toks[0][0].TopLogprobs) != 0 {
		t.Errorf("--logprobs 0: %s", out)
	}
}

// TestRunLogitBias: --logit-bias bans a token (-inf or -100) by id or by
// its text as --logprobs prints it, and a large bias forces one; values
// that are not TOKEN=BIAS, or name no single token, fail naming the value.
func TestRunLogitBias(t *testing.T) {
	model := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	first := func(args ...string) runToken {
		t.Helper()
		out, stderr, err := loom(t, append([]string{"run", "-m", model, "-p", "Once upon a time", "-n", "4", "--temp", "0", "-t", "1", "--logprobs", "1"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		toks, _ := runJSON(t, out)
		if len(toks[0]) == 0 {
			t.Fatalf("%v: nothing generated", args)
		}
		return toks[0][0]
	}
	greedy := first()
	byID := first("--logit-bias", strconv.Itoa(int(greedy.ID))+"=-inf")
	byText := first("--logit-bias", greedy.Token+"=-100")
	if byID.ID == greedy.ID || byText.ID != byID.ID {
		t.Errorf("greedy %d %q; banned by id: %d, by text %q: %d", greedy.ID, greedy.Token, byID.ID, greedy.Token, byText.ID)
	}
	// Log-probabilities stay the model's: the banned token's alternative
	// reports the probability it has without the ban.
	if byID.Logprob > 0 || byID.Logprob >= greedy.Logprob {
		t.Errorf("banned: the next best has logprob %v, the greedy token %v", byID.Logprob, greedy.Logprob)
	}
	// A token given twice takes the last bias.
	if again := first("--logit-bias", strconv.Itoa(int(greedy.ID))+"=-inf", "--logit-bias", strconv.Itoa(int(greedy.ID))+"=0"); again.ID != greedy.ID {
		t.Errorf("the later bias 0 did not lift the ban: %d", again.ID)
	}
	// A bias of 100 makes a token win every step.
	out, _, err := loom(t, "run", "-m", model, "-p", "Once upon a time", "-n", "3", "--temp", "0", "-t", "1", "--logit-bias", "Lily =100")
	if err != nil || out != "Lily Lily Lily \n" {
		t.Errorf("forced: %v %q", err, out)
	}
	for _, c := range []struct{ bias, want string }{
		{"x", `"x"`},
		{"=5", `"=5"`},
		{"5=", `"5="`},
		{"5=nan", `"5=nan"`},
		{"5=+inf", `"5=+inf"`},
		{"5=101", `"5=101"`},
		{"99999=1", `"99999=1"`},
		{"-3=1", `"-3=1"`},
		{"Once upon=-inf", `"Once upon=-inf"`},
	} {
		_, stderr, err := loom(t, "run", "-m", model, "-p", "x", "-n", "1", "-t", "1", "--logit-bias", c.bias)
		if err == nil || !strings.Contains(stderr, "--logit-bias") || !strings.Contains(stderr, c.want) {
			t.Errorf("--logit-bias %q: %v, stderr %q", c.bias, err, stderr)
		}
	}
}

// TestRunCompletions: --completions N samples N completions of one prompt
// as OpenAI's n: completion i+1 is seeded with --seed + i, so it is the
// text one completion with that seed gives; each is printed under its
// "--- completion I ---" line and has its own stats and finish reason.
func TestRunCompletions(t *testing.T) {
	model := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	args := []string{"run", "-m", model, "-p", "Once upon a time", "-n", "10", "--temp", "1", "-t", "1"}
	out, stderr, err := loom(t, append(args, "--completions", "3", "--seed", "5")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	parts := regexp.MustCompile(`(?m)^--- completion (\d) ---\n`).Split(out, -1)
	if len(parts) != 4 || parts[0] != "" {
		t.Fatalf("want 3 completions, each under its line:\n%s", out)
	}
	distinct := map[string]bool{}
	for i, p := range parts[1:] {
		alone, _, err := loom(t, append(args, "--seed", strconv.Itoa(5+i))...)
		if err != nil {
			t.Fatal(err)
		}
		if p, alone = strings.TrimRight(p, "\n"), strings.TrimRight(alone, "\n"); p != alone {
			t.Errorf("completion %d: %q, one completion with seed %d: %q", i+1, p, 5+i, alone)
		}
		distinct[p] = true
	}
	if len(distinct) < 2 {
		t.Errorf("three seeds, one text: %q", parts[1])
	}
	if !regexp.MustCompile(`(?m)^prompt: \d+ tokens`).MatchString(stderr) {
		t.Errorf("no prompt line: %q", stderr)
	}
	for i := 1; i <= 3; i++ {
		if !regexp.MustCompile(`(?m)^completion ` + strconv.Itoa(i) + `: generated: 10 tokens, [0-9.]+ tok/s \| finish: length \(max_tokens\)$`).MatchString(stderr) {
			t.Errorf("no stats line for completion %d: %q", i, stderr)
		}
	}
	// With --logprobs, each completion's lines carry its index.
	out, _, err = loom(t, append(args, "--completions", "2", "--seed", "5", "--logprobs", "1")...)
	if err != nil {
		t.Fatal(err)
	}
	toks, ends := runJSON(t, out)
	if len(ends) != 2 || len(toks[0]) != 10 || len(toks[1]) != 10 || strings.TrimRight(parts[2], "\n") != *ends[1].Text {
		t.Errorf("--completions 2 --logprobs 1: %d completions, %d and %d tokens; second %q, want %q", len(ends), len(toks[0]), len(toks[1]), *ends[1].Text, parts[2])
	}
}

// TestRunFinish: the stats line names the finish reason and what caused
// it.
func TestRunFinish(t *testing.T) {
	model := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "4"}, "finish: length (max_tokens)"},
		{[]string{"-n", "40", "-c", "16"}, "finish: length (context)"},
		{[]string{"-n", "40", "--stop", "little"}, "finish: stop (stop_string)"},
		{[]string{"-n", "0", "-c", "512"}, "finish: stop (eog)"},
	} {
		_, stderr, err := loom(t, append([]string{"run", "-m", model, "-p", "Once upon a time", "--temp", "0", "-t", "1"}, c.args...)...)
		if err != nil || !strings.Contains(stderr, "| "+c.want+"\n") {
			t.Errorf("%v: %v, stderr %q, want %q", c.args, err, stderr, c.want)
		}
	}
}
