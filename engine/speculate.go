package engine

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Speculative decoding. A decode step reads every weight once whatever the
// number of tokens it evaluates, so a sequence may carry k drafted tokens
// into the step: the model evaluates its last token and the drafts in one
// forward pass (one by one: each row is what a one-token decode would
// give, Batch.OneByOne), and the sequence's own generation chooses from
// each row in turn, exactly as without drafts. While its choice equals the
// next draft, that draft's row is already computed and the next is taken;
// the first choice that differs (or the choice after the last draft) ends
// the step, and the cache drops the positions of the drafts not taken.
//
// Drafters propose deterministically (n-gram lookup; the draft model's
// most likely token), so taking the generation's own choice and comparing
// it with the draft is the rejection rule of Leviathan et al. and Chen et
// al. with a one-hot draft distribution: a draft d is accepted with
// probability p(d), and a rejection's token is drawn from p without d
// renormalized. Each emitted token is one draw of the sequence's sampler
// from the model's distribution given the tokens before it — the same draw,
// from bit-identical logits, as without speculation — so the output is the
// same token for token, at any temperature, with logit bias, penalties and
// grammars. Speculation changes only how many forward passes it takes.

// SpecParams configure speculative decoding (llama.cpp's --draft-max,
// --draft-min, --draft-p-min).
type SpecParams struct {
	// Mode is "off", "ngram" (continue the longest recent repeat of the
	// sequence's own last tokens, else the engine-wide n-gram table every
	// sequence feeds) or "draft" (the draft model, Options.DraftModel).
	// In a Request each zero field takes the engine's (Options.Spec).
	Mode string
	Max  int     // tokens drafted per step at most (0: 16)
	Min  int     // a proposal shorter than this is not verified (0: none)
	PMin float32 // draft model: stop drafting where its top probability is below this (0: never; llama.cpp's default is 0.75)
	// Fixed drafts Max tokens (whatever the proposal holds) every step,
	// without adapting to the acceptance and the batch: for measurements.
	Fixed bool
}

// Speculation modes.
const (
	SpecOff   = "off"
	SpecNgram = "ngram"
	SpecDraft = "draft"
)

// resolve fills p's zero fields from def (the engine's) and the defaults,
// and checks it.
// specAllowed refuses speculation for a model with recurrent layers: a
// rejected draft would need their state as it was before it, which only
// checkpoints at block boundaries keep.
func (e *Engine) specAllowed(p SpecParams) error {
	if p.Mode != SpecOff && p.Mode != "" && e.model.Config().Hybrid() {
		return fmt.Errorf("engine: speculative decoding (%q) is not supported for %s: its recurrent layers' state cannot be rolled back to a rejected draft token", p.Mode, e.model.Config().Arch)
	}
	return nil
}

func (p SpecParams) resolve(def SpecParams, hasDraft bool) (SpecParams, error) {
	if p.Mode == "" {
		p.Mode = def.Mode
	}
	if p.Max == 0 {
		p.Max = def.Max
	}
	if p.Min == 0 {
		p.Min = def.Min
	}
	if p.PMin == 0 {
		p.PMin = def.PMin
	}
	p.Fixed = p.Fixed || def.Fixed
	switch p.Mode {
	case "", SpecOff:
		return SpecParams{Mode: SpecOff}, nil
	case SpecNgram:
	case SpecDraft:
		if !hasDraft {
			return p, fmt.Errorf("engine: speculation mode %q needs a draft model (Options.DraftModel, --model-draft)", p.Mode)
		}
	default:
		return p, fmt.Errorf("engine: speculation mode %q (want off, ngram or draft)", p.Mode)
	}
	switch {
	case p.Max < 0 || p.Max > maxDraft:
		return p, fmt.Errorf("engine: draft max %d (want 0 to %d)", p.Max, maxDraft)
	case p.Min < 0 || p.Min > 64:
		return p, fmt.Errorf("engine: draft min %d (want 0 to 64)", p.Min)
	case !(p.PMin >= 0 && p.PMin <= 1):
		return p, fmt.Errorf("engine: draft p-min %v (want 0 to 1)", p.PMin)
	}
	if p.Max == 0 {
		p.Max = 16
	}
	p.Min = min(p.Min, p.Max)
	return p, nil
}

