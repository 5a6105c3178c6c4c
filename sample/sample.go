// Package sample picks the next token from logits through the whole chain
// of transforms, in llama.cpp's order: logit bias → constraint (a grammar's
// mask) → penalties → top-k → top-p → min-p → temperature → a seeded
// random draw (or argmax at temperature 0). It also holds the two
// reductions everything else reads logits with: TopK and LogSumExp.
package sample

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Params are the sampling settings. Zero values disable a transform, except
// Temp: 0 means greedy.
type Params struct {
	Temp          float32
	TopK          int     // keep the k most likely (0: all)
	TopP          float32 // keep the smallest set with probability ≥ p (0 or 1: all)
	MinP          float32 // drop tokens with p < MinP·p_max (0: none)
	RepeatPenalty float32 // divide positive / multiply negative logits of recent tokens (1 or 0: off)
	FreqPenalty   float32 // subtract count·f
	PresPenalty   float32 // subtract p once if present
	PenaltyLastN  int     // how many recent tokens the penalties look at (0: 64)
	Seed          uint64
	// LogitBias is added to these tokens' logits first (-100 or less, or
	// -Inf, bans a token), as OpenAI's logit_bias and llama.cpp's
	// --logit-bias.
	LogitBias map[int32]float32
}

// Constraint restricts which tokens may come next (a grammar). Mask sets
// the logits of refused tokens to -Inf and fails when none is left;
// Allows tells whether one token is allowed (greedy decoding asks it
// first and masks only when the model's choice is refused).
type Constraint interface {
	Allows(tok int32) bool
	Mask(logits []float32) error
}

// Candidate is a token and its logit (then probability).
type Candidate struct {
	ID    int32
	Logit float32
	P     float32
}

// Sampler holds the RNG and reusable buffers (no allocation per token).
type Sampler struct {
	P      Params
	C      Constraint // nil: none
	rng    *rand.Rand
	cand   []Candidate
	counts map[int32]int
	last   Trace
}

// New returns a sampler seeded with p.Seed.
func New(p Params) *Sampler {
	if p.PenaltyLastN == 0 {
		p.PenaltyLastN = 64
	}
	return &Sampler{P: p, rng: rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)), counts: map[int32]int{}}
}

