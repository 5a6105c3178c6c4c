package engine

import (
	"slices"
	"testing"
	"time"
)

// The n-gram drafter continues a loop past the present: the copy of a
// repeat that reaches the end of the tokens goes on from its own start.
func TestNgramProposeLoop(t *testing.T) {
	for _, tc := range []struct {
		tokens []int32
		k      int
		want   []int32
	}{
		{[]int32{1, 2, 3, 1, 2, 3}, 7, []int32{1, 2, 3, 1, 2, 3, 1}},
		{[]int32{5, 9, 5, 9}, 5, []int32{5, 9, 5, 9, 5}},
		{[]int32{7, 1, 2, 8, 9, 1, 2}, 3, []int32{8, 9, 1}},
		{[]int32{7, 1, 2, 8, 9, 1, 2}, 6, []int32{8, 9, 1, 2, 8, 9}},
		{[]int32{1, 2, 3, 4}, 4, nil}, // no repeat: no proposal
	} {
		var x ngramIndex
		got := x.propose(nil, tc.tokens, tc.k)
		if !slices.Equal(got, tc.want) {
			t.Errorf("propose(%v, %d) = %v, want %v", tc.tokens, tc.k, got, tc.want)
		}
	}
}

// draftLen drafts while the product of the acceptance estimates by
// position pays for a token's extra cost: a run of sure positions is
// drafted whole, and the first doubtful one ends it.
func TestDraftLenByPosition(t *testing.T) {
	var a acceptance
	a.reset()
	for range 40 { // every proposal accepted to position 5, rejected at 6
		a.observe(8, 6)
	}
	for i, want := range []float64{1, 1, 1, 1, 1, 1, 0} {
		if d := a.p[i] - want; d > 0.01 || d < -0.01 {
			t.Fatalf("estimate at %d = %.3f, want %.0f", i, a.p[i], want)
		}
	}
	if k := draftLen(&a, 0.1, 1, 16); k != 6 {
		t.Errorf("draftLen = %d, want 6 (the positions accepted)", k)
	}
	if k := draftLen(&a, 0.1, 1, 4); k != 4 {
		t.Errorf("draftLen with max 4 = %d", k)
	}
	// In a batch of 64 tokens a draft that is accepted half the time
	// does not pay for its row.
	a.p[0] = 0.5
	if k := draftLen(&a, 0.1, 64, 16); k != 0 {
		t.Errorf("draftLen at 64 tokens, even odds = %d, want 0", k)
	}
	var b acceptance
	b.reset()
	for range 40 { // the first draft always rejected
		b.observe(4, 0)
	}
	if k := draftLen(&b, 0.1, 1, 16); k != 0 {
		t.Errorf("draftLen after only rejections = %d, want 0", k)
	}
	// A new sequence starts from the engine's estimates, weighed lightly:
	// one rejection at a sure position moves it by a fifth (the prior's
	// two observations, the engine's two, and this one).
	var c acceptance
	c.seedFrom(&a)
	c.observe(2, 1)
	if d := c.p[1] - 0.8; d > 0.01 || d < -0.01 {
		t.Errorf("seeded estimate after one rejection = %.3f, want 0.8", c.p[1])
	}
}

// Where drafting loses, the gate retries it ever more rarely (each retry
// that loses doubles the wait, up to 1,024 steps); where it wins, it keeps
// a baseline step without drafts, rarer the more drafting wins, and steps
// that drafted nothing count as baseline.
func TestSpecGateExploration(t *testing.T) {
	run := func(perTokWith, perTokWithout float64, natural int, steps int) (drafting int) {
		var g specGate
		for i := range steps {
			ok := g.allow(1)
			drafted := ok && (natural == 0 || i%natural != 0)
			if drafted {
				drafting++
				g.record(1, true, 4, time.Duration(4*perTokWith*float64(time.Second)))
			} else {
				g.record(1, false, 1, time.Duration(perTokWithout*float64(time.Second)))
			}
		}
		return drafting
	}
	if n := run(2, 1, 0, 10000); n > 20 {
		t.Errorf("losing drafts ran in %d of 10,000 steps, want ≤ 20 (backoff)", n)
	}
	if n := run(0.9, 1, 0, 3200); n < 3200*8/9-20 || n > 3200*8/9+20 {
		t.Errorf("drafting winning by 10%% ran in %d of 3,200 steps, want about 8 in 9", n)
	}
	if n := run(0.5, 1, 0, 3300); n < 3300*32/33-20 {
		t.Errorf("drafting winning 2× ran in %d of 3,300 steps, want about 32 in 33", n)
	}
	// Steps that found nothing to draft are the baseline: no step is
	// forced without drafts.
	if n := run(0.9, 1, 5, 1000); n < 800-10 {
		t.Errorf("with a natural baseline every 5th step, drafting ran in %d of 1,000 steps, want ~800", n)
	}
}