// speculation is one sequence's drafting state.
type speculation struct {
	p      SpecParams
	acc    acceptance // how its drafts fare, by position
	seeded bool       // acc started from the engine's (scheduler.seed)
	lookup ngramIndex // the sequence's own n-grams
	drafts []int32    // this step's proposal
	row    int        // the verification row being chosen from (-1: none)
	draft  draftState // the sequence's cache in the draft model
}

// maxDraft is the most tokens a step drafts for one sequence (SpecParams.Max).
const maxDraft = 64

func newSpeculation(p SpecParams) *speculation {
	sp := &speculation{p: p, row: -1}
	sp.acc.reset()
	return sp
}

// acceptance estimates, for each position i of a proposal, the
// probability that the draft there is accepted given that the ones before
// it were: acceptance is not one rate per token. An n-gram proposal is
// either the text being copied, accepted to its end, or a wrong guess
// rejected at its first token, and a copied run ends where the copy
// diverges; a draft model's agreement decays along its guess. Per
// position, the estimates learn both.
type acceptance struct {
	p    [maxDraft]float64
	seen [maxDraft]int32 // observations of each position (capped)
}

func (a *acceptance) reset() {
	for i := range a.p {
		a.p[i], a.seen[i] = 0.5, 0
	}
}

// observe updates the estimates with one step's outcome: accepted of
// drafted tokens were taken; positions past the first rejection were not
// observed. A position's first observations weigh as a mean's (from a
// prior of one acceptance and one rejection), so a new sequence learns in
// a few steps; later ones decay at a fixed rate, so the estimate follows
// the text.
func (a *acceptance) observe(drafted, accepted int) {
	const rate = 0.15
	for i := range min(accepted+1, drafted, maxDraft) {
		x := 0.0
		if i < accepted {
			x = 1
		}
		if a.seen[i] < 16 {
			a.seen[i]++
		}
		a.p[i] += max(rate, 1/float64(a.seen[i]+2)) * (x - a.p[i])
	}
}

// seedFrom starts a new sequence's estimates from the engine's (what
// recent sequences of its mode saw), weighed as two observations, so its
// own steps soon decide.
func (a *acceptance) seedFrom(e *acceptance) {
	a.p = e.p
	for i, n := range e.seen {
		a.seen[i] = min(n, 2)
	}
}

// rest lets the first position's estimate recover toward even in a step
// that drafts nothing, so that a sequence whose guesses failed tries again.
func (a *acceptance) rest() {
	a.p[0] += 0.01 * (0.5 - a.p[0])
}

// costModel estimates a forward pass's time as c0 + c1·tokens from the
// steps it has seen (decayed least squares), so the scheduler knows what an
// extra token costs relative to the weights' read. stepCost fits its two
// parts of a pass with it too (x: tokens, or attended positions/1024).
type costModel struct {
	n, st, stt, sy, sty float64
}

func (c *costModel) add(tokens int, seconds float64) { c.addX(float64(tokens), seconds) }

func (c *costModel) addX(t, seconds float64) {
	const keep = 0.98
	c.n, c.st, c.stt = keep*c.n+1, keep*c.st+t, keep*c.stt+t*t
	c.sy, c.sty = keep*c.sy+seconds, keep*c.sty+t*seconds
}

// fit is the least-squares c0 and c1; ok false until the steps seen vary
// enough to fit them, or when either comes out ≤ 0.
func (c *costModel) fit() (c0, c1 float64, ok bool) {
	c0, c1, ok = c.line()
	return c0, c1, ok && c1 > 0 && c0 > 0
}

// line is the least-squares c0 and c1 of any sign; ok false until there
// are 8 steps and their x vary.
func (c *costModel) line() (c0, c1 float64, ok bool) {
	den := c.n*c.stt - c.st*c.st
	if c.n < 8 || den <= 1e-9*c.n*c.n {
		return 0, 0, false
	}
	c1 = (c.n*c.sty - c.st*c.sy) / den
	c0 = (c.sy - c1*c.st) / c.n
	return c0, c1, true
}

// ratio is c1/c0: an extra token's cost in units of a step's fixed cost
// (0.2 until fitted).
func (c *costModel) ratio() float64 {
	c0, c1, ok := c.fit()
	if !ok {
		return 0.2
	}
	return math.Min(math.Max(c1/c0, 0.005), 10)
}

