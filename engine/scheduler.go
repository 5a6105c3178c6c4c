package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/tokenizer"
)

// ErrOverloaded is returned by Submit when the waiting queue is full.
var ErrOverloaded = errors.New("engine: overloaded: too many requests waiting")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("engine: scheduler closed")

// SchedulerOptions configure continuous batching.
type SchedulerOptions struct {
	MaxRunning int // sequences evaluated together (default 8)
	StepTokens int // tokens per forward pass: decode tokens plus prompt chunks (default 256: a step of a 1B model on 2 cores then stays under a second)
	MaxWaiting int // requests queued beyond which Submit fails with ErrOverloaded (default 256)
}

// GenRequest is one generation submitted to the scheduler.
type GenRequest struct {
	Tokens      []int32 // the prompt, as it should be evaluated (BOS included)
	MaxTokens   int     // tokens to generate (0: until a stop or the context is full)
	Sample      sample.Params
	Stop        []string // stop strings: generation ends before the first one, which is not emitted
	IgnoreEOS   bool
	Logprobs    bool // report each token's log-probability
	TopLogprobs int  // and this many of the most likely tokens
	N           int  // choices sampled from one prompt evaluation (0: 1); choice i>0 seeds with Seed+i
	// LogitBias is added to the logits of these tokens before sampling
	// (-100 or less bans a token); log-probabilities stay the model's.
	LogitBias map[int32]float32
	// Grammar, when set, constrains each choice to its language; a choice
	// ends ("stop") when its grammar is complete and nothing can follow.
	Grammar *grammar.Grammar
}

// Scheduler runs many generations at once on one engine (continuous
// batching): each step evaluates one batch made of every running
// sequence's next token plus chunks of waiting prompts under a token
// budget, so a long prompt does not stall the others' decoding. Prompts
// that begin with cached blocks reuse them. When the KV pool runs out, the
// most recently admitted sequence is preempted (its blocks freed, its
// tokens recomputed later) rather than failing.
//
// A sequence's logits do not depend on what else runs: attention sums in
// the order fixed by the sequence's own run of tokens (prompt chunks are
// never split into a one-token run unless the prompt is one token), and
// the quantized matrix products are per token. Exceptions, within the
// reference tolerances: F16/BF16/F32 and IQ4_NL weights, whose products
// llama.cpp (and Loom) sum in another order for batches of two or more
// tokens, and reused blocks that another sequence computed as generated
// (one-token) positions.
type Scheduler struct {
	e    *Engine
	opts SchedulerOptions

	mu      sync.Mutex
	cond    chan struct{} // wakes the loop
	waiting []*entry
	closed  bool
	stats   SchedStats // published copy of local

	// checks bounds the grammar first-mask checks Submit runs at once in
	// its callers' goroutines (each may take up to the grammar's
	// MaxCallWork of CPU and MaxMemory of caches); checkHook, when set (by
	// tests), runs inside a slot just before the check.
	checks    chan struct{}
	checkHook func()

	// owned by the loop
	local    SchedStats
	running  []*entry
	admitSeq uint64
	batch    model.Batch
	logits   []float32
	done     chan struct{}
}

// SchedStats are cumulative counters and current gauges.
type SchedStats struct {
	Running, Waiting int
	PromptTokens     int64 // prompt positions requested
	CachedTokens     int64 // of which reused from the prefix cache
	ComputedTokens   int64 // prompt positions evaluated
	GeneratedTokens  int64
	Preemptions      int64
	Steps            int64
	KVBlocks, KVUsed int
	KVCached         int
}

// entry is one sequence in the scheduler.
type entry struct {
	ctx     context.Context
	req     GenRequest
	stream  *Stream
	sampler *sample.Sampler
	cons    *constraint // nil without a grammar
	seq     *kvcache.Seq
	tokens  []int32 // prompt + generated; the cache holds tokens[:seq.Len()]
	nPrompt int
	admit   uint64
	text    *tokenizer.Stream
	stop    stopFilter
	forks   []*entry // choices 1..N-1, forked when the prompt is done
	logp    []float32
	t0      time.Time
	res     GenResult
}