// Greedy returns the argmax (lowest id on ties).
func Greedy(logits []float32) int32 {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// Sample picks a token without a constraint (see Next); history is the
// sequence so far (for penalties). It changes logits.
func (s *Sampler) Sample(logits []float32, history []int32) int32 {
	s.last = Trace{}
	s.bias(logits)
	return s.sample(logits, history)
}

// Next runs the whole chain on logits (which it changes): the bias, the
// constraint, then Sample's steps. Greedy decoding first takes the
// unconstrained argmax: when the constraint allows it, it is also the
// constrained argmax (the allowed set is a subset with the same maximum,
// and a penalty keeps -Inf at -Inf), so the mask is computed only when
// the model's choice is refused. At a temperature the mask comes first,
// so every step sees only allowed tokens. It fails only when the
// constraint does.
func (s *Sampler) Next(logits []float32, history []int32) (int32, error) {
	s.last = Trace{}
	s.bias(logits)
	if s.C == nil {
		return s.sample(logits, history), nil
	}
	if s.P.Temp <= 0 {
		tok := s.sample(logits, history) // penalties applied to logits, then argmax
		if s.C.Allows(tok) {
			return tok, nil
		}
		s.last.Masked = true
		if err := s.C.Mask(logits); err != nil {
			return 0, err
		}
		s.last.Chosen = Greedy(logits)
		return s.last.Chosen, nil
	}
	s.last.Masked = true
	if err := s.C.Mask(logits); err != nil {
		return 0, err
	}
	return s.sample(logits, history), nil
}

// bias adds P.LogitBias.
func (s *Sampler) bias(logits []float32) {
	for id, b := range s.P.LogitBias {
		if id >= 0 && int(id) < len(logits) {
			if b <= -100 {
				logits[id] = float32(math.Inf(-1))
			} else {
				logits[id] += b
			}
		}
	}
}

// sample is the chain after the bias and the constraint.
func (s *Sampler) sample(logits []float32, history []int32) int32 {
	p := &s.P
	s.penalize(logits, history)
	if p.Temp <= 0 {
		s.last.Chosen = Greedy(logits)
		return s.last.Chosen
	}
	// Candidates in order (logit descending, id ascending on ties); banned
	// tokens (-inf: logit bias, grammar) are never candidates. Only as
	// many as the cut-offs can keep are ordered: with top-k the k best (a
	// heap, not a sort of the vocabulary); with top-p alone, a growing
	// best-first prefix until it holds p of the mass; with neither, none:
	// the draw then walks the vocabulary in id order (same distribution).
	topP := p.TopP > 0 && p.TopP < 1
	var c []Candidate
	switch {
	case p.TopK > 0 && p.TopK < len(logits):
		c = topK(s.cand[:0], logits, p.TopK)
		Softmax(c, 1)
	case topP:
		lse := LogSumExp(logits)
		for k := 256; ; k *= 8 {
			c = topK(s.cand[:0], logits, min(k, len(logits)))
			var cum float64
			for i := range c {
				c[i].P = float32(math.Exp(float64(c[i].Logit) - lse))
				cum += float64(c[i].P)
			}
			if cum >= float64(p.TopP) || k >= len(logits) {
				break
			}
		}
	default:
		c = s.cand[:0]
		mx := float32(math.Inf(-1))
		for i, l := range logits {
			if !math.IsInf(float64(l), -1) {
				c = append(c, Candidate{ID: int32(i), Logit: l})
				mx = max(mx, l)
			}
		}
		if len(c) == 0 {
			return Greedy(logits)
		}
		if p.MinP > 0 { // keep p ≥ MinP·p_max, i.e. logit ≥ max + ln MinP
			floor := mx + float32(math.Log(float64(p.MinP)))
			k := 0
			for _, x := range c {
				if x.Logit >= floor {
					c[k] = x
					k++
				}
			}
			c = c[:k]
			s.last.MinP = len(c)
		}
		s.cand = c
		s.last.Candidates = c // in id order here: no cut-off needed them sorted
		s.last.Chosen = s.draw(c, p.Temp, mx)
		return s.last.Chosen
	}
	if len(c) == 0 {
		return Greedy(logits)
	}
	s.last.TopK = len(c)
	if topP {
		c = c[:TopP(c, p.TopP)]
		s.last.TopP = len(c)
	}
	if p.MinP > 0 {
		c = c[:MinP(c, p.MinP)]
		s.last.MinP = len(c)
	}
	Softmax(c, p.Temp)
	s.cand = c
	s.last.Candidates = c
	r := s.rng.Float32()
	var cum float32
	for _, x := range c {
		cum += x.P
		if r < cum {
			s.last.Chosen = x.ID
			return x.ID
		}
	}
	s.last.Chosen = c[len(c)-1].ID
	return s.last.Chosen
}

// draw samples from candidates in any order at temperature temp; mx is
// their largest logit.
func (s *Sampler) draw(c []Candidate, temp, mx float32) int32 {
	sum := weigh(c, temp, mx)
	r := float64(s.rng.Float32()) * sum
	var cum float64
	for _, x := range c {
		cum += float64(x.P)
		if r < cum {
			return x.ID
		}
	}
	return c[len(c)-1].ID
}

// better orders candidates: higher logit first, lower id on ties.
func better(a, b Candidate) bool {
	if a.Logit != b.Logit {
		return a.Logit > b.Logit
	}
	return a.ID < b.ID
}

// topK appends the k best finite logits to c, in order. A min-heap of the
// best k seen keeps the cost O(n log k).
func topK(c []Candidate, logits []float32, k int) []Candidate {
	down := func(h []Candidate, i int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && better(h[w], h[l]) {
				w = l
			}
			if r < len(h) && better(h[w], h[r]) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	h := c[:0]
	for i, l := range logits {
		if math.IsInf(float64(l), -1) {
			continue
		}
		x := Candidate{ID: int32(i), Logit: l}
		if len(h) < k {
			h = append(h, x)
			for j := len(h) - 1; j > 0; { // up
				parent := (j - 1) / 2
				if !better(h[parent], h[j]) {
					break
				}
				h[parent], h[j] = h[j], h[parent]
				j = parent
			}
			continue
		}
		if better(x, h[0]) { // h[0] is the worst kept
			h[0] = x
			down(h, 0)
		}
	}
	sort.Slice(h, func(a, b int) bool { return better(h[a], h[b]) })
	return h
}

// The steps of the chain, exported so tools can show what each keeps
// (Sample runs them in llama.cpp's order: penalties, top-k, softmax at
// temperature 1, top-p, min-p, softmax at the temperature, the draw).

// TopK returns the k best finite logits, best first (higher logit, then
// lower id); k ≤ 0 or beyond the vocabulary keeps every finite logit.
func TopK(logits []float32, k int) []Candidate {
	if k <= 0 || k > len(logits) {
		k = len(logits)
	}
	return topK(make([]Candidate, 0, k), logits, k)
}

// TopP is how many of c (best first, P set) the nucleus keeps: the
// shortest prefix whose probabilities, summed in float32, reach p; all of
// them when p is off (≤ 0 or ≥ 1) or never reached.
func TopP(c []Candidate, p float32) int {
	if !(p > 0 && p < 1) {
		return len(c)
	}
	var cum float32
	for i := range c {
		cum += c[i].P
		if cum >= p {
			return i + 1
		}
	}
	return len(c)
}

// MinP is how many of c (best first, P set) have P ≥ minP·P[0]; at least
// one.
func MinP(c []Candidate, minP float32) int {
	if minP <= 0 || len(c) == 0 {
		return len(c)
	}
	floor := c[0].P * minP
	k := len(c)
	for k > 1 && c[k-1].P < floor {
		k--
	}
	return k
}

// Trace is what the last Sample call's chain kept (0: the step was off or
// the sampler was greedy).
type Trace struct {
	Masked           bool // the constraint's mask was computed
	TopK, TopP, MinP int
	// Candidates are the survivors with their drawing probabilities
	// (temperature applied), best first; valid until the next Sample.
	Candidates []Candidate
	Chosen     int32
}

// Last reports the last Sample call's chain.
func (s *Sampler) Last() Trace { return s.last }

// LogSumExp is log Σ exp(l) over all logits, in float64: a token's
// log-probability under the model is its logit minus this.
func LogSumExp(logits []float32) float64 { return LogSumExpAt(logits, 1) }

// LogSumExpAt is log Σ exp(l/temp) over all logits (float64), so that a
// token's probability at temperature temp is exp(l/temp − LogSumExpAt).
func LogSumExpAt(logits []float32, temp float64) float64 {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, float64(l))
	}
	var s float64
	for _, l := range logits {
		s += math.Exp((float64(l) - mx) / temp)
	}
	return mx/temp + math.Log(s)
}

