package sample

import (
	"math"
	"testing"
)

func logits() []float32 { return []float32{1, 3, 2, 0.5, 2.9, -1} }

func TestGreedy(t *testing.T) {
	if g := Greedy(logits()); g != 1 {
		t.Fatalf("argmax %d", g)
	}
	s := New(Params{Temp: 0})
	if g := s.Sample(logits(), nil); g != 1 {
		t.Fatalf("temp 0 picked %d", g)
	}
}

func TestSeeded(t *testing.T) {
	run := func(seed uint64) []int32 {
		s := New(Params{Temp: 1, Seed: seed})
		var out []int32
		for range 50 {
			out = append(out, s.Sample(logits(), nil))
		}
		return out
	}
	a, b, c := run(7), run(7), run(8)
	same := func(x, y []int32) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Fatal("same seed gave different tokens")
	}
	if same(a, c) {
		t.Fatal("different seeds gave the same 50 tokens")
	}
}

func TestCutoffs(t *testing.T) {
	cases := []struct {
		name    string
		p       Params
		allowed map[int32]bool
	}{
		{"top-k 2", Params{Temp: 1, TopK: 2}, map[int32]bool{1: true, 4: true}},
		// p = softmax: 3→.41, 2.9→.37, 2→.15: top-p .7 keeps the first two.
		{"top-p 0.7", Params{Temp: 1, TopP: 0.7}, map[int32]bool{1: true, 4: true}},
		{"min-p 0.5", Params{Temp: 1, MinP: 0.5}, map[int32]bool{1: true, 4: true}},
		{"min-p 0.3", Params{Temp: 1, MinP: 0.3}, map[int32]bool{1: true, 4: true, 2: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.p.Seed = 1
			s := New(c.p)
			seen := map[int32]bool{}
			for range 2000 {
				id := s.Sample(logits(), nil)
				if !c.allowed[id] {
					t.Fatalf("sampled %d", id)
				}
				seen[id] = true
			}
			if len(seen) != len(c.allowed) {
				t.Fatalf("saw %v, want all of %v", seen, c.allowed)
			}
		})
	}
}

func TestTemperatureDistribution(t *testing.T) {
	s := New(Params{Temp: 0.5, Seed: 3})
	l := []float32{0, float32(math.Log(2))} // at T=0.5: odds 1:4
	n1 := 0
	const N = 20000
	for range N {
		if s.Sample(append([]float32(nil), l...), nil) == 1 {
			n1++
		}
	}
	if f := float64(n1) / N; math.Abs(f-0.8) > 0.02 {
		t.Fatalf("P(1) = %.3f, want 0.8", f)
	}
}

func TestPenalties(t *testing.T) {
	s := New(Params{Temp: 0, RepeatPenalty: 2, FreqPenalty: 0.1, PresPenalty: 0.5})
	l := []float32{1, 3, -1}
	s.Sample(l, []int32{1, 1, 2})
	want := []float32{1, 3.0/2 - 0.2 - 0.5, -1*2 - 0.1 - 0.5}
	for i := range l {
		if math.Abs(float64(l[i]-want[i])) > 1e-6 {
			t.Fatalf("logit %d = %v, want %v", i, l[i], want[i])
		}
	}
}

// TestChainSteps: the exported steps cut as documented, and Last reports
// what the sampler kept.
func TestChainSteps(t *testing.T) {
	logits := []float32{0, 3, 1, 3, float32(math.Inf(-1)), 2}
	c := TopK(logits, 3)
	if len(c) != 3 || c[0].ID != 1 || c[1].ID != 3 || c[2].ID != 5 {
		t.Fatalf("TopK: %+v", c)
	}
	if all := TopK(logits, 0); len(all) != 5 {
		t.Fatalf("TopK(0) kept %d of 5 finite logits", len(all))
	}
	Softmax(c, 1) // e³, e³, e² over their sum: 0.42, 0.42, 0.16
	if n := TopP(c, 0.5); n != 2 {
		t.Errorf("TopP(0.5) kept %d, want 2", n)
	}
	if n := TopP(c, 1); n != 3 {
		t.Errorf("TopP(1) kept %d, want all 3", n)
	}
	if n := MinP(c, 0.5); n != 2 {
		t.Errorf("MinP(0.5) kept %d, want 2 (0.16 < 0.21)", n)
	}
	s := New(Params{Temp: 0.7, TopK: 3, TopP: 0.5, Seed: 1})
	id := s.Sample(append([]float32(nil), logits...), nil)
	tr := s.Last()
	if tr.TopK != 3 || tr.TopP != 2 || len(tr.Candidates) != 2 || tr.Chosen != id || (id != 1 && id != 3) {
		t.Fatalf("trace %+v, chose %d", tr, id)
	}
}