// NewScheduler starts a scheduler on e. Direct engine calls (Session,
// Generate) may run alongside it: evaluation is serialized.
func (e *Engine) NewScheduler(opts SchedulerOptions) *Scheduler {
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = 8
	}
	if opts.StepTokens <= 0 {
		opts.StepTokens = 256
	}
	opts.StepTokens = max(opts.StepTokens, 2)
	opts.MaxRunning = min(opts.MaxRunning, opts.StepTokens)
	if opts.MaxWaiting <= 0 {
		opts.MaxWaiting = 256
	}
	s := &Scheduler{e: e, opts: opts, cond: make(chan struct{}, 1), done: make(chan struct{}),
		checks: make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))}
	go s.loop()
	return s
}

// Submit queues a request; its streams (N of them) deliver the tokens. A
// cancelled ctx ends the request within one step and frees its cache.
// Besides invalid requests, it fails with ErrOverloaded, ErrClosed, and,
// for a grammar no token can begin, ErrGrammarDeadEnd (or the grammar's
// limit error, errors.Is grammar.ErrLimit, when its first mask costs too
// much). Grammar checks run a few at a time (see Scheduler.checks): a
// grammar request waits for a slot, and fails with ctx's error if ctx
// ends first.
func (s *Scheduler) Submit(ctx context.Context, req GenRequest) ([]*Stream, error) {
	if len(req.Tokens) == 0 {
		return nil, errors.New("engine: empty prompt")
	}
	if len(req.Tokens) >= s.e.ctxLen {
		return nil, fmt.Errorf("engine: prompt of %d tokens does not fit the context of %d", len(req.Tokens), s.e.ctxLen)
	}
	nv := int32(s.e.model.Config().NVocab)
	for i, t := range req.Tokens {
		if t < 0 || t >= nv {
			return nil, fmt.Errorf("engine: prompt token %d at index %d is outside the vocabulary (%d)", t, i, nv)
		}
	}
	if req.MaxTokens < 0 || req.N < 0 || req.TopLogprobs < 0 {
		return nil, errors.New("engine: negative max tokens, choices or top logprobs")
	}
	for id := range req.LogitBias {
		if id < 0 || id >= nv {
			return nil, fmt.Errorf("engine: logit bias for token %d outside the vocabulary (%d)", id, nv)
		}
	}
	// Refuse early what the queue would refuse anyway, before paying for
	// a grammar check (tested again below, under the same lock as the
	// enqueue).
	if err := s.admissible(); err != nil {
		return nil, err
	}
	n := max(req.N, 1)
	now := time.Now()
	mk := func(i int) *entry {
		p := req.Sample
		if i > 0 {
			p.Seed += uint64(i)
		}
		en := &entry{ctx: ctx, req: req, stream: newStream(i), sampler: sample.New(p),
			tokens: slices.Clone(req.Tokens), nPrompt: len(req.Tokens), t0: now,
			text: s.e.Vocab.NewStream(len(req.Tokens) == 1 && req.Tokens[0] == s.e.Vocab.BOS),
			stop: stopFilter{stops: req.Stop}, cons: s.e.newConstraint(req.Grammar)}
		en.res.PromptTokens = len(req.Tokens)
		return en
	}
	var head *entry
	if req.Grammar == nil {
		head = mk(0)
	} else {
		// A grammar no token can begin (or whose first mask passes the
		// grammar's limits) fails here, before anything streams: the
		// first mask is computed now, off the scheduler's loop (the
		// matcher keeps it for the first step), in one of a few slots.
		select {
		case s.checks <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		err := func() error {
			defer func() { <-s.checks }()
			head = mk(0)
			if s.checkHook != nil {
				s.checkHook()
			}
			if err := head.cons.check(); err != nil {
				head.cons.release()
				return err
			}
			return nil
		}()
		if err != nil {
			return nil, err
		}
	}
	streams := []*Stream{head.stream}
	for i := 1; i < n; i++ {
		f := mk(i)
		head.forks = append(head.forks, f)
		streams = append(streams, f.stream)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.admissibleLocked(); err != nil {
		for _, en := range append([]*entry{head}, head.forks...) {
			en.cons.release() // back to the pool
		}
		return nil, err
	}
	s.waiting = append(s.waiting, head)
	s.signal()
	return streams, nil
}

// admissible reports whether a request would be queued now: nil, or
// ErrClosed, or ErrOverloaded.
func (s *Scheduler) admissible() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admissibleLocked()
}

func (s *Scheduler) admissibleLocked() error {
	switch {
	case s.closed:
		return ErrClosed
	case len(s.waiting) >= s.opts.MaxWaiting:
		return ErrOverloaded
	}
	return nil
}

func (s *Scheduler) signal() {
	select {
	case s.cond <- struct{}{}:
	default:
	}
}

// Stats returns the current counters.
func (s *Scheduler) Stats() SchedStats {
	s.mu.Lock()
	st := s.stats
	st.Waiting = len(s.waiting)
	s.mu.Unlock()
	ci := s.e.Cache()
	st.KVBlocks, st.KVUsed, st.KVCached = ci.Blocks, ci.Used, ci.Cached
	return st
}

// Close cancels every request and stops the loop.
func (s *Scheduler) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.signal()
	}
	s.mu.Unlock()
	<-s.done
}

