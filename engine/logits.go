package engine

import (
	"math"
	"sort"
)

// LogSumExp is log Σ exp(l) over all logits (computed in float64).
func LogSumExp(logits []float32) float64 {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l))
	}
	var s float64
	for _, l := range logits {
		s += math.Exp(float64(l) - mx)
	}
	return mx + math.Log(s)
}

// Scored is a token id with its logit.
type Scored struct {
	ID    int32
	Logit float32
}

// TopK returns the k highest logits, best first (lower id first on ties).
func TopK(logits []float32, k int) []Scored {
	k = min(k, len(logits))
	if k <= 0 {
		return nil
	}
	top := make([]Scored, 0, k+1)
	for i, l := range logits {
		if len(top) == k && l <= top[k-1].Logit {
			continue
		}
		j := sort.Search(len(top), func(j int) bool { return top[j].Logit < l })
		top = append(top, Scored{})
		copy(top[j+1:], top[j:])
		top[j] = Scored{int32(i), l}
		if len(top) > k {
			top = top[:k]
		}
	}
	return top
}