// allowSet is a Constraint allowing a fixed set of tokens; it counts masks.
type allowSet struct {
	ok    map[int32]bool
	masks int
}

func (a *allowSet) Allows(tok int32) bool { return a.ok[tok] }

func (a *allowSet) Mask(l []float32) error {
	a.masks++
	n := 0
	for i := range l {
		if !a.ok[int32(i)] {
			l[i] = float32(math.Inf(-1))
		} else {
			n++
		}
	}
	if n == 0 {
		return errDead
	}
	return nil
}

var errDead = errorString("no token allowed")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestChain: the bias comes first (a ban is never chosen, a boost wins),
// the constraint next (greedy asks Allows first and masks only when the
// model's choice is refused; a temperature masks always), and a
// constraint's failure is Next's error.
func TestChain(t *testing.T) {
	cases := []struct {
		name   string
		p      Params
		ok     map[int32]bool // nil: no constraint
		want   int32          // -1: any allowed
		masks  int
		masked bool
		err    bool
	}{
		{"greedy", Params{}, nil, 1, 0, false, false},
		{"ban argmax", Params{LogitBias: map[int32]float32{1: -100}}, nil, 4, 0, false, false},
		{"ban -inf", Params{LogitBias: map[int32]float32{1: float32(math.Inf(-1))}}, nil, 4, 0, false, false},
		{"boost", Params{LogitBias: map[int32]float32{5: 10}}, nil, 5, 0, false, false},
		{"allowed argmax: no mask", Params{}, map[int32]bool{1: true, 2: true}, 1, 0, false, false},
		{"refused argmax: mask", Params{}, map[int32]bool{2: true, 3: true}, 2, 1, true, false},
		{"bias then constraint", Params{LogitBias: map[int32]float32{3: 5}}, map[int32]bool{2: true, 3: true}, 3, 0, false, false},
		{"temperature masks first", Params{Temp: 1, Seed: 3}, map[int32]bool{0: true}, 0, 1, true, false},
		{"dead end", Params{}, map[int32]bool{}, 0, 1, true, true},
		{"dead end at a temperature", Params{Temp: 0.7}, map[int32]bool{}, 0, 1, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(c.p)
			var a *allowSet
			if c.ok != nil {
				a = &allowSet{ok: c.ok}
				s.C = a
			}
			got, err := s.Next(logits(), nil)
			if c.err {
				if err == nil {
					t.Fatalf("no error; chose %d", got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("chose %d (%v), want %d", got, err, c.want)
			}
			if a != nil && a.masks != c.masks {
				t.Errorf("%d masks, want %d", a.masks, c.masks)
			}
			if s.Last().Masked != c.masked {
				t.Errorf("trace Masked %v, want %v", s.Last().Masked, c.masked)
			}
		})
	}
}

// TestLogSumExp: against the definition, at temperature 1 and 0.5, with a
// -Inf logit (a banned token counts for nothing).
func TestLogSumExp(t *testing.T) {
	l := []float32{1, 3, 2, float32(math.Inf(-1)), -4}
	for _, temp := range []float64{1, 0.5} {
		var z float64
		for _, x := range l {
			z += math.Exp(float64(x) / temp)
		}
		if got, want := LogSumExpAt(l, temp), math.Log(z); math.Abs(got-want) > 1e-12 {
			t.Errorf("temp %v: %v, want %v", temp, got, want)
		}
	}
	if LogSumExp(l) != LogSumExpAt(l, 1) {
		t.Error("LogSumExp differs from LogSumExpAt(·, 1)")
	}
}
