package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/machine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestGrammarCheckShared: `loom grammar check` gives llama.cpp's verdict on
// every shared candidate, for the GBNF cases and for the schemas (and for
// the grammar `loom grammar from-schema` prints for each schema); grammars
// llama.cpp refuses fail with an error naming the problem.
func TestGrammarCheckShared(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testmodels.Shared(t), "grammar", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Kind, Desc, Grammar, Schema string
		Invalid                     bool
		Candidates                  []struct {
			Input   string `json:"input"`
			Verdict string `json:"llama_cpp"`
		}
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	checked := 0
	for i, c := range cases {
		var cands, want strings.Builder
		for _, x := range c.Candidates {
			q, _ := json.Marshal(x.Input)
			cands.Write(append(q, '\n'))
			want.WriteString(x.Verdict + "\n")
		}
		cf := filepath.Join(dir, "cands.txt")
		os.WriteFile(cf, []byte(cands.String()), 0o644)
		var runs [][]string
		if c.Kind == "grammar" {
			gf := filepath.Join(dir, "g.gbnf")
			os.WriteFile(gf, []byte(c.Grammar), 0o644)
			runs = append(runs, []string{"grammar", "check", "--grammar", gf, "-f", cf})
		} else {
			sf := filepath.Join(dir, "s.json")
			os.WriteFile(sf, []byte(c.Schema), 0o644)
			args := []string{"grammar", "from-schema", sf}
			check := []string{"grammar", "check", "--json-schema", sf, "-f", cf}
			if _, _, err := loom(t, args...); err != nil { // keywords no grammar can enforce
				args = append(args, "--lenient-schema")
				check = append(check, "--lenient-schema")
			}
			gbnf, stderr, err := loom(t, args...)
			if err != nil {
				t.Fatalf("case %d %s: from-schema: %v\n%s", i, c.Desc, err, stderr)
			}
			gf := filepath.Join(dir, "from-schema.gbnf")
			os.WriteFile(gf, []byte(gbnf), 0o644)
			runs = append(runs, check, []string{"grammar", "check", "--grammar", gf, "-f", cf})
		}
		for _, args := range runs {
			out, stderr, err := loom(t, args...)
			if c.Invalid {
				if err == nil || !strings.Contains(stderr, "grammar") {
					t.Errorf("case %d %s: invalid grammar accepted: %v %q", i, c.Desc, err, stderr)
				}
				continue
			}
			if err != nil {
				t.Fatalf("case %d %s: %v\n%s", i, c.Desc, err, stderr)
			}
			if out != want.String() {
				t.Errorf("case %d %s: loom %v\ngot\n%swant\n%s", i, c.Desc, args, out, want.String())
			}
			checked += len(c.Candidates)
		}
	}
	t.Logf("%d verdicts checked through the CLI", checked)
}

// TestRunJSON: `loom run --json` and `--json-schema` print JSON that the
// schema allows (a random-weight model with the Llama-2 vocabulary); the
// embedded TinyStories model, whose 512 tokens cannot spell '{', says so.
func TestRunJSON(t *testing.T) {
	if _, stderr, err := loom(t, "run", "--json", "-p", "Once upon a time"); err == nil || !strings.Contains(stderr, "no token of the vocabulary can continue the grammar") {
		t.Errorf("embedded model: %v %q", err, stderr)
	}
	m := testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
	out, stderr, err := loom(t, "run", "-m", m, "--json", "-p", "Once upon a time", "-n", "300", "--temp", "1", "--seed", "3")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// Random weights rarely close a free string: the object may run to -n,
	// but it is an object from its first byte.
	if !strings.HasPrefix(out, "{") {
		t.Fatalf("--json printed %q, %s", out, stderr)
	}
	if strings.Contains(stderr, "finish: stop (grammar)") {
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("--json printed %q: %v", out, err)
		}
	}
	sf := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(sf, []byte(`{"type":"object","properties":{"name":{"type":"string","maxLength":10},"age":{"type":"integer","minimum":0,"maximum":150}},"required":["name","age"]}`), 0o644)
	out, stderr, err = loom(t, "run", "-m", m, "--json-schema", sf, "-p", "Once upon a time", "-n", "300", "--temp", "0.8", "--seed", "1")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var p struct {
		Name *string
		Age  *int
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil || p.Name == nil || p.Age == nil || len([]rune(*p.Name)) > 10 || *p.Age < 0 || *p.Age > 150 {
		t.Fatalf("--json-schema printed %q (%v)", out, err)
	}
	// A schema with a keyword no grammar can enforce is refused, naming it.
	os.WriteFile(sf, []byte(`{"type":"number","multipleOf":3}`), 0o644)
	if _, stderr, err := loom(t, "run", "--json-schema", sf, "-p", "x"); err == nil || !strings.Contains(stderr, "multipleOf") || !strings.Contains(stderr, "--lenient-schema") {
		t.Fatalf("multipleOf: %v %q", err, stderr)
	}
	if _, stderr, err := loom(t, "run", "--json", "--grammar", sf, "-p", "x"); err == nil || !strings.Contains(stderr, "one of") {
		t.Fatalf("two constraints: %v %q", err, stderr)
	}
}

// TestBenchKernelsBandwidth: loom bench names the kernel of each tensor
// type and, with --bandwidth, decode's share of the bandwidth measured
// beside each run, and their median.
func TestBenchKernelsBandwidth(t *testing.T) {
	m := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	out, stderr, err := loom(t, "bench", "-m", m, "-p", "16", "-n", "8", "-r", "2", "--bandwidth")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if cpu := regexp.MustCompile(`\ncpu     (.+)\n`).FindStringSubmatch(out); cpu == nil || !sameCPU(cpu[1]) {
		t.Errorf("no cpu line naming %q:\n%s", machine.CPU(), out)
	}
	for _, want := range []string{"kernels Q8_0", "decode:", "prefill:", "MB of weights per token", "against the bandwidth measured beside it", "median", "GFLOP/s of matrix products"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// One share per run: "N% of X.Y" twice before the median.
	line := out[strings.Index(out, "\ndecode  "):]
	line = line[:strings.Index(line, "median")]
	if got := regexp.MustCompile(`\d+% of \d+\.\d`).FindAllString(line, -1); len(got) != 2 {
		t.Errorf("per-run shares %q, want 2 (-r 2):\n%s", got, out)
	}
}

// sameCPU: the loom binary's description of the CPU is this test's. The
// binary is built without the test's build tags, so a test built with
// purego (which describes no SIMD) only sees that there is one.
func sameCPU(got string) bool {
	if c := machine.CPU(); c.Vendor != "" {
		return got == c.String()
	}
	return got != ""
}