// Softmax sets P from Logit/temp over c (sorted by logit, descending).
func Softmax(c []Candidate, temp float32) {
	sum := weigh(c, temp, c[0].Logit)
	for i := range c {
		c[i].P = float32(float64(c[i].P) / sum)
	}
}

// weigh sets each P to exp((Logit − mx)/temp), the unnormalized softmax
// weight relative to the largest logit mx, and returns their sum (float64).
func weigh(c []Candidate, temp, mx float32) float64 {
	var sum float64
	for i := range c {
		e := math.Exp(float64((c[i].Logit - mx) / temp))
		c[i].P = float32(e)
		sum += e
	}
	return sum
}

func (s *Sampler) penalize(logits []float32, history []int32) {
	p := &s.P
	rep := p.RepeatPenalty
	if (rep == 0 || rep == 1) && p.FreqPenalty == 0 && p.PresPenalty == 0 {
		return
	}
	if len(history) > p.PenaltyLastN {
		history = history[len(history)-p.PenaltyLastN:]
	}
	clear(s.counts)
	for _, t := range history {
		if t >= 0 && int(t) < len(logits) {
			s.counts[t]++
		}
	}
	for t, n := range s.counts {
		l := logits[t]
		if rep != 0 && rep != 1 {
			if l > 0 {
				l /= rep
			} else {
				l *= rep
			}
		}
		l -= float32(n)*p.FreqPenalty + p.PresPenalty
		logits[t] = l
	}
}
