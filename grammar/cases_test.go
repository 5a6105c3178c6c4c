package grammar

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
)

// sharedCase is one entry of ../shared/grammar/cases.json: llama.cpp's
// grammar integration cases with verdicts re-checked by llama-gbnf-validator.
type sharedCase struct {
	Kind       string `json:"kind"`
	Desc       string `json:"desc"`
	Grammar    string `json:"grammar"`
	Schema     string `json:"schema"`
	LlamaGBNF  string `json:"grammar_llama_cpp"`
	Invalid    bool   `json:"invalid"`
	Candidates []struct {
		Input   string `json:"input"`
		Verdict string `json:"llama_cpp"`
	} `json:"candidates"`
}

func loadCases(t *testing.T) []sharedCase {
	dir := testmodels.Shared(t)
	b, err := os.ReadFile(filepath.Join(dir, "grammar", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cs []sharedCase
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

func checkVerdicts(t *testing.T, g *Grammar, c sharedCase) int {
	t.Helper()
	n := 0
	for _, cand := range c.Candidates {
		got := "reject"
		if g.Match(cand.Input) {
			got = "accept"
		}
		if got != cand.Verdict {
			t.Errorf("%s: %q: got %s, llama.cpp %s", c.Desc, cand.Input, got, cand.Verdict)
		}
		n++
	}
	return n
}

// TestSharedGrammarCases: every GBNF case gets llama.cpp's verdict on every
// string, and every grammar llama.cpp refuses is refused.
func TestSharedGrammarCases(t *testing.T) {
	n := 0
	for _, c := range loadCases(t) {
		src := c.Grammar
		if c.Kind == "schema" {
			src = c.LlamaGBNF // llama.cpp's own conversion exercises the matcher too
		}
		g, err := Parse(src)
		if c.Invalid {
			if err == nil {
				t.Errorf("%s: parsed a grammar llama.cpp refuses", c.Desc)
			} else {
				t.Logf("%s: %v", c.Desc, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.Desc, err)
			continue
		}
		n += checkVerdicts(t, g, c)
	}
	t.Logf("%d verdicts checked", n)
}

// TestSharedSchemaCases: grammars converted from the shared schemas give
// llama.cpp's verdicts; where the conversion follows llama.cpp's rules the
// text is the same too (reported, not required: only verdicts must agree).
func TestSharedSchemaCases(t *testing.T) {
	n, same, total := 0, 0, 0
	for _, c := range loadCases(t) {
		if c.Kind != "schema" {
			continue
		}
		text, err := SchemaToGBNF([]byte(c.Schema))
		if err != nil {
			// Strict conversion refuses keywords it cannot enforce;
			// lenient conversion ignores them as llama.cpp does.
			t.Logf("%s: strict: %v", c.Desc, err)
			var warns []string
			text, warns, err = ConvertSchema([]byte(c.Schema), SchemaOptions{Lenient: true})
			if err != nil || len(warns) == 0 {
				t.Errorf("%s: lenient: %v (warnings %q)", c.Desc, err, warns)
				continue
			}
		}
		total++
		if text == c.LlamaGBNF {
			same++
		} else {
			t.Logf("%s: grammar differs from llama.cpp's:\n%s\nllama.cpp:\n%s", c.Desc, text, c.LlamaGBNF)
		}
		g, err := Parse(text)
		if err != nil {
			t.Errorf("%s: %v\n%s", c.Desc, err, text)
			continue
		}
		n += checkVerdicts(t, g, c)
	}
	t.Logf("%d verdicts checked; %d of %d grammars textually equal to llama.cpp's", n, same, total)
}
