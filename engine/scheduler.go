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

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
)

// ErrOverloaded is returned by Submit when the waiting queue is full.
var ErrOverloaded = errors.New("engine: overloaded: too many requests waiting")

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("engine: closed")

// ErrSequenceBusy is returned by Submit for a request whose Sequence
// another request is using.
var ErrSequenceBusy = errors.New("engine: the sequence is in use by another request")

// scheduler runs every generation and evaluation on an engine (continuous
// batching): each step evaluates one batch made of every running
// sequence's next token plus chunks of waiting prompts under a token
// budget, so a long prompt does not stall the others' decoding. Prompts
// that begin with cached blocks reuse them. When the KV pool runs out, the
// most recently admitted sequence is preempted (its blocks freed, its
// tokens recomputed later) rather than failing.
//
// A sequence's logits do not depend on what else runs: attention sums in
// the order fixed by the sequence's own run of tokens (a prompt's chunks
// in the batched order, a one-token chunk too — Batch.Batched; a one-token
// chunk runs only beside decoding tokens, when the chunk-latency limit
// leaves no room for two), and the quantized matrix products are per
// token. Exceptions, within the
// reference tolerances: F16/BF16/F32 and IQ4_NL weights, whose products
// llama.cpp (and Loom) sum in another order for batches of two or more
// tokens, and reused blocks that another sequence computed as generated
// (one-token) positions.
type scheduler struct {
	e    *Engine
	opts schedOptions

	mu      sync.Mutex
	cond    chan struct{} // wakes the loop
	room    chan struct{} // closed (and replaced) when waiting requests leave the queue
	waiting []*entry
	closed  bool
	stats   SchedStats // published copy of local

	// checks bounds the grammar first-mask checks Submit runs at once in
	// its callers' goroutines (each may take up to the grammar's
	// MaxCallWork of CPU and MaxMemory of caches); checkHook, when set (by
	// tests), runs inside a slot just before the check.
	checks    chan struct{}
	checkHook func()
	// testDrafter, when set (by tests), replaces the n-gram drafter.
	testDrafter func(tokens []int32, k int) []int32

	// owned by the loop
	local    SchedStats
	running  []*entry
	admitSeq uint64
	batch    model.Batch
	logits   []float32
	runs     []run
	filling  []*entry // plan's scratch: sequences with prompt left, shortest first
	inflight map[uint64]bool
	cost     costModel  // a forward pass's time by its tokens
	depth    stepCost   // and by its tokens and attended positions (chunking.go)
	gate     specGate   // whether drafting pays, by the number of decoding sequences
	ngrams   ngramTable // what followed each trigram, fed by every sequence
	// how drafts fare by position, over every sequence of each mode
	accNgram, accDraft acceptance
	// the draft model's batch, logits and cost (draft.go)
	dbatch model.Batch
	// draftCatchUp is the most tokens a drafting step fed the draft model
	// to bring a sequence's draft cache up to its tokens (tests read it:
	// after a prompt it is the tokens accepted since, not the prompt).
	draftCatchUp int
	// draftRan: the draft model ran in this step's planning (draft.go).
	draftRan    bool
	dlogits     []float32
	draftTime   time.Duration
	draftRounds int
	done        chan struct{}
}

// schedOptions configure continuous batching (from Options).
type schedOptions struct {
	maxRunning int // sequences evaluated together
	stepTokens int // tokens per forward pass: decode tokens plus prompt chunks
	maxWaiting int // requests queued beyond which Submit fails with ErrOverloaded
	// chunkLatency bounds a step holding prompt chunks to this many times
	// the decode-only step (Options.ChunkLatency; 0: the token budget only).
	chunkLatency float64
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
	// CacheUsage is the share of the cache's memory that sequences hold:
	// their K/V blocks and, for a hybrid model, their recurrent states
	// (vLLM's kv_cache_usage_perc, as a fraction).
	CacheUsage float64
	// Speculative decoding: steps in which a sequence carried drafts,
	// the tokens drafted, and those accepted (vLLM's
	// spec_decode_num_drafts, _num_draft_tokens, _num_accepted_tokens).
	SpecDrafts, SpecDraftTokens, SpecAccepted int64
	// RunningAdapters and WaitingAdapters name the LoRA adapters (by ID)
	// that running and waiting requests apply, each once, ascending
	// (vLLM's lora_requests_info).
	RunningAdapters, WaitingAdapters []int
}

