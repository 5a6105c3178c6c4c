package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// nestedSchema is the benchmark's schema: objects in arrays in objects,
// enums, bounded strings, integers with ranges, a date.
const nestedSchema = `{
  "type": "object",
  "properties": {
    "id": {"type": "integer", "minimum": 1, "maximum": 100000},
    "name": {"type": "string", "minLength": 1, "maxLength": 40},
    "created": {"type": "string", "format": "date"},
    "status": {"enum": ["active", "paused", "closed"]},
    "owner": {
      "type": "object",
      "properties": {
        "email": {"type": "string", "pattern": "^[a-z0-9.]{1,20}@[a-z]{1,12}\\.(com|org)$"},
        "admin": {"type": "boolean"}
      },
      "required": ["email", "admin"]
    },
    "items": {
      "type": "array",
      "maxItems": 4,
      "items": {
        "type": "object",
        "properties": {
          "sku": {"type": "string", "maxLength": 12},
          "qty": {"type": "integer", "minimum": 0, "maximum": 999},
          "price": {"type": "number"}
        },
        "required": ["sku", "qty"]
      }
    }
  },
  "required": ["id", "name", "status", "owner", "items"]
}`

// maskRun walks a grammar with adversarial choices: at each step a
// uniformly random allowed token (random weights do much the same). It
// returns the per-step mask times and the text.
func maskRun(t testing.TB, ix *grammar.Index, pieces func(int32) []byte, m *grammar.Matcher, rng *rand.Rand, maxSteps int) ([]time.Duration, string, bool) {
	var times []time.Duration
	var out []byte
	allowed := make([]int32, 0, ix.Size())
	for step := 0; step < maxSteps; step++ {
		t0 := time.Now()
		mask := m.Mask(ix)
		times = append(times, time.Since(t0))
		allowed = allowed[:0]
		for w, bits := range mask {
			for bits != 0 {
				b := bits & -bits
				allowed = append(allowed, int32(w*64+bitIndex(b)))
				bits ^= b
			}
		}
		if len(allowed) == 0 {
			t.Fatalf("no token allowed after %q", out)
		}
		tok := allowed[rng.IntN(len(allowed))]
		p := pieces(tok)
		if len(p) == 0 { // end of generation
			if !m.Complete() {
				t.Fatalf("end allowed before the grammar is complete: %q", out)
			}
			return times, string(out), true
		}
		if err := m.AcceptToken(ix, tok); err != nil {
			t.Fatal(err)
		}
		out = append(out, p...)
		if m.Final() {
			return times, string(out), true
		}
	}
	return times, string(out), false
}

func bitIndex(b uint64) int { return bits.TrailingZeros64(b) }

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}

// TestGrammarMaskCost reports the mask cost per generated token on the
// Qwen2.5 vocabulary (151k tokens) for a nested schema, walking it with
// adversarial random choices, and checks every result is valid JSON.
func TestGrammarMaskCost(t *testing.T) {
	path := testmodels.Synth(t, "-model", "qwen2.5-0.5b", "-type", "Q8_0", "-seed", "1")
	e, err := engine.Load(path, engine.Options{Threads: 1, CtxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	t0 := time.Now()
	ix := engine.GrammarIndex(e)
	t.Logf("index of %d tokens (%d trie nodes) built in %v", ix.Size(), ix.Nodes(), time.Since(t0))
	g, err := grammar.FromSchema([]byte(nestedSchema))
	if err != nil {
		t.Fatal(err)
	}
	pieces := func(id int32) []byte {
		if e.Vocab().IsEOG(id) {
			return nil
		}
		return e.Vocab().Piece(id, false)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var cold, warm []time.Duration
	runs := 20
	if testing.Short() {
		runs = 4
	}
	m := g.NewMatcher()
	for r := 0; r < runs; r++ {
		m.Reset()
		times, text, done := maskRun(t, ix, pieces, m, rng, 2000)
		if !done {
			t.Fatalf("run %d did not finish in 2000 tokens: %q", r, text)
		}
		if !json.Valid([]byte(text)) {
			t.Fatalf("run %d: invalid JSON %q", r, text)
		}
		if r == 0 {
			cold = append(cold, times...)
			t.Logf("sample output: %s", text)
		} else {
			warm = append(warm, times...)
		}
	}
	fr, sets, states, masks := m.Stats()
	t.Logf("matcher: %d frames, %d stack sets, %d automaton states, %d masks cached", fr, sets, states, masks)
	t.Logf("mask per token, first run (cold caches): median %v, p99 %v, max %v over %d tokens",
		percentile(cold, 0.5), percentile(cold, 0.99), percentile(cold, 1), len(cold))
	t.Logf("mask per token, later runs (matcher reused): median %v, p99 %v, max %v over %d tokens",
		percentile(warm, 0.5), percentile(warm, 0.99), percentile(warm, 1), len(warm))
}

// TestConstrainedDecodeSpeed reports decode tok/s with and without a
// nested JSON Schema on the Qwen2.5 preset (151k vocabulary), alternating
// in one process, greedy and at temperature 0.8, with the mask cost per
// computed mask. Reported only: no timing assertions.
func TestConstrainedDecodeSpeed(t *testing.T) {
	if testing.Short() {
		t.Skip("speed report: run without -short")
	}
	path := testmodels.Synth(t, "-model", "qwen2.5-0.5b", "-type", "Q8_0", "-seed", "1")
	e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	g, err := grammar.FromSchema([]byte(nestedSchema))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, temp := range []float32{0, 0.8} {
		var free, cons []float64
		var masks []time.Duration
		for round := 0; round < 3; round++ {
			sp := sample.Params{Temp: temp, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: uint64(round + 1)}
			st, err := e.Generate(ctx, engine.Request{Prompt: "Hello", MaxTokens: 100, IgnoreEOS: true, Sample: sp}, func(string) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			free = append(free, st.DecodeTokS())
			var out strings.Builder
			st, err = e.Generate(ctx, engine.Request{Prompt: "Hello", MaxTokens: 1000, Sample: sp, Grammar: g}, func(s string) error { out.WriteString(s); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid([]byte(out.String())) {
				t.Fatalf("invalid JSON: %q", out.String())
			}
			cons = append(cons, st.DecodeTokS())
			masks = append(masks, st.Masks...)
			t.Logf("temp %.1f round %d: free %.1f tok/s, constrained %.1f tok/s (%d tokens, %d masks, %s)", temp, round, free[round], cons[round], st.Generated, len(st.Masks), st.Detail)
		}
		slices.Sort(free)
		slices.Sort(cons)
		line := fmt.Sprintf("temp %.1f: median decode free %.1f tok/s, constrained %.1f tok/s = %.2f×", temp, free[1], cons[1], cons[1]/free[1])
		if len(masks) > 0 {
			line += fmt.Sprintf("; masks: %d, median %v, p99 %v", len(masks), percentile(masks, 0.5), percentile(masks, 0.99))
		}
		t.Log(line)
	}
}