func (s *Scheduler) loop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		closed := s.closed
		idle := len(s.running) == 0 && len(s.waiting) == 0
		s.mu.Unlock()
		if closed {
			s.shutdown()
			return
		}
		if idle {
			<-s.cond
			continue
		}
		s.step()
	}
}

// shutdown ends every request.
func (s *Scheduler) shutdown() {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.mu.Lock()
	all := append(s.running, s.waiting...)
	s.running, s.waiting = nil, nil
	s.mu.Unlock()
	for _, en := range all {
		s.end(en, "cancelled", ErrClosed)
	}
	s.publish()
}

// run is one sequence's share of a step.
type run struct {
	en *entry
	n  int
}

// step admits waiting requests, builds one batch, evaluates it and samples.
func (s *Scheduler) step() {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()

	// Cancelled requests leave first, so their blocks serve this step.
	s.mu.Lock()
	s.waiting = s.dropCancelled(s.waiting)
	s.mu.Unlock()
	s.running = s.dropCancelled(s.running)

	// Admit in arrival order (preempted requests are back at the front)
	// while the pool has room for the new sequence's uncached tokens. A
	// request whose next prompt block another sequence is computing now
	// waits for it (requests sharing a system prompt arrive together).
	inflight := map[uint64]bool{}
	for _, en := range s.running {
		s.markInflight(inflight, en)
	}
	s.mu.Lock()
	for i := 0; i < len(s.waiting) && len(s.running) < s.opts.MaxRunning; {
		en := s.waiting[i]
		switch s.admit(en, inflight) {
		case admitWait:
			i++
			continue
		case admitNoRoom:
			i = len(s.waiting)
			continue
		}
		s.waiting = slices.Delete(s.waiting, i, i+1)
		s.running = append(s.running, en)
		s.markInflight(inflight, en)
	}
	s.mu.Unlock()

	runs := s.plan()
	if len(runs) == 0 {
		s.publish()
		return
	}
	s.evaluate(runs)
	s.local.Steps++
	s.publish()
}

// publish copies the loop's counters for Stats.
func (s *Scheduler) publish() {
	s.local.Running = len(s.running)
	s.mu.Lock()
	s.stats = s.local
	s.mu.Unlock()
}

// dropCancelled ends the entries whose context is done and returns the rest.
func (s *Scheduler) dropCancelled(ens []*entry) []*entry {
	return slices.DeleteFunc(ens, func(en *entry) bool {
		if en.ctx.Err() != nil {
			s.end(en, "cancelled", nil)
			return true
		}
		return false
	})
}

// markInflight records the prompt blocks en is about to compute.
func (s *Scheduler) markInflight(inflight map[uint64]bool, en *entry) {
	if en.seq.Len() < en.nPrompt {
		for _, h := range en.seq.PendingHashes(en.tokens[:en.nPrompt]) {
			inflight[h] = true
		}
	}
}

type admission int

const (
	admitted    admission = iota
	admitWait             // its next prompt block is being computed by another sequence
	admitNoRoom           // the pool lacks room while other sequences run
)