// fixed is c0, a step's cost beyond its tokens' (0 until fitted; the mean
// one-token step then).
func (c *costModel) fixed() float64 {
	if c0, _, ok := c.fit(); ok {
		return c0
	}
	return 0
}

// draftLen is how many tokens to draft for a sequence whose acceptance
// estimates are a, in a step already holding t tokens, with extra cost r
// per token: a step of t tokens yields about t tokens for 1 + r·t, and the
// i-th draft adds a.p[0]·…·a.p[i] expected tokens for r more, so it pays
// while that product exceeds r·t/(1 + r·t). With one sequence and a cheap
// extra token that is almost always; at a full batch almost never.
func draftLen(a *acceptance, r float64, t, max int) int {
	theta := r * float64(t) / (1 + r*float64(t))
	k, p := 0, 1.0
	for k < min(max, maxDraft) {
		p *= a.p[k]
		if p <= theta {
			break
		}
		k++
	}
	return k
}

// ngramIndex maps each recent n-gram of a sequence (n = 2…4) to where its
// latest continuation starts, built incrementally as the sequence grows.
type ngramIndex struct {
	at   map[uint64]int32
	upTo int // continuations indexed: starts < upTo
}

const ngramMin, ngramMax = 2, 4

func ngramKey(toks []int32) uint64 {
	h := uint64(len(toks)) * 0x9e3779b97f4a7c15
	for _, t := range toks {
		h ^= uint64(uint32(t))
		h *= 0x100000001b3
		h ^= h >> 29
	}
	return h
}

// index adds the n-grams of tokens whose continuation is known.
func (x *ngramIndex) index(tokens []int32) {
	if x.at == nil {
		x.at = map[uint64]int32{}
	}
	for c := max(x.upTo, ngramMin); c < len(tokens); c++ {
		for n := ngramMin; n <= ngramMax && n <= c; n++ {
			x.at[ngramKey(tokens[c-n:c])] = int32(c)
		}
	}
	x.upTo = max(x.upTo, len(tokens))
}

// propose appends to dst k tokens continuing tokens' last n-gram where it
// last occurred (the longest n first), or none.
func (x *ngramIndex) propose(dst, tokens []int32, k int) []int32 {
	x.index(tokens)
	L := len(tokens)
	for n := min(ngramMax, L-1); n >= ngramMin; n-- {
		c, ok := x.at[ngramKey(tokens[L-n:])]
		if !ok || !slices.Equal(tokens[int(c)-n:c], tokens[L-n:]) {
			continue
		}
		// Past the end of tokens the copy goes on from its own start (as
		// LZ77's overlapping copy): a repeat that reaches the present is a
		// loop, which continues.
		start := len(dst)
		for i := range k {
			if src := int(c) + i; src < L {
				dst = append(dst, tokens[src])
			} else {
				dst = append(dst, dst[start+src-L])
			}
		}
		return dst
	}
	return dst
}

// ngramTable is the engine-wide n-gram table (llama.cpp's ngram-mod idea):
// a fixed number of slots, each the token that last followed a trigram
// (keyed by its hash, checked by 32 more bits), fed by every sequence's
// tokens and shared by all: constant memory and constant time per token.
type ngramTable struct {
	slots []ngramSlot
}

type ngramSlot struct {
	check uint32
	next  int32
}

const ngramTableSlots = 1 << 18 // 2 MiB

func (t *ngramTable) slot(tri []int32) (*ngramSlot, uint32) {
	if t.slots == nil {
		t.slots = make([]ngramSlot, ngramTableSlots)
	}
	h := ngramKey(tri)
	return &t.slots[h&(ngramTableSlots-1)], uint32(h>>32) | 1
}

// learn records what followed each trigram of tokens[from-3:].
func (t *ngramTable) learn(tokens []int32, from int) {
	for i := max(from, 3); i < len(tokens); i++ {
		s, check := t.slot(tokens[i-3 : i])
		*s = ngramSlot{check, tokens[i]}
	}
}

// propose appends to dst up to k tokens, each the one that last followed
// the three before it.
func (t *ngramTable) propose(dst, tokens []int32, k int) []int32 {
	if len(tokens) < 3 || t.slots == nil {
		return dst
	}
	var tri [3]int32
	copy(tri[:], tokens[len(tokens)-3:])
	for range k {
		s, check := t.slot(tri[:])
		if s.check != check {
			break
		}
		dst = append(dst, s.next)
		tri = [3]int32{tri[1], tri[2], s.next}
	}
	return dst
}

