package engine_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

var schemaSeed = flag.Uint64("schema.seed", 7, "seed of TestSchemaProperty's random schemas")

// Bounded string patterns: each forces its string to end.
var testPatterns = []string{
	`^[a-z]{1,8}$`, `^[A-Z][a-z]{0,6}-[0-9]{2,4}$`, `^(foo|bar|baz)[0-9]?$`, `^\d{3}-\d{4}$`,
	`^[^"\\]{0,5}$`, `^(?:ab|c){1,3}x?$`, `^[\w.]{1,10}@[a-z]{2,6}\.(com|org)$`, `^.{0,4}$`,
}

// randomSchema makes a JSON Schema whose values are all of bounded size
// (so a random model's output must end): nested objects with optional and
// required properties, arrays with bounds, enums, consts, unions, type
// lists, bounded strings, patterns, formats and integer ranges.
func randomSchema(rng *rand.Rand, depth int) map[string]any {
	kinds := []string{"string", "integer", "number", "boolean", "null", "enum", "const", "pattern", "format", "range", "strlist"}
	if depth < 3 {
		kinds = append(kinds, "object", "object", "array", "anyOf", "tuple")
	}
	switch kinds[rng.IntN(len(kinds))] {
	case "string":
		s := map[string]any{"type": "string", "maxLength": rng.IntN(12) + 1}
		if rng.IntN(2) == 0 {
			s["minLength"] = rng.IntN(2)
		}
		return s
	case "integer":
		return map[string]any{"type": "integer"}
	case "number":
		return map[string]any{"type": "number"}
	case "boolean":
		return map[string]any{"type": "boolean"}
	case "null":
		return map[string]any{"type": "null"}
	case "enum":
		return map[string]any{"enum": []any{"red", "green", 42, nil, true, []any{"x"}}[:rng.IntN(5)+1]}
	case "const":
		return map[string]any{"const": []any{"fixed", 7, false, map[string]any{"k": "v"}}[rng.IntN(4)]}
	case "pattern":
		return map[string]any{"type": "string", "pattern": testPatterns[rng.IntN(len(testPatterns))]}
	case "format":
		return map[string]any{"type": "string", "format": []string{"date", "time", "date-time", "uuid"}[rng.IntN(4)]}
	case "range":
		s := map[string]any{"type": "integer"}
		lo := rng.IntN(2000) - 1000
		switch rng.IntN(3) {
		case 0:
			s["minimum"] = lo
		case 1:
			s["maximum"] = lo
		default:
			s["minimum"], s["maximum"] = lo, lo+rng.IntN(5000)
		}
		return s
	case "strlist":
		return map[string]any{"type": []any{"string", "null"}, "maxLength": rng.IntN(6) + 1}
	case "object":
		props := map[string]any{}
		var req []any
		for i := range rng.IntN(4) + 1 {
			name := fmt.Sprintf("%s_%d", []string{"id", "name", "tags", "size", "note", "when"}[rng.IntN(6)], i)
			props[name] = randomSchema(rng, depth+1)
			if rng.IntN(2) == 0 {
				req = append(req, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(req) > 0 {
			s["required"] = req
		}
		return s
	case "array":
		s := map[string]any{"type": "array", "items": randomSchema(rng, depth+1), "maxItems": rng.IntN(3) + 1}
		if rng.IntN(2) == 0 {
			s["minItems"] = 1
		}
		return s
	case "tuple":
		return map[string]any{"type": "array", "prefixItems": []any{randomSchema(rng, depth+1), randomSchema(rng, depth+1)}}
	default: // anyOf
		return map[string]any{"anyOf": []any{randomSchema(rng, depth+1), randomSchema(rng, depth+1)}}
	}
}

// TestSchemaProperty: constrained generation on random-weight models with
// real vocabularies (the Llama-2 SentencePiece one and, without -short,
// Qwen2.5's 151k byte-level BPE) always produces JSON that parses and
// validates against the schema with an independent validator
// (santhosh-tekuri/jsonschema, formats asserted). The requests run
// together on the scheduler, at a temperature: random weights make the
// choices adversarial.
func TestSchemaProperty(t *testing.T) {
	models := []struct {
		args []string
		n    int
	}{{[]string{"-model", "tiny-test", "-type", "Q8_0", "-seed", "1"}, 200}}
	if !testing.Short() {
		models = append(models, struct {
			args []string
			n    int
		}{[]string{"-model", "qwen2.5-0.5b", "-type", "Q8_0", "-seed", "1"}, 200})
	}
	for _, mdl := range models {
		t.Run(mdl.args[1], func(t *testing.T) {
			e, err := engine.Load(testmodels.Synth(t, mdl.args...), engine.Options{Threads: 2, CtxLen: 2048, Parallel: 16})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			sched := e
			rng := rand.New(rand.NewPCG(*schemaSeed, uint64(mdl.n)))
			type job struct {
				schema string
				s      *jsonschema.Schema
				st     *engine.Stream
			}
			var jobs []job
			prompt := e.Tokenize("Reply in JSON:", true, false)
			for i := range mdl.n {
				b, _ := json.Marshal(randomSchema(rng, 0))
				g, err := grammar.FromSchema(b)
				if err != nil {
					t.Fatalf("schema %d %s: %v", i, b, err)
				}
				c := jsonschema.NewCompiler()
				c.AssertFormat()
				doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
				if err := c.AddResource("s.json", doc); err != nil {
					t.Fatal(err)
				}
				vs, err := c.Compile("s.json")
				if err != nil {
					t.Fatalf("validator refuses schema %s: %v", b, err)
				}
				streams, err := sched.Submit(context.Background(), engine.Request{Tokens: prompt, MaxTokens: 1500, Grammar: g,
					Sample: sample.Params{Temp: 1, Seed: uint64(i + 1)}})
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, job{string(b), vs, streams[0]})
			}
			tokens := 0
			for i, j := range jobs {
				text, _, res := j.st.Collect()
				tokens += res.Generated
				if res.FinishReason != "stop" {
					t.Fatalf("schema %d %s: finished with %q (%v) after %d tokens: %q", i, j.schema, res.FinishReason, res.Err, res.Generated, text)
				}
				v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
				if err != nil {
					t.Fatalf("schema %d %s: output is not JSON: %q: %v", i, j.schema, text, err)
				}
				if err := j.s.Validate(v); err != nil {
					t.Fatalf("schema %d %s: output %q does not validate: %v", i, j.schema, text, err)
				}
				if i < 3 {
					t.Logf("schema %s → %s", j.schema, strings.Join(strings.Fields(text), " "))
				}
			}
			t.Logf("%d schemas, %d tokens, every output valid", len(jobs), tokens)
		})
	}
}

// TestGrammarProperty: hand-written bounded GBNF grammars (an arithmetic
// expression of bounded depth, a CSV row, a tagged list) likewise always
// produce a string the grammar matches as a whole.
func TestGrammarProperty(t *testing.T) {
	grammars := []string{
		"root ::= e1\ne1 ::= e2 ([-+*/] e2){0,3}\ne2 ::= num | \"(\" e3 \")\"\ne3 ::= num ([-+*/] num){0,2}\nnum ::= [1-9] [0-9]{0,3}",
		"root ::= field (\",\" field){1,4} \"\\n\"\nfield ::= [a-zA-Z0-9 ]{0,6} | \"\\\"\" [^\"\\n]{0,8} \"\\\"\"",
		"root ::= \"<list>\" (\"<item>\" [a-z]{1,5} \"</item>\"){1,3} \"</list>\"",
	}
	e, err := engine.Load(testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1"), engine.Options{Threads: 2, CtxLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for gi, src := range grammars {
		g, err := grammar.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		for seed := uint64(1); seed <= 10; seed++ {
			var out strings.Builder
			st, err := e.Generate(context.Background(), engine.Request{Prompt: "Go:", MaxTokens: 500, Grammar: g, Sample: sample.Params{Temp: 1, Seed: seed}},
				func(s string) error { out.WriteString(s); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if st.Detail != engine.DetailGrammar && st.Detail != engine.DetailEOG || !g.Match(out.String()) {
				t.Fatalf("grammar %d seed %d: %s (%s), %q does not match", gi, seed, st.FinishReason, st.Detail, out.String())
			}
			if seed == 1 {
				t.Logf("grammar %d: %q", gi, out.String())
			}
		}
	}
}