// admit gives en a sequence, reusing cached blocks of its tokens. Unless
// it returns admitted, nothing changed.
func (s *Scheduler) admit(en *entry, inflight map[uint64]bool) admission {
	en.seq = s.e.kv.NewSeq()
	lim := len(en.tokens) - 1 // the last token is evaluated for its logits
	if len(en.tokens) == en.nPrompt {
		lim-- // and a prompt keeps a run of two (its attention order)
	}
	if lim > 0 {
		en.seq.Reuse(en.tokens[:lim])
	}
	if m := en.seq.Len(); m > 0 && m < en.nPrompt && en.nPrompt-m < 2 {
		en.seq.Truncate(m - kvcache.BlockSize)
	}
	if len(s.running) > 0 && en.seq.Len() < en.nPrompt && en.nPrompt > 2 {
		// Wait only for a block that leaves the prompt two tokens to run.
		if next := en.seq.PendingHashes(en.tokens[:en.nPrompt-2]); len(next) > 0 && inflight[next[0]] {
			en.seq.Free()
			en.seq = nil
			return admitWait
		}
	}
	if len(s.running) > 0 && en.seq.Need(len(en.tokens)-en.seq.Len()+1) > s.e.kv.Available() {
		en.seq.Free()
		en.seq = nil
		return admitNoRoom
	}
	s.admitSeq++
	en.admit = s.admitSeq
	if en.res.Preempted == 0 {
		en.res.CachedTokens = min(en.seq.Len(), en.nPrompt)
		s.local.PromptTokens += int64(en.nPrompt)
		s.local.CachedTokens += int64(en.res.CachedTokens)
	}
	return admitted
}

// plan chooses this step's runs: one token for every decoding sequence,
// then prompt chunks in admission order under the step's token budget, and
// makes cache room for them, preempting the newest sequences if needed.
func (s *Scheduler) plan() []run {
	for {
		var runs []run
		budget := s.opts.StepTokens
		for _, en := range s.running {
			if en.seq.Len() >= en.nPrompt && en.seq.Len() < len(en.tokens) {
				runs = append(runs, run{en, 1})
				budget--
			}
		}
		for _, en := range s.running {
			l := en.seq.Len()
			if l >= en.nPrompt {
				continue
			}
			rem := en.nPrompt - l
			c := min(rem, budget)
			if rem-c == 1 {
				c-- // never leave a one-token run behind
			}
			if c < 2 && rem >= 2 || c <= 0 {
				continue
			}
			runs = append(runs, run{en, c})
			budget -= c
		}
		victim := s.reserve(runs)
		if victim == nil {
			return runs
		}
		if len(s.running) == 1 {
			s.running = s.running[:0]
			s.end(victim, "error", fmt.Errorf("engine: the KV cache (%d blocks of %d positions) cannot hold this sequence", s.e.kv.NBlocks, kvcache.BlockSize))
			continue
		}
		s.preempt(victim)
	}
}

// reserve makes room for runs; on failure it returns the sequence to
// preempt (the most recently admitted).
func (s *Scheduler) reserve(runs []run) *entry {
	for _, r := range runs {
		if err := r.en.seq.Reserve(r.n); err != nil {
			return slices.MaxFunc(s.running, func(a, b *entry) int { return int(a.admit) - int(b.admit) })
		}
	}
	return nil
}

// preempt frees en's cache and puts it back at the front of the queue; its
// tokens so far are recomputed when it is admitted again.
func (s *Scheduler) preempt(en *entry) {
	s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
	en.seq.Free()
	en.seq = nil
	en.res.Preempted++
	s.local.Preemptions++
	s.mu.Lock()
	s.waiting = append([]*entry{en}, s.waiting...)
	s.mu.Unlock()
}

// evaluate runs one forward pass over runs and samples every sequence
// whose last pending token was evaluated.
func (s *Scheduler) evaluate(runs []run) {
	e := s.e
	b := &s.batch
	b.Tokens, b.Pos, b.Seq, b.Logits, b.Seqs = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0], b.Seqs[:0]
	var sampled []*entry
	for i, r := range runs {
		l := r.en.seq.Len()
		for k := range r.n {
			b.Tokens = append(b.Tokens, r.en.tokens[l+k])
			b.Pos = append(b.Pos, int32(l+k))
			b.Seq = append(b.Seq, int32(i))
			b.Logits = append(b.Logits, k == r.n-1 && l+r.n == len(r.en.tokens))
		}
		if l+r.n == len(r.en.tokens) {
			sampled = append(sampled, r.en)
		}
		if l < r.en.nPrompt {
			r.en.res.Computed += r.n
			s.local.ComputedTokens += int64(r.n)
		}
		b.Seqs = append(b.Seqs, r.en.seq)
	}
	nv := e.model.Config().NVocab
	if need := len(sampled) * nv; len(s.logits) < need {
		s.logits = make([]float32, need)
	}
	if _, err := e.runner.Forward(b, s.logits); err != nil {
		for _, r := range runs { // cannot happen with reserved blocks; never hang on it
			s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == r.en })
			s.end(r.en, "error", err)
		}
		return
	}
	for i, en := range sampled {
		lg := s.logits[i*nv : (i+1)*nv]
		if len(en.forks) > 0 { // the prompt is done: the other choices start here
			for _, f := range en.forks {
				f.seq = en.seq.Fork()
				f.admit = en.admit
				f.res.CachedTokens, f.res.Computed = en.res.CachedTokens, en.res.Computed
				s.running = append(s.running, f)
				s.next(f, slices.Clone(lg))
			}
			en.forks = nil
		}
		s.next(en, lg)
	}
}