// drafted reports whether r verifies drafts (its sequence, at l cached
// positions, is decoding and carries them).
func (r run) drafted(l int) bool {
	return r.en.spec != nil && len(r.en.spec.drafts) > 0 && l >= r.en.nPrompt && r.n == 1+len(r.en.spec.drafts)
}

// draft gives the decoding sequences of runs their proposals for this
// step, within the step's token budget, the context and what each may
// still generate. A step that evaluates prompt chunks drafts nothing:
// it is compute-bound already, and drafts would take its products out of
// the batched order.
func (s *scheduler) draft(runs []run) {
	s.draftRan = false
	t := 0
	for _, r := range runs {
		t += r.n
		if r.en.spec != nil {
			r.en.spec.drafts = r.en.spec.drafts[:0]
		}
		if r.en.seq.Len() < r.en.nPrompt {
			return
		}
	}
	ratio := s.cost.ratio()
	open := s.gate.allow(t)
	var jobs []draftJob
	for i := range runs {
		en := runs[i].en
		sp := en.spec
		if sp == nil {
			continue
		}
		l := en.seq.Len()
		k := sp.p.Max
		if !sp.p.Fixed && !open {
			continue
		}
		if !sp.seeded {
			sp.acc.seedFrom(s.accOf(sp.p.Mode))
			sp.seeded = true
		}
		if !sp.p.Fixed {
			r := ratio
			if sp.p.Mode == SpecDraft {
				r += s.draftRatio()
			}
			k = draftLen(&sp.acc, r, t, sp.p.Max)
		}
		k = min(k, s.opts.stepTokens-t, s.e.ctxLen-1-l)
		if en.req.MaxTokens > 0 {
			k = min(k, en.req.MaxTokens-en.res.Generated-1)
		}
		if k <= 0 || k < sp.p.Min {
			sp.acc.rest()
			continue
		}
		switch sp.p.Mode {
		case SpecNgram:
			if s.testDrafter != nil {
				sp.drafts = append(sp.drafts[:0], s.testDrafter(en.tokens, k)...)
				break
			}
			sp.drafts = sp.lookup.propose(sp.drafts[:0], en.tokens, k)
			if len(sp.drafts) == 0 {
				sp.drafts = s.ngrams.propose(sp.drafts, en.tokens, k)
			}
		case SpecDraft:
			jobs = append(jobs, draftJob{en, k})
		}
		t += len(sp.drafts)
	}
	if len(jobs) > 0 {
		s.draftWithModel(jobs)
		s.draftRan = true
	}
	for i := range runs {
		sp := runs[i].en.spec
		if sp == nil {
			continue
		}
		if len(sp.drafts) < max(sp.p.Min, 1) {
			sp.drafts = sp.drafts[:0]
			continue
		}
		runs[i].n = 1 + len(sp.drafts)
	}
}

// undraft drops every proposal of runs (the cache has no room for them);
// false when there were none.
func (s *scheduler) undraft(runs []run) bool {
	any := false
	for i := range runs {
		if sp := runs[i].en.spec; sp != nil && len(sp.drafts) > 0 && runs[i].n > 1 && runs[i].en.seq.Len() >= runs[i].en.nPrompt {
			sp.drafts = sp.drafts[:0]
			runs[i].n = 1
			any = true
		}
	}
	return any
}

// verify chooses en's tokens from rows, the logits after its last token
// (at position l) and after each draft ([1+len(drafts)][nv]): while the
// generation's choice equals the next draft, it goes on to that draft's
// row; then the cache drops the drafts not taken.
func (s *scheduler) verify(en *entry, l int, rows []float32, nv int) {
	sp := en.spec
	drafts := sp.drafts
	accepted := 0
	ended := false
	en.res.Drafted += len(drafts) // before a finish copies the result
	for i := 0; i <= len(drafts); i++ {
		sp.row = i
		ended = s.next(en, rows[i*nv:(i+1)*nv])
		sp.row = -1
		if ended {
			break
		}
		if i == len(drafts) || en.tokens[len(en.tokens)-1] != drafts[i] {
			break
		}
		accepted++
	}
	s.observe(sp, len(drafts), accepted)
	s.local.SpecDrafts++
	s.local.SpecDraftTokens += int64(len(drafts))
	s.local.SpecAccepted += int64(accepted)
	sp.drafts = sp.drafts[:0]
	if !ended {
		// Keep the last token and the drafts taken; a draft ended the
		// sequence keeps its positions: their K and V are those tokens'.
		en.seq.Truncate(l + 1 + accepted)
	}
}