// entry is one sequence in the scheduler: its generation and where it is.
type entry struct {
	*generation
	ctx    context.Context
	stream *Stream
	seq    *kvcache.Seq
	keep   *Sequence    // req.Sequence: receives seq at the end
	spec   *speculation // nil: no speculative decoding
	admit  uint64
	forks  []*entry  // choices 1..N-1, forked when the prompt is done
	pooled []float32 // an embedding request's hidden rows so far ([rows, dim]: Request.Embed)
	// adapters are the LoRA adapters its products apply; salt keys its
	// cache blocks by them (kvcache.NewSeqSalted; 0: none).
	adapters []model.AdapterScale
	salt     uint64
	t0       time.Time
	tAdmit   time.Time // first admission
	tFirst   time.Time // first token
}

func newScheduler(e *Engine, opts schedOptions) *scheduler {
	s := &scheduler{e: e, opts: opts, cond: make(chan struct{}, 1), room: make(chan struct{}), done: make(chan struct{}),
		checks: make(chan struct{}, max(2, runtime.GOMAXPROCS(0))), inflight: map[uint64]bool{}}
	s.accNgram.reset()
	s.accDraft.reset()
	go s.loop()
	return s
}

// Submit queues a request; its streams (N of them) deliver the tokens. A
// cancelled ctx ends the request within one step and frees its cache.
// Besides invalid requests, it fails with ErrOverloaded, ErrClosed,
// ErrSequenceBusy and, for a grammar no token can begin,
// ErrGrammarDeadEnd (or the grammar's limit error, errors.Is
// grammar.ErrLimit, when its first mask costs too much). Grammar checks
// run a few at a time: a grammar request waits for a slot, and fails with
// ctx's error if ctx ends first.
func (e *Engine) Submit(ctx context.Context, req Request) ([]*Stream, error) {
	return e.sched.submit(ctx, req)
}

func (s *scheduler) submit(ctx context.Context, req Request) ([]*Stream, error) {
	tokens := req.Tokens
	if tokens == nil {
		tokens = s.e.vocab.Encode(req.Prompt, true, false)
		if len(tokens) == 0 && s.e.vocab.BOS >= 0 {
			tokens = []int32{s.e.vocab.BOS}
		}
	}
	if err := req.validate(tokens, s.e.model.Config().NVocab, s.e.ctxLen); err != nil {
		return nil, err
	}
	if err := req.validateKind(s.e.model.Config().Embedding()); err != nil {
		return nil, err
	}
	spec, err := req.Spec.resolve(s.e.spec, s.e.draft != nil)
	if err != nil {
		return nil, err
	}
	if err := s.e.specAllowed(spec); err != nil {
		return nil, err
	}
	adapters, salt, err := s.e.adapters(req.LoRA)
	if err != nil {
		return nil, err
	}
	// Refuse early what the queue would refuse anyway, before paying for
	// a grammar check (tested again below, under the same lock as the
	// enqueue).
	if err := s.admissible(nil); err != nil {
		return nil, err
	}
	rq := &req
	n := max(req.N, 1)
	now := time.Now()
	mk := func(i int) *entry {
		en := &entry{generation: newGeneration(s.e, rq, slices.Clone(tokens), i), ctx: ctx, stream: newStream(i), t0: now,
			adapters: adapters, salt: salt}
		if i == 0 {
			en.keep = req.Sequence
		}
		if spec.Mode != SpecOff && !req.EvalOnly {
			en.spec = newSpeculation(spec)
		}
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
				head.release()
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
	if err := s.admissibleLocked(req.Sequence); err != nil {
		for _, en := range append([]*entry{head}, head.forks...) {
			en.release() // matchers back to the pool
		}
		return nil, err
	}
	if req.Sequence != nil && !req.Sequence.busy.CompareAndSwap(false, true) {
		for _, en := range append([]*entry{head}, head.forks...) {
			en.release()
		}
		return nil, ErrSequenceBusy
	}
	s.waiting = append(s.waiting, head)
	s.signal()
	return streams, nil
}

// waitRoom waits until the waiting queue has room (or the scheduler is
// closed, or ctx ends: its error).
func (s *scheduler) waitRoom(ctx context.Context) error {
	for {
		s.mu.Lock()
		err, room := s.admissibleLocked(nil), s.room
		s.mu.Unlock()
		if !errors.Is(err, ErrOverloaded) {
			return err
		}
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// admissible reports whether a request (continuing seq, if not nil) would
// be queued now: nil, or ErrClosed, ErrOverloaded or ErrSequenceBusy.
func (s *scheduler) admissible(seq *Sequence) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admissibleLocked(seq)
}

func (s *scheduler) admissibleLocked(seq *Sequence) error {
	switch {
	case s.closed:
		return ErrClosed
	case len(s.waiting) >= s.opts.maxWaiting:
		return ErrOverloaded
	case seq != nil && seq.busy.Load():
		return ErrSequenceBusy
	case seq != nil && seq.e != s.e:
		return errors.New("engine: the sequence belongs to another engine")
	}
	return nil
}

func (s *scheduler) signal() {
	select {
	case s.cond <- struct{}{}:
	default:
	}
}

// Stats returns the scheduler's current counters.
func (e *Engine) Stats() SchedStats {
	s := e.sched
	s.mu.Lock()
	st := s.stats
	st.Waiting = len(s.waiting)
	s.mu.Unlock()
	ci := e.Cache()
	st.KVBlocks, st.KVUsed, st.KVCached = ci.Blocks, ci.Used, ci.Cached
	st.CacheUsage = ci.usage()
	return st
}

// close cancels every request and stops the loop.
func (s *scheduler) close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.signal()
	}
	s.mu.Unlock()
	<-s.done
}