// next samples en's next token from its logits and delivers it.
func (s *Scheduler) next(en *entry, lg []float32) {
	var ev TokenEvent
	var lse float64
	if en.req.Logprobs || en.req.TopLogprobs > 0 {
		lse = LogSumExp(lg)
		if en.req.TopLogprobs > 0 { // TopK(lg, 0) indexes top[-1]
			for _, t := range TopK(lg, en.req.TopLogprobs) {
				ev.Top = append(ev.Top, TokenLogprob{t.ID, float32(float64(t.Logit) - lse)})
			}
		}
	}
	raw := lg
	if en.req.Logprobs {
		raw = slices.Clone(lg) // the sampler's penalties change lg
	}
	for id, b := range en.req.LogitBias {
		if int(id) < len(lg) {
			if b <= -100 {
				lg[id] = float32(math.Inf(-1))
			} else {
				lg[id] += b
			}
		}
	}
	var tok int32
	if en.cons != nil {
		var err error
		if tok, err = en.cons.sample(en.sampler, lg, en.tokens); err != nil {
			s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
			s.end(en, "error", err)
			return
		}
	} else {
		tok = en.sampler.Sample(lg, en.tokens)
	}
	if en.res.Generated == 0 {
		en.res.TTFT = time.Since(en.t0)
	}
	if s.e.Vocab.IsEOG(tok) && (!en.req.IgnoreEOS || en.cons != nil) {
		s.finish(en, "stop", true)
		return
	}
	if en.cons != nil {
		if err := en.cons.accept(tok); err != nil {
			s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
			s.end(en, "error", err)
			return
		}
	}
	ev.ID = tok
	if en.req.Logprobs {
		ev.Logprob = float32(float64(raw[tok]) - lse)
	}
	en.tokens = append(en.tokens, tok)
	en.res.Generated++
	s.local.GeneratedTokens++
	text, stopped := en.stop.add(en.text.Add(tok))
	ev.Text, ev.At = text, time.Now()
	en.stream.push(ev)
	switch {
	case stopped:
		s.finish(en, "stop", false)
	case en.cons != nil && en.cons.final():
		s.finish(en, "stop", true)
	case en.req.MaxTokens > 0 && en.res.Generated >= en.req.MaxTokens:
		s.finish(en, "length", true)
	case len(en.tokens) >= s.e.ctxLen:
		s.finish(en, "length", true)
	}
}

// finish ends a running sequence normally. Unless a stop string ended it
// (what follows one is dropped), text still held back is released as a
// last event with ID -1.
func (s *Scheduler) finish(en *entry, reason string, flush bool) {
	if flush {
		t, _ := en.stop.add(en.text.Flush())
		if t += en.stop.flush(); t != "" {
			en.stream.push(TokenEvent{ID: -1, Text: t})
		}
	}
	s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
	s.end(en, reason, nil)
}

// end frees en's cache and closes its stream (and its unforked choices').
func (s *Scheduler) end(en *entry, reason string, err error) {
	if en.seq != nil {
		en.seq.Free()
		en.seq = nil
	}
	if en.cons != nil {
		en.cons.release()
		en.cons = nil
	}
	en.res.FinishReason, en.res.Err = reason, err
	en.res.Duration = time.Since(en.t0)
	en.stream.finish(en.res)
	for _, f := range en.forks {
		s.end(f, reason, err)
	}
	en.forks = nil
}