// specGate learns, for each number of decoding sequences, whether drafting
// pays on this machine and model, by what it measures: the time per
// emitted token of whole steps (drafting, verification rows, sampling and
// all) with drafts and without. The cost model's rule decides how much to
// draft; the gate can veto drafting altogether where, measured, it has
// not paid (a model so small that a step's fixed costs are not the
// weights' read, a draft model not cheap enough). Each measurement needs
// refreshing (the context grows, the batch changes), and each refresh
// costs what the other choice loses, so the gate pays for them in
// proportion: where drafting wins it keeps a baseline by a step without
// drafts when none was seen for 8 steps (32 when drafting is more than
// 1.5× faster; steps that found nothing to draft count as baseline), and
// where drafting loses it retries after 32 steps, doubling the wait after
// each retry that loses again, up to 1,024.
type specGate struct {
	b     [17]gateBucket // by min(decoding sequences, 16)
	steps uint64
}

type gateBucket struct {
	with, without gateSums
	since         int   // steps allowed drafts since the last baseline step
	vetoed        int   // steps since the last retry while vetoed
	backoff       uint8 // retries that lost in a row
	retrying      bool  // the step allowed is a vetoed bucket's retry
}

type gateSums struct{ sec, tok float64 }

func (g *gateSums) add(sec float64, tok int) {
	const keep = 0.9
	g.sec, g.tok = keep*g.sec+sec, keep*g.tok+float64(tok)
}

func (g gateSums) perToken() float64 { return g.sec / g.tok }

// allow reports whether this step may draft, with t decoding tokens.
func (g *specGate) allow(t int) bool {
	b := &g.b[min(t, 16)]
	g.steps++
	b.retrying = false
	w, wo := b.with.perToken(), b.without.perToken()
	switch {
	case b.without.tok < 4 || b.with.tok < 4: // no measurement yet: take both
		return g.steps%2 == 0
	case w < wo:
		b.vetoed, b.backoff = 0, 0
		period := 8
		if w < wo/1.5 {
			period = 32
		}
		if b.since >= period {
			return false
		}
		b.since++
		return true
	default:
		b.vetoed++
		if b.vetoed < 32<<min(b.backoff, 5) {
			return false
		}
		b.vetoed = 0
		b.retrying = true
		return true
	}
}

// kind says what a planned step is: its decoding sequences (0 when it
// evaluates prompt chunks, which the gate does not learn from) and
// whether it carries drafts.
func (g *specGate) kind(runs []run) (decoding int, drafted bool) {
	for _, r := range runs {
		l := r.en.seq.Len()
		if l < r.en.nPrompt {
			return 0, false
		}
		decoding++
		drafted = drafted || r.drafted(l)
	}
	return decoding, drafted
}

// record adds a decode step's time and emitted tokens.
func (g *specGate) record(decoding int, drafted bool, emitted int, d time.Duration) {
	if decoding == 0 || emitted <= 0 {
		return
	}
	b := &g.b[min(decoding, 16)]
	if !drafted {
		b.without.add(d.Seconds(), emitted)
		b.since = 0
		return
	}
	b.with.add(d.Seconds(), emitted)
	if b.retrying && b.with.perToken() >= b.without.perToken() {
		b.backoff++
	}
}

// observe adds one step's outcome to the sequence's acceptance estimates
// and to the engine's for its mode.
func (s *scheduler) observe(sp *speculation, drafted, accepted int) {
	sp.acc.observe(drafted, accepted)
	s.accOf(sp.p.Mode).observe(drafted, accepted)
}

// accOf is the engine's acceptance estimates for a mode, which every
// sequence speculating in it feeds and new ones start from.
func (s *scheduler) accOf(mode string) *acceptance {
	if mode == SpecDraft {
		return &s.accDraft
	}
	return &s.accNgram
}
