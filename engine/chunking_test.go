package engine

import (
	"math"
	"testing"
)

// TestStepCostFit: passes timed as 0.02 + 0.001·tokens + 0.004·(attended
// positions/1024) are fitted back, and chunkRoom then gives the largest
// chunk whose predicted step stays within the limit — smaller the deeper
// the prompt — and at least 2; before the fit, the budget as given.
func TestStepCostFit(t *testing.T) {
	var c stepCost
	if got := c.chunkRoom(1000, 256, 0.03, 0.075); got != 256 {
		t.Errorf("before any pass: room %d, want the budget 256", got)
	}
	want := [3]float64{0.02, 0.001, 0.004}
	for i := range 200 {
		tokens := 8 + (i*37)%250
		l := (i * 997) % 16000
		att := attended(l, tokens-8) + 8*(2000+i)
		c.add(tokens, att, want[0]+want[1]*float64(tokens)+want[2]*float64(att)/1024)
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
		if n < 2 || n > 256 || n > 2 && cost(l, n) > limit-spent+1e-12 || n < 256 && cost(l, n+1) <= limit-spent {
			t.Errorf("depth %d: room %d (cost %.4f, next %.4f, room %.4f)", l, n, cost(l, n), cost(l, n+1), limit-spent)
		}
		if n > prev {
			t.Errorf("depth %d: room %d grew from %d", l, n, prev)
		}
		prev = n
	}
	if n := c.chunkRoom(1<<20, 256, spent, spent); n != 2 {
		t.Errorf("no room at all: %d, want the 2 that keep a prefill moving", n)
	}
}
