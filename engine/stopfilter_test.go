package engine

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// naiveStop is the specification of stopFilter: search the held text for
// every stop string, else hold back the longest suffix that is a proper
// prefix of one.
type naiveStop struct {
	stops []string
	held  string
}

func (f *naiveStop) add(text string) (string, bool) {
	if len(f.stops) == 0 {
		return text, false
	}
	f.held += text
	cut := -1
	for _, s := range f.stops {
		if i := strings.Index(f.held, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out := f.held[:cut]
		f.held = ""
		return out, true
	}
	keep := 0
	for _, s := range f.stops {
		for k := min(len(s)-1, len(f.held)); k > keep; k-- {
			if strings.HasSuffix(f.held, s[:k]) {
				keep = k
				break
			}
		}
	}
	out := f.held[:len(f.held)-keep]
	f.held = f.held[len(f.held)-keep:]
	return out, false
}

// TestStopFilterMatchesSearch: the streaming matcher releases exactly what
// the search-based specification releases, chunk by chunk, on random texts
// over a small alphabet (so stop strings and their prefixes recur).
func TestStopFilterMatchesSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab c"[r.IntN(4)]
		}
		return string(b)
	}
	for iter := 0; iter < 20000; iter++ {
		var stops []string
		for range 1 + r.IntN(3) {
			stops = append(stops, word(1+r.IntN(6)))
		}
		fast, slow := stopFilter{stops: stops}, naiveStop{stops: stops}
		for step := 0; step < 30; step++ {
			chunk := word(r.IntN(5))
			a, sa := fast.add(chunk)
			b, sb := slow.add(chunk)
			if a != b || sa != sb || fast.held != slow.held {
				t.Fatalf("stops %q, chunk %d %q: released %q/%v held %q, want %q/%v held %q", stops, step, chunk, a, sa, fast.held, b, sb, slow.held)
			}
			if sa {
				break
			}
		}
	}
}

// TestStopFilterLongStop: a megabyte stop string that keeps nearly matching
// holds the text back and releases it once it cannot match, at a cost per
// token linear in the token (the search-based filter paid the stop's square).
func TestStopFilterLongStop(t *testing.T) {
	stop := strings.Repeat("a", 1<<20) + "b"
	f := stopFilter{stops: []string{stop}}
	for range 1 << 12 {
		if out, hit := f.add("a"); out != "" || hit {
			t.Fatalf("released %q, hit %v", out, hit)
		}
	}
	if out, hit := f.add("b"); hit || len(out) != 1<<12+1 {
		t.Fatalf("released %d bytes, hit %v", len(out), hit)
	}
}