func (s *scheduler) loop() {
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
func (s *scheduler) shutdown() {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.mu.Lock()
	all := append(s.running, s.waiting...)
	s.running, s.waiting = nil, nil
	s.mu.Unlock()
	for _, en := range all {
		s.end(en, FinishCancelled, "", ErrClosed)
	}
	s.publish()
}

// run is one sequence's share of a step.
type run struct {
	en *entry
	n  int
}

// step admits waiting requests, builds one batch, evaluates it and samples.
func (s *scheduler) step() {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()

	// Cancelled requests leave first, so their blocks serve this step.
	s.running = s.dropCancelled(s.running)

	// Admit in arrival order (preempted requests are back at the front)
	// while the pool has room for the new sequence's uncached tokens. A
	// request whose next prompt block another sequence is computing now
	// waits for it (requests sharing a system prompt arrive together).
	inflight := s.inflight
	clear(inflight)
	for _, en := range s.running {
		s.markInflight(inflight, en)
	}
	// The waiting requests are checked for cancellation under the same
	// lock as their admission: a request Submit queued with a context
	// already done, between a check and the admission, once ran a step.
	s.mu.Lock()
	n := len(s.waiting)
	if s.waiting = s.dropCancelled(s.waiting); len(s.waiting) < n {
		close(s.room)
		s.room = make(chan struct{})
	}
	for i := 0; i < len(s.waiting) && len(s.running) < s.opts.maxRunning; {
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
		close(s.room)
		s.room = make(chan struct{})
	}
	s.mu.Unlock()

	t0 := time.Now()
	generated := s.local.GeneratedTokens
	runs := s.plan()
	if len(runs) == 0 {
		s.publish()
		return
	}
	decoding, drafted := s.gate.kind(runs)
	// A step whose draft-model rounds proposed nothing paid for them all
	// the same: the gate weighs it as a drafting step.
	drafted = drafted || decoding > 0 && s.draftRan
	s.draftPrefill(runs)
	s.evaluate(runs)
	s.gate.record(decoding, drafted, int(s.local.GeneratedTokens-generated), time.Since(t0))
	s.local.Steps++
	s.publish()
}

// publish copies the loop's counters for Stats.
func (s *scheduler) publish() {
	s.local.Running = len(s.running)
	if len(s.e.loras) > 0 {
		s.local.RunningAdapters = s.e.adapterIDs(s.local.RunningAdapters[:0], s.running)
	}
	s.mu.Lock()
	s.stats = s.local
	if len(s.e.loras) > 0 {
		s.stats.RunningAdapters = slices.Clone(s.local.RunningAdapters)
		s.stats.WaitingAdapters = s.e.adapterIDs(nil, s.waiting)
	}
	s.mu.Unlock()
}

// dropCancelled ends the entries whose context is done and returns the rest.
func (s *scheduler) dropCancelled(ens []*entry) []*entry {
	return slices.DeleteFunc(ens, func(en *entry) bool {
		if en.ctx.Err() != nil {
			s.end(en, FinishCancelled, "", nil)
			return true
		}
		return false
	})
}

// markInflight records the prompt blocks en is about to compute.
func (s *scheduler) markInflight(inflight map[uint64]bool, en *entry) {
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
func (s *scheduler) admit(en *entry, inflight map[uint64]bool) admission {
	lim := len(en.tokens) - 1 // the last token is evaluated for its logits
	if len(en.tokens) == en.nPrompt {
		lim-- // and a prompt keeps a run of two (its attention order)
	}
	if en.keep != nil && en.keep.seq != nil {
		// A kept sequence: its cache holds as far as it agrees with the
		// prompt. It is the request's whatever the pool's state.
		en.seq, en.keep.seq = en.keep.seq, nil
		if en.seq.Salt() != en.salt { // computed with other adapters: start over
			en.seq.Free()
			en.seq = s.e.kv.NewSeqSalted(en.salt)
		}
		en.seq.Truncate(min(commonPrefix(en.seq.Tokens(), en.tokens), max(lim, 0)))
		s.admitted(en)
		return admitted
	}
	en.seq = s.e.kv.NewSeqSalted(en.salt)
	if lim > 0 && en.req.Logits == nil && (en.req.Embed == nil || s.e.model.Config().PoolLastToken()) {
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
	s.admitted(en)
	return admitted
}

// admitted counts en's admission.
func (s *scheduler) admitted(en *entry) {
	s.admitSeq++
	en.admit = s.admitSeq
	if en.res.Preempted == 0 {
		en.tAdmit = time.Now()
		en.res.CachedTokens = min(en.seq.Len(), en.nPrompt)
		s.local.PromptTokens += int64(en.nPrompt)
		s.local.CachedTokens += int64(en.res.CachedTokens)
	}
}

// commonPrefix is how many leading tokens a and b share.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// plan chooses this step's runs: one token for every decoding sequence,
// then prompt chunks under the step's token budget, the shortest remaining
// prompt first (admission order among equals), and makes cache room for
// them, preempting the newest sequences if needed. Shortest first keeps a
// short request that arrives during a long prefill from waiting for all of
// it: its prompt takes the next step's budget and the long prompt the rest
// (shortest remaining processing time, which minimizes mean waiting).
func (s *scheduler) plan() []run {
	for {
		runs := s.runs[:0]
		budget := s.opts.stepTokens
		decTokens, decAtt := 0, 0
		for _, en := range s.running {
			if en.seq.Len() >= en.nPrompt && en.seq.Len() < len(en.tokens) {
				runs = append(runs, run{en, 1})
				budget--
				decTokens, decAtt = decTokens+1, decAtt+en.seq.Len()+1
			}
		}
		// With ChunkLatency and sequences decoding, prompt chunks get the
		// time left under the limit (chunking.go); until the cost fit is
		// ready, as many tokens as the limit would give them if a token
		// cost the same in a chunk as in decode (unfitCap).
		spent, limit, capped := 0.0, math.Inf(1), math.MaxInt
		if s.opts.chunkLatency > 0 && decTokens > 0 {
			if k, ok := s.depth.fit(); ok {
				spent = k[0] + k[1]*float64(decTokens) + k[2]*float64(decAtt)/1024
				limit = s.opts.chunkLatency * spent
			} else {
				capped = unfitCap(decTokens, s.opts.chunkLatency)
			}
		}
		s.filling = s.filling[:0]
		for _, en := range s.running {
			if en.seq.Len() < en.nPrompt {
				s.filling = append(s.filling, en)
			}
		}
		slices.SortStableFunc(s.filling, func(a, b *entry) int {
			return (a.nPrompt - a.seq.Len()) - (b.nPrompt - b.seq.Len())
		})
		for _, en := range s.filling {
			l := en.seq.Len()
			rem := en.nPrompt - l
			c := min(rem, budget, capped)
			if !math.IsInf(limit, 1) {
				c = s.depth.chunkRoom(l, c, spent, limit)
				k, _ := s.depth.fit()
				spent += k[1]*float64(c) + k[2]*float64(attended(l, c))/1024
			}
			if s.e.model.Config().NonCausal {
				// A bidirectional model's prompt is evaluated whole: it
				// waits for a step with room, or takes one alone.
				if rem > budget && len(runs) > 0 {
					continue
				}
				c = rem
			}
			if rem-c == 1 && c > 1 {
				c-- // never leave a one-token run behind: it might run alone
			}
			// A one-token chunk only beside decoding tokens, when the
			// latency limit leaves room for no more (it attends in the
			// prompt's order, Batch.Batched, and its batch has several
			// tokens, so F16 weights take their batched order too).
			if c <= 0 || c < 2 && rem >= 2 && math.IsInf(limit, 1) {
				continue
			}
			runs = append(runs, run{en, c})
			budget -= c
			capped -= c // below 0 (a bidirectional prompt taken whole) admits no more, as 0 does
		}
		s.draft(runs)
		s.runs = runs
		victim := s.reserve(runs)
		if victim != nil && s.undraft(runs) {
			victim = s.reserve(runs)
		}
		if victim == nil {
			return runs
		}
		if len(s.running) == 1 {
			s.running = s.running[:0]
			s.end(victim, FinishError, "", fmt.Errorf("engine: the KV cache (%d blocks of %d positions) cannot hold this sequence", s.e.kv.NBlocks, kvcache.BlockSize))
			continue
		}
		s.preempt(victim)
	}
}

// reserve makes room for runs; on failure it returns the sequence to
// preempt (the most recently admitted).
func (s *scheduler) reserve(runs []run) *entry {
	for _, r := range runs {
		if err := r.en.seq.Reserve(r.n); err != nil {
			return slices.MaxFunc(s.running, func(a, b *entry) int { return int(a.admit) - int(b.admit) })
		}
	}
	return nil
}

// preempt frees en's cache and puts it back at the front of the queue; its
// tokens so far are recomputed when it is admitted again.
func (s *scheduler) preempt(en *entry) {
	s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
	en.seq.Free()
	en.seq = nil
	en.pooled = nil // recomputed with the prompt
	en.res.Preempted++
	s.local.Preemptions++
	s.mu.Lock()
	s.waiting = append([]*entry{en}, s.waiting...)
	s.mu.Unlock()
}

// evaluate runs one forward pass over runs and samples every sequence
// whose last pending token was evaluated.
func (s *scheduler) evaluate(runs []run) {
	e := s.e
	b := &s.batch
	b.Tokens, b.Pos, b.Seq, b.Logits, b.Seqs = b.Tokens[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0], b.Seqs[:0]
	b.OneByOne, b.Adapters, b.Batched = b.OneByOne[:0], b.Adapters[:0], b.Batched[:0]
	rows, drafting, adapting, att, chunked := 0, false, false, 0, false
	for i, r := range runs {
		en, l := r.en, r.en.seq.Len()
		att += attended(l, r.n)
		all := en.req.AllLogits && en.req.Logits != nil && l < en.nPrompt
		verify := r.drafted(l)
		drafting = drafting || verify
		b.OneByOne = append(b.OneByOne, verify)
		// A prompt's chunks attend in its order, a one-token chunk too (a
		// one-token prompt in the one-token order, as llama.cpp's).
		b.Batched = append(b.Batched, l < en.nPrompt && en.nPrompt >= 2)
		for k := range r.n {
			tok := en.tokens[min(l+k, len(en.tokens)-1)]
			if verify && k > 0 {
				tok = en.spec.drafts[k-1]
			}
			b.Tokens = append(b.Tokens, tok)
			b.Pos = append(b.Pos, int32(l+k))
			b.Seq = append(b.Seq, int32(i))
			want := all || verify || k == r.n-1 && l+r.n == len(en.tokens)
			if en.req.Embed != nil {
				want = s.e.poolWants(l+k, len(en.tokens))
			}
			b.Logits = append(b.Logits, want)
			if want {
				rows++
			}
		}
		if l < en.nPrompt {
			en.res.Computed += r.n
			s.local.ComputedTokens += int64(r.n)
			chunked = true
		}
		b.Seqs = append(b.Seqs, en.seq)
		b.Adapters = append(b.Adapters, en.adapters)
		adapting = adapting || en.adapters != nil
	}
	if !drafting {
		b.OneByOne = b.OneByOne[:0]
	}
	if !adapting {
		b.Adapters = b.Adapters[:0]
	}
	cfg := e.model.Config()
	nv := cfg.NVocab
	if b.Hidden = cfg.Embedding(); b.Hidden {
		nv = cfg.Dim // the rows are hidden states for pooling
	}
	if need := rows * nv; len(s.logits) < need {
		s.logits = make([]float32, need)
	}
	t0 := time.Now()
	if _, err := e.runner.Forward(b, s.logits); err != nil {
		for _, r := range runs { // cannot happen with reserved blocks; never hang on it
			s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == r.en })
			s.end(r.en, FinishError, "", err)
		}
		return
	}
	took := time.Since(t0)
	if !chunked {
		// Decode steps only: the cost model prices drafts, whose tokens
		// run in the one-token order (k+1 vec_dot products per weight
		// row). A prompt chunk's tokens take the batched GEMM at a
		// fraction of that cost each; fitted together, drafts looked
		// cheap and adaptive drafts ran long — slower than a fixed k=4.
		s.cost.add(len(b.Tokens), took.Seconds())
	}
	s.depth.add(len(b.Tokens), att, took.Seconds(), e.runner.AttentionTime().Seconds())
	row := 0
	for _, r := range runs {
		en := r.en
		l := en.seq.Len() - r.n // the positions before this run
		if l >= en.nPrompt {
			en.res.DecodeEval += took
		}
		if r.drafted(l) {
			s.verify(en, l, s.logits[row*nv:(row+r.n)*nv], nv)
			row += r.n
			continue
		}
		if en.req.Embed != nil {
			mean := cfg.Pooling == model.PoolMean
			for k := range r.n {
				if !s.e.poolWants(l+k, len(en.tokens)) {
					continue
				}
				hr := s.logits[row*nv : (row+1)*nv]
				row++
				if !mean {
					en.pooled = append(en.pooled, hr...)
					continue
				}
				// Mean pooling sums as it goes (one row per sequence, not
				// one per position): Σ x·(1/n) in position order, the
				// float32 operations Runner.Pool's mean does.
				if en.pooled == nil {
					en.pooled = make([]float32, nv)
				}
				inv := 1 / float32(en.nPrompt)
				for d, x := range hr {
					en.pooled[d] += x * inv
				}
			}
			if l+r.n == len(en.tokens) {
				s.pool(en)
			}
			continue
		}
		if en.req.AllLogits && en.req.Logits != nil && l < en.nPrompt {
			n := r.n - 1 // the last row is handled below
			if l+r.n < len(en.tokens) {
				n = r.n // a chunk short of the prompt's end: every row is an inner one
			}
			for k := range n {
				en.req.Logits(l+k, s.logits[row*nv:(row+1)*nv])
				row++
			}
		}
		if l+r.n < len(en.tokens) {
			continue // a prompt chunk short of the end
		}
		lg := s.logits[row*nv : (row+1)*nv]
		row++
		if en.req.Logits != nil && l < en.nPrompt {
			en.req.Logits(en.nPrompt-1, lg)
		}
		if en.req.EvalOnly {
			s.finish(en, &finish{FinishLength, DetailEval, false})
			continue
		}
		if l < en.nPrompt {
			s.ngrams.learn(en.tokens, 0) // the prompt feeds the shared table
		}
		if len(en.forks) > 0 { // the prompt is done: the other choices start here
			for _, f := range en.forks {
				f.seq = en.seq.Fork()
				f.admit = en.admit
				f.tAdmit = en.tAdmit
				f.res.CachedTokens, f.res.Computed = en.res.CachedTokens, en.res.Computed
				s.running = append(s.running, f)
				s.next(f, slices.Clone(lg))
			}
			en.forks = nil
		}
		s.next(en, lg)
	}
}

// poolWants reports whether an embedding request needs the hidden row of
// position p of its n: every one for mean or no pooling, else the one
// the pooling takes.
func (e *Engine) poolWants(p, n int) bool {
	c := e.model.Config()
	switch {
	case c.Pooling == model.PoolMean || c.Pooling == model.PoolNone:
		return true
	case c.PoolLastToken():
		return p == n-1
	}
	return p == 0
}

// pool hands an embedding request its pooled output and ends it.
func (s *scheduler) pool(en *entry) {
	c := s.e.model.Config()
	rows := len(en.pooled) / c.Dim // mean pooling: one, the mean so far (x·1 = x)
	var vecs [][]float32
	if c.Pooling == model.PoolNone {
		for i := range rows {
			vecs = append(vecs, en.pooled[i*c.Dim:(i+1)*c.Dim:(i+1)*c.Dim])
		}
	} else {
		v := make([]float32, c.PooledDim())
		if err := s.e.runner.Pool(en.pooled, rows, v); err != nil {
			s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
			s.end(en, FinishError, "", err)
			return
		}
		vecs = [][]float32{v}
		en.pooled = nil
	}
	en.req.Embed(vecs)
	s.finish(en, &finish{FinishLength, DetailEval, false})
}

// next has en's generation choose its next token from lg and delivers it;
// it reports whether en ended.
func (s *scheduler) next(en *entry, lg []float32) bool {
	ev, fin, err := en.generation.next(lg)
	if err != nil {
		s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
		s.end(en, FinishError, "", err)
		return true
	}
	if en.res.Generated <= 1 && en.tFirst.IsZero() {
		en.tFirst = time.Now()
		en.res.TTFT = en.tFirst.Sub(en.t0)
	}
	if ev.ID >= 0 {
		s.local.GeneratedTokens++
		if sp := en.spec; sp != nil && sp.row >= 0 {
			if d := sp.drafts; sp.row < len(d) && d[sp.row] == ev.ID {
				ev.Drafted = true
				en.res.Accepted++ // before a finish below copies the result
			} else if sp.row < len(d) {
				ev.Rejected = slices.Clone(d[sp.row:])
			}
		}
		en.stream.push(ev)
		s.ngrams.learn(en.tokens, len(en.tokens)-1)
	}
	if fin == nil && en.shift && len(en.tokens) >= en.ctxLen {
		fin = s.shiftContext(en)
	}
	if fin != nil {
		s.finish(en, fin)
		return true
	}
	return false
}

// finish ends a running sequence normally. Unless a stop string ended it
// (what follows one is dropped), text still held back is released as a
// last event with ID -1.
func (s *scheduler) finish(en *entry, fin *finish) {
	if fin.flush {
		if t := en.flush(); t != "" {
			en.stream.push(TokenEvent{ID: -1, Text: t})
		}
	}
	s.running = slices.DeleteFunc(s.running, func(x *entry) bool { return x == en })
	s.end(en, fin.reason, fin.detail, nil)
}

// end frees en's cache (or hands it to its Sequence) and closes its
// stream (and its unforked choices').
func (s *scheduler) end(en *entry, reason, detail string, err error) {
	if en.seq != nil {
		if en.keep != nil && err == nil {
			en.keep.seq = en.seq
		} else {
			en.seq.Free()
		}
		en.seq = nil
	}
	if en.keep != nil {
		en.keep.busy.Store(false)
		en.keep = nil
	}
	if en.spec != nil {
		en.spec.draft.release(s.e.draft)
	}
	en.release()
	now := time.Now()
	if !en.tAdmit.IsZero() {
		if en.tFirst.IsZero() {
			en.res.Prefill = now.Sub(en.tAdmit)
		} else {
			en.res.Prefill, en.res.Decode = en.tFirst.Sub(en.tAdmit), now.Sub(en.tFirst)
		}
	}
	en.res.FinishReason, en.res.Detail, en.res.Err = reason, detail, err
	en.res.Duration = now.Sub(en.t0)
	en.stream.finish(en.res)
	for _, f := range en.forks {
		s.end(f, reason, detail, err)
	}
	en.forks = nil
}
