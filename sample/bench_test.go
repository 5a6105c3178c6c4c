package sample

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkSample151k: one draw from a 151k vocabulary with llama.cpp's
// default chain (top-k 40, top-p 0.95, min-p 0.05, temperature 0.8).
func BenchmarkSample151k(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	logits := make([]float32, 151936)
	for i := range logits {
		logits[i] = float32(rng.NormFloat64() * 3)
	}
	work := make([]float32, len(logits))
	s := New(Params{Temp: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, Seed: 1})
	for b.Loop() {
		copy(work, logits)
		s.Sample(work, nil)
	}
}
