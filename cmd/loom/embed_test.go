package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// embedTestModel returns the path of testmodels' embedding preset (F16,
// seed 1), written into the test cache on first use.
func embedTestModel(t *testing.T, preset string) string {
	t.Helper()
	return testmodels.EmbedModel(t, "modelgen -model "+preset+" -type F16 -seed 1")
}

// parseVectors reads embed's text output: one vector per line.
func parseVectors(t *testing.T, out string) [][]float32 {
	t.Helper()
	var vs [][]float32
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var v []float32
		for _, f := range strings.Fields(line) {
			x, err := strconv.ParseFloat(f, 32)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			v = append(v, float32(x))
		}
		vs = append(vs, v)
	}
	return vs
}

func equalVectors(t *testing.T, what string, got [][]float32, want []engine.Embedding) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d vectors, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i], want[i].Vector) {
			t.Fatalf("%s: vector %d differs from the engine's:\n%v\n%v", what, i, got[i], want[i].Vector)
		}
	}
}

// TestEmbedCLI: loom embed prints exactly the engine's embeddings (text
// and --json), from arguments, -f FILE and standard input, with
// --dimensions and --normalize (names and llama.cpp's numbers).
func TestEmbedCLI(t *testing.T) {
	model := embedTestModel(t, "bert-mini")
	e, err := engine.Load(model, engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	in := []string{"hello world", "the quick brown fox", "a third input, with punctuation!"}
	want, err := e.EmbedTexts(ctx, in, engine.EmbedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := loom(t, append([]string{"embed", model, "-t", "2"}, in...)...)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	equalVectors(t, "arguments", parseVectors(t, out), want)
	// -m: every argument is an input.
	out, _, err = loom(t, append([]string{"embed", "-m", model}, in...)...)
	if err != nil {
		t.Fatal(err)
	}
	equalVectors(t, "-m", parseVectors(t, out), want)
	// -f FILE (blank lines skipped) and standard input.
	file := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(file, []byte(strings.Join(in, "\n\n")+"\r\n"), 0o644)
	out, _, err = loom(t, "embed", model, "-f", file)
	if err != nil {
		t.Fatal(err)
	}
	equalVectors(t, "-f", parseVectors(t, out), want)
	cmd := exec.Command(loomBin, "embed", model, "-")
	cmd.Stdin = strings.NewReader(strings.Join(in, "\n"))
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	equalVectors(t, "stdin", parseVectors(t, string(b)), want)
	// --json: OpenAI's data objects.
	out, _, err = loom(t, append([]string{"embed", model, "--json"}, in...)...)
	if err != nil {
		t.Fatal(err)
	}
	var data []struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	if err := json.Unmarshal([]byte(out), &data); err != nil || len(data) != 3 {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	for i, d := range data {
		if d.Object != "embedding" || d.Index != i || !slices.Equal(d.Embedding, want[i].Vector) {
			t.Fatalf("--json item %d: %+v", i, d)
		}
	}
	// --dimensions and the normalizations.
	for _, c := range []struct {
		flags []string
		opts  engine.EmbedOptions
	}{
		{[]string{"--dimensions", "16"}, engine.EmbedOptions{Dimensions: 16}},
		{[]string{"--normalize", "none"}, engine.EmbedOptions{Norm: engine.NormNone}},
		{[]string{"--normalize", "-1"}, engine.EmbedOptions{Norm: engine.NormNone}},
		{[]string{"--embd-normalize", "0"}, engine.EmbedOptions{Norm: engine.NormMaxAbs}},
		{[]string{"--normalize=taxicab", "--dimensions=8"}, engine.EmbedOptions{Norm: engine.NormTaxicab, Dimensions: 8}},
	} {
		want, err := e.EmbedTexts(ctx, in[:2], c.opts)
		if err != nil {
			t.Fatal(err)
		}
		out, stderr, err := loom(t, append([]string{"embed", model, in[0], in[1]}, c.flags...)...)
		if err != nil {
			t.Fatalf("%v: %v %s", c.flags, err, stderr)
		}
		equalVectors(t, strings.Join(c.flags, " "), parseVectors(t, out), want)
	}
	// --truncate cuts a long input (with a warning); without it, an error.
	long := strings.Repeat("word ", 600)
	_, stderr, err = loom(t, "embed", model, long)
	if err == nil || !strings.Contains(stderr, "input 0 has 602 tokens, more than the context of 512") || !strings.Contains(stderr, "--truncate") {
		t.Errorf("long input: %v %s", err, stderr)
	}
	out, stderr, err = loom(t, "embed", model, long, "--truncate")
	if err != nil || len(parseVectors(t, out)) != 1 || !strings.Contains(stderr, "cut to the context (512 tokens)") {
		t.Errorf("--truncate: %v %s", err, stderr)
	}
}

// TestRerankCLI: loom rerank prints score, index and document, most
// relevant first, with the engine's scores; --top-n and --json.
func TestRerankCLI(t *testing.T) {
	model := embedTestModel(t, "bert-rerank-mini")
	e, err := engine.Load(model, engine.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	docs := []string{"a dog is an animal", "paris is a city in france", "dogs bark at night", "the\ttabbed document", "stocks fell today"}
	const query = "what do dogs do"
	want, err := e.Rerank(context.Background(), query, docs, engine.RerankOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, err := loom(t, append([]string{"rerank", model, "--query", query}, docs...)...)
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(docs) {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	prev := float32(0)
	seen := map[int]bool{}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Fatalf("line %q: want score<TAB>index<TAB>document", l)
		}
		s, _ := strconv.ParseFloat(f[0], 32)
		idx, _ := strconv.Atoi(f[1])
		if float32(s) != want[idx].Score || seen[idx] || f[2] != strings.ReplaceAll(docs[idx], "\t", " ") || i > 0 && float32(s) > prev {
			t.Fatalf("line %d %q: engine score of document %d is %v", i, l, idx, want[idx].Score)
		}
		seen[idx], prev = true, float32(s)
	}
	// --top-n, -m, documents from -f, --json.
	file := filepath.Join(t.TempDir(), "docs.txt")
	os.WriteFile(file, []byte(strings.Join(docs, "\n")), 0o644)
	out, _, err = loom(t, "rerank", "-m", model, "--query", query, "-f", file, "--top-n", "2", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var res []struct {
		Index          int     `json:"index"`
		RelevanceScore float32 `json:"relevance_score"`
		Document       struct {
			Text string `json:"text"`
		} `json:"document"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 2 {
		t.Fatalf("--json --top-n 2: %v\n%s", err, out)
	}
	for i, r := range res {
		l := strings.Split(lines[i], "\t")
		if strconv.Itoa(r.Index) != l[1] || r.RelevanceScore != want[r.Index].Score || r.Document.Text != docs[r.Index] {
			t.Errorf("--json result %d: %+v, text output %q", i, r, lines[i])
		}
	}
}

// TestEmbedCLIErrors: wrong models, missing inputs and bad flags fail with
// a clear message and a nonzero status; -h prints the usage.
func TestEmbedCLIErrors(t *testing.T) {
	bert := embedTestModel(t, "bert-mini")
	rerank := embedTestModel(t, "bert-rerank-mini")
	stories := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"embed", stories, "hi"}, "is a text-generation model, not an embedding or reranking model"},
		{[]string{"rerank", stories, "--query", "q", "d"}, "is a text-generation model"},
		{[]string{"embed", rerank, "hi"}, "is a reranking model (pooling rank)"},
		{[]string{"rerank", bert, "--query", "q", "d"}, "is an embedding model without a ranking head (pooling mean)"},
		{[]string{"embed"}, "no model"},
		{[]string{"embed", bert}, "no inputs"},
		{[]string{"embed", bert, ""}, "input 0 is empty"},
		{[]string{"rerank", rerank, "d"}, "no query"},
		{[]string{"rerank", rerank, "--query", "q"}, "no documents"},
		{[]string{"rerank", rerank, "--query", "q", "d", "--top-n", "-1"}, "--top-n -1"},
		{[]string{"rerank", rerank, "--query", "q", strings.Repeat("word ", 600)}, "document 0 with the query takes"},
		{[]string{"embed", bert, "x", "--normalize", "l3"}, "want none, l2, maxabs or taxicab"},
		{[]string{"embed", bert, "x", "--dimensions", "257"}, "--dimensions 257: the model's embeddings have 256"},
		{[]string{"embed", bert, "x", "-t", "0"}, "-t 0"},
		{[]string{"embed", bert, "-f", "/nonexistent/file"}, "/nonexistent/file"},
	} {
		cmd := exec.Command(loomBin, c.args...)
		cmd.Stdin = strings.NewReader("") // not piped input
		var errb strings.Builder
		cmd.Stderr = &errb
		err := cmd.Run()
		if err == nil || !strings.Contains(errb.String(), c.want) {
			t.Errorf("loom %s: %v, stderr %q, want %q", strings.Join(c.args, " "), err, errb.String(), c.want)
		}
	}
	for _, name := range []string{"embed", "rerank"} {
		out, _, err := loom(t, name, "-h")
		if err != nil || !strings.Contains(out, "usage: loom "+name) || !strings.Contains(out, "--truncate") && !strings.Contains(out, "-truncate") {
			t.Errorf("loom %s -h: %v\n%s", name, err, out)
		}
	}
}
