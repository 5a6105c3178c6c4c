package engine

import (
	"math"
	"testing"
)

// TestStepCostFit: passes timed as 0.02 + 0.0008·tokens outside attention
// and 0.0005 + 0.0002·tokens + 0.004·(attended positions/1024) in it are
// fitted back, and
// chunkRoom then gives the largest chunk whose predicted step stays within
// the limit — smaller the deeper the prompt — and at least 1; before the
// fit, the budget as given.
func TestStepCostFit(t *testing.T) {
	var c stepCost
	if got := c.chunkRoom(1000, 256, 0.03, 0.075); got != 256 {
		t.Errorf("before any pass: room %d, want the budget 256", got)
	}
	want := [3]float64{0.0205, 0.001, 0.004}
	for i := range 200 {
		tokens := 8 + (i*37)%250
		l := (i * 997) % 16000
		att := attended(l, tokens-8) + 8*(2000+i)
		attn := 0.0005 + 0.0002*float64(tokens) + want[2]*float64(att)/1024
		c.add(tokens, att, 0.02+0.0008*float64(tokens)+attn, attn)
	}
	k, ok := c.fit()
	if !ok {
		t.Fatal("no fit after 200 passes")
	}
	for i := range k {
		if math.Abs(k[i]-want[i]) > 1e-6 {
			t.Fatalf("fit %v, want %v", k, want)
		}
	}
	cost := func(l, n int) float64 { return want[1]*float64(n) + want[2]*float64(attended(l, n))/1024 }
	spent := want[0] + 8*want[1]
	limit := 2.5 * spent
	prev := 1 << 30
	for _, l := range []int{0, 1000, 4000, 16000} {
		n := c.chunkRoom(l, 256, spent, limit)
		if n < 1 || n > 256 || n > 1 && cost(l, n) > limit-spent+1e-12 || n < 256 && cost(l, n+1) <= limit-spent {
			t.Errorf("depth %d: room %d (cost %.4f, next %.4f, room %.4f)", l, n, cost(l, n), cost(l, n+1), limit-spent)
		}
		if n > prev {
			t.Errorf("depth %d: room %d grew from %d", l, n, prev)
		}
		prev = n
	}
	if n := c.chunkRoom(1<<20, 256, spent, spent); n != 1 {
		t.Errorf("no room at all: %d, want the 1 that keeps a prefill moving", n)
	}
}

// TestStepCostDepthApart: passes at one depth attend to about as many
// positions each, so the whole time alone cannot tell the depth's cost from
// the fixed cost; with the attention time measured apart, the decode-only
// step is still priced at its own cost after a long run of such passes.
func TestStepCostDepthApart(t *testing.T) {
	var c stepCost
	rest := func(tokens int) float64 { return 0.02 + 0.002*float64(tokens) }
	attn := func(att int) float64 { return 0.0008 * float64(att) / 1024 }
	for i := range 40 { // decode-only passes and short prompts, shallow
		tokens := 8 + (i%3)*20
		att := 600 + 64*(i%3)*20
		c.add(tokens, att, rest(tokens)+attn(att), attn(att))
	}
	for i := range 400 { // a long prompt's 2-token chunks at 16k beside 8 decodes
		att := 600 + attended(16000+2*i, 2)
		c.add(10, att, rest(10)+attn(att), attn(att))
	}
	k, ok := c.fit()
	if !ok {
		t.Fatal("no fit")
	}
	got, want := k[0]+8*k[1]+k[2]*600/1024, rest(8)+attn(600)
	if math.Abs(got-want) > 0.05*want {
		t.Errorf("decode-only step priced %.4f s, costs %.4f (fit %v)", got, want, k)
	}
}

// TestStepCostClamp: an attention time reported outside [0, the pass]
// (clock steps) is taken at the nearest bound, so neither line sees a
// negative part.
func TestStepCostClamp(t *testing.T) {
	var c stepCost
	c.add(8, 1024, 0.01, 0.5)
	c.add(8, 1024, 0.01, -1)
	if c.rest.sy < 0 || c.attn.xy[0] > 0.02+1e-12 {
		t.Errorf("rest sum %g, attention sum %g", c.rest.sy, c.attn.xy[0])
	}
}

// TestUnfitCap: before the fit, a step's chunks take (factor−1) times its
// decode tokens, never fewer than the 2 that keep a prefill moving.
func TestUnfitCap(t *testing.T) {
	for _, c := range []struct {
		dec    int
		factor float64
		want   int
	}{{8, 2, 8}, {8, 1.5, 4}, {8, 3, 16}, {1, 2, 2}, {8, 1, 2}, {3, 1.5, 2}} {
		if got := unfitCap(c.dec, c.factor); got != c.want {
			t.Errorf("unfitCap(%d, %g) = %d, want %d", c.dec, c.factor, got, c.want)
		}
	}
}
