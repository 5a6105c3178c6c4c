// Package decoder is what the decoder-only families share: the runner that
// places a batch in the paged KV cache and splits it into ubatches, the
// activation buffers, and the steps a family's forward pass is written in
// (embeddings, norms, attention, feed-forward blocks, mixtures of experts,
// the LM head). A family package binds its weights into the shared layer
// types (Attn, FFN, Experts, Norm, Head) and writes its forward pass as a
// sequence of Step calls, top to bottom like its paper; see the llama,
// qwen2, qwen3, phi3, gpt2 and gemma2 packages beside this one.
package decoder

import (
	"fmt"
	"slices"
	"time"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
	"github.com/loom-inference/loom/internal/parallel"
)

// Net is a family's network: its config, the weights it multiplies, and its
// forward pass over one ubatch.
type Net interface {
	Config() *model.Config
	// Matrices lists every weight that is multiplied (for packing, scratch
	// sizes and tools that report which kernel runs what).
	Matrices() []*kernels.Matrix
	// Forward evaluates s's tokens through the network; it ends with
	// s.Logits.
	Forward(s *Step)
	// PoolHead is an embedding model's head after pooling, LMHead the
	// output matrix (nil: an embedding model without one); Weights has
	// both.
	PoolHead() *PoolHead
	LMHead() *kernels.Matrix
}

// Runner is the mutable side of evaluation: buffers, the matrix products'
// workspace, attention scratch and the thread pool. KV state lives in the
// batch's sequences; the weights (Net) are only read, so any number of
// runners may share one model, each used by one goroutine at a time.
type Runner struct {
	net     Net
	cfg     *model.Config
	attn    []*nn.Attention // per layer (one per distinct KV heads × head width; nil: a recurrent layer)
	maxCtx  int             // positions the runner was sized for
	pool    *parallel.Pool
	owned   bool // pool created here
	hooks   *model.Hooks
	ones    []float32 // [max head width] of 1: a norm without a weight
	onesDim []float32 // [dim] of 1
	s       state
	step    Step
	// attnTime is the time the last Forward spent in attention
	// (Runner.AttentionTime).
	attnTime time.Duration
}

// state holds the activation buffers, batch-major, sized for cap tokens.
type state struct {
	cap   int
	x     []float32 // [n, dim] residual stream
	xb    []float32 // [n, dim] normed input
	q     []float32 // [n, nHeads·headDim]
	k, v  []float32 // [n, kvDim]
	att   []float32 // [n, nHeads·headDim] attention output
	proj  []float32 // [n, dim] a block's output
	gate  []float32 // [n, hidden]
	up    []float32 // [n, hidden]
	fused []float32 // [n, qDim+2·kvDim] fused QKV, or [n, 2·hidden] fused gate+up
	rows  []int     // indices of tokens that want logits
	cuts  []int     // the batch's ubatch ends
	cs    []float32 // [n, ropeDims] cos/sin per token
	csSWA []float32 // [n, ropeDims] likewise for the sliding layers' own RoPE (Gemma 3)
	outIn []float32 // [nWanted, dim] final-normed rows for the LM head
	aux   []float32 // [n, dim] a block output kept aside (Gemma 4's dense FFN beside its experts)
	// poolA, poolB: Pool's ping-pong rows, as wide as the widest of the
	// embedding, the dense projections and the rank head's outputs.
	poolA, poolB []float32

	// Gemma 4's per-layer inputs (perlayer.go).
	ple     []float32 // [n, nLayers·E]
	pleTok  []float32 // [n, nLayers·E] the token table's rows
	pleGate []float32 // [n, E]

	// Where the ubatch's tokens live in the cache.
	seq   []int32        // [n] token → index into aseq
	slot  []kvcache.Slot // [n] the token's K and V in every layer
	aseq  []nn.Seq       // the ubatch's sequences, as attention sees them
	vrows []int32        // backing store of aseq[i].VRows
	vspan [][2]int       // aseq[i].VRows = vrows[vspan[i][0]:vspan[i][1]]
	// qtok, qpos, qseq: the tokens whose queries attend, their positions
	// and sequences (all of them, or after Step.KeepWanted the wanted).
	qtok, qpos, qseq []int32
	// The sliding layers' view when the pool keeps only their window:
	// the same sequences with window slots for blocks and their rows.
	wseq    []nn.Seq
	wblocks []int32 // backing store of wseq[i].Blocks
	wvrows  []int32 // backing store of wseq[i].VRows
	wbspan  [][2]int

	// Recurrent layers (deltanet.go): the ubatch's sequence runs and
	// their states, and the gated delta nets' scratch.
	rec []recRun
	dn  dnState
	sc  scState   // LFM2's short convolutions (shortconv.go)
	mb  mbState   // Mamba-2 layers (mamba2.go)
	qg  []float32 // [n, 2·qDim] a gated attention's query and gate rows (Config.AttnOutGate)

	lora    loraState  // the ubatch's adapters (lora.go)
	ffnTask nn.FFNTask // reused pool job
	moe     moeState

	// ws is the matrix products' scratch: this runner's own, so runners
	// sharing one model's weights never share per-call state.
	ws kernels.Workspace
}

// MaxUbatch bounds the tokens evaluated at once; longer batches are split
// (llama.cpp's n_ubatch plays the same role).
const MaxUbatch = 512

// NewRunner makes a runner for net. Attention's score scale is
// Config.Scale() (1/√headDim unless the family sets its own) unless the
// family scales its queries itself (Config.QPreScale), and its scores are
// soft-capped when Config.AttnSoftcap is set.
func NewRunner(net Net, opts model.RunnerOptions) *Runner {
	c := net.Config()
	ctx := opts.MaxCtx
	if ctx <= 0 {
		ctx = c.DefaultCtx()
	}
	r := &Runner{net: net, cfg: c, pool: opts.Pool, maxCtx: ctx}
	if r.pool == nil {
		r.pool, r.owned = parallel.New(opts.Threads), true
	}
	r.ones, r.onesDim = make([]float32, c.MaxHeadDim()), make([]float32, c.Dim)
	for i := range r.ones {
		r.ones[i] = 1
	}
	for i := range r.onesDim {
		r.onesDim[i] = 1
	}
	byShape := map[[2]int]*nn.Attention{}
	for l := range c.NLayers {
		if c.KVHeadsOf(l) == 0 { // a recurrent layer (validated): no attention
			r.attn = append(r.attn, nil)
			continue
		}
		shape := [2]int{c.KVHeadsOf(l), c.HeadDimOf(l)}
		a := byShape[shape]
		if a == nil {
			a = nn.NewAttention(c.NHeads, shape[0], shape[1], ctx, r.pool.Threads())
			a.SoftCap = c.AttnSoftcap
			a.Scale = c.Scale()
			a.Flash = opts.FlashAttn
			if c.QPreScale {
				a.Scale = 1
			}
			byShape[shape] = a
		}
		r.attn = append(r.attn, a)
	}
	w := max(c.Dim, c.PooledDim())
	if d := net.PoolHead().Dense2; d != nil {
		w = max(w, d.Rows)
	}
	r.s.poolA, r.s.poolB = make([]float32, w), make([]float32, w)
	r.step.r = r
	return r
}

// MaxCtx implements model.Runner: the attention layers' (a recurrent
// layer has none and no limit).
func (r *Runner) MaxCtx() int {
	for _, a := range r.attn {
		if a != nil {
			return a.MaxCtx()
		}
	}
	return r.maxCtx
}

// AttentionTime is the time the last Forward spent in attention.
func (r *Runner) AttentionTime() time.Duration { return r.attnTime }

// SetHooks implements model.Runner.
func (r *Runner) SetHooks(h *model.Hooks) { r.hooks = h }

// Close implements model.Runner.
func (r *Runner) Close() {
	if r.owned {
		r.pool.Close()
	}
}

func (r *Runner) grow(n int) {
	if n <= r.s.cap {
		return
	}
	c := r.cfg
	qDim, kvDim := c.NHeads*c.MaxHeadDim(), c.KVDim()
	s := &r.s
	s.cap = n
	s.x = make([]float32, n*c.Dim)
	s.xb = make([]float32, n*c.Dim)
	s.q = make([]float32, n*qDim)
	s.k = make([]float32, n*kvDim)
	s.v = make([]float32, n*kvDim)
	s.att = make([]float32, n*qDim)
	s.proj = make([]float32, n*c.Dim)
	// The FFN width that sizes gate and up is the one the weights were
	// checked against: the experts' in a mixture-of-experts model (whose
	// feed_forward_length no tensor has), the dense FFN's otherwise.
	hidden := c.HiddenDim
	if c.NExperts > 0 {
		hidden = c.ExpertHidden
		if c.MoEDense { // and the dense FFN beside the experts (Gemma 4)
			hidden = max(hidden, c.HiddenDim)
		}
		hidden = max(hidden, c.SharedHidden) // and a shared expert's
	}
	s.gate = make([]float32, n*hidden)
	s.up = make([]float32, n*hidden)
	fused := max(qDim+2*kvDim, 2*hidden) // fused QKV, gate+up, or an expert's gate_up
	s.fused = make([]float32, n*fused)
	if c.NExperts > 0 {
		s.moe.grow(n, c)
	}
	s.outIn = make([]float32, n*c.Dim)
	if c.Hybrid() {
		switch c.SSM.Kind {
		case model.DeltaNet:
			s.dn.grow(n, r.pool.Threads(), c)
		case model.ShortConv:
			s.sc.grow(n, c)
		case model.Mamba2:
			s.mb.grow(n, r.pool.Threads(), c)
		}
	}
	if c.AttnOutGate {
		s.qg = make([]float32, n*2*qDim)
	}
	if c.MoEDense || c.SharedHidden > 0 {
		s.aux = make([]float32, n*c.Dim)
	}
	if e := c.PerLayerEmbd; e > 0 {
		s.ple, s.pleTok, s.pleGate = make([]float32, n*c.NLayers*e), make([]float32, n*c.NLayers*e), make([]float32, n*e)
	}
	s.cs = make([]float32, n*c.RopeDims)
	if c.RopeBaseSWA > 0 {
		s.csSWA = make([]float32, n*max(c.RopeDims, c.RopeDimsSWA))
	}
	s.rows = make([]int, 0, n)
	s.seq = make([]int32, n)
	s.qtok, s.qpos, s.qseq = make([]int32, n), make([]int32, n), make([]int32, n)
	s.slot = make([]kvcache.Slot, n)
	s.ws.Reserve(n, r.net.Matrices())
}

// Forward implements model.Runner.
func (r *Runner) Forward(b *model.Batch, out []float32) (int, error) {
	c := r.cfg
	r.attnTime = 0
	wanted, err := b.Check(c.NVocab, r.MaxCtx())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", c.Arch, err)
	}
	width := c.NVocab
	if b.Hidden {
		width = c.Dim
	} else if r.net.LMHead() == nil {
		return 0, fmt.Errorf("%s: an embedding model has no LM head: it computes no logits", c.Arch)
	}
	if len(out) < wanted*width {
		return 0, fmt.Errorf("%s: output buffer holds %d values, need %d", c.Arch, len(out), wanted*width)
	}
	pool := b.Seqs[0].Pool()
	if pool.NLayers != c.NLayers || pool.KVDim != c.KVDim() {
		return 0, fmt.Errorf("%s: KV pool of %d layers × %d dims, model has %d × %d", c.Arch, pool.NLayers, pool.KVDim, c.NLayers, c.KVDim())
	}
	if pool.Recurrent() != c.Hybrid() {
		return 0, fmt.Errorf("%s: the KV pool holds recurrent states: %v, the model has recurrent layers: %v", c.Arch, pool.Recurrent(), c.Hybrid())
	}
	// Cache room for every sequence's tokens, before anything is computed.
	// The ubatches: MaxUbatch tokens each, but an encoder's (NonCausal)
	// sequences whole — every token attends to every other, so a sequence
	// is evaluated whole, in one ubatch, from its first position, as
	// llama.cpp requires (n_ubatch ≥ its tokens).
	n := len(b.Tokens)
	cuts := r.s.cuts[:0]
	longest, size := 0, 0
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && b.SeqOf(hi) == b.SeqOf(lo) {
			hi++
		}
		sq := b.Seqs[b.SeqOf(lo)]
		if sq.Pool() != pool {
			return 0, fmt.Errorf("%s: the batch's sequences use different KV pools", c.Arch)
		}
		if c.NonCausal && sq.Len() != 0 {
			return 0, fmt.Errorf("%s: a bidirectional (non-causal) model evaluates a sequence whole: sequence %d continues %d cached positions", c.Arch, b.SeqOf(lo), sq.Len())
		}
		if err := sq.Reserve(hi - lo); err != nil {
			return 0, fmt.Errorf("%s: %d positions for sequence %d: %w", c.Arch, hi-lo, b.SeqOf(lo), err)
		}
		if c.NonCausal {
			if size > 0 && size+hi-lo > MaxUbatch {
				cuts, size = append(cuts, lo), 0
			}
			size += hi - lo
			longest = max(longest, hi-lo)
		}
		lo = hi
	}
	if !c.NonCausal {
		for lo := MaxUbatch; lo < n; lo += MaxUbatch {
			cuts = append(cuts, lo)
		}
	}
	cuts = append(cuts, n)
	r.s.cuts = cuts
	r.grow(max(min(n, MaxUbatch), longest))
	// A sequence verified one by one needs its products in one-token
	// order too; they are per batch, so the whole batch takes it.
	r.s.ws.OneTokenOrder = slices.Contains(b.OneByOne, true)
	defer func() { r.s.ws.OneTokenOrder = false }()
	done := 0
	for lo, ci := 0, 0; lo < n; lo, ci = r.s.cuts[ci], ci+1 {
		hi := r.s.cuts[ci]
		r.s.rows = r.s.rows[:0]
		for i := lo; i < hi; i++ {
			if b.Wants(i) {
				r.s.rows = append(r.s.rows, i-lo)
			}
		}
		r.place(b, lo, hi)
		if pool.Recurrent() {
			r.placeRecurrent(b, lo, hi)
		}
		r.groupAdapters(b, lo, hi)
		r.s.ws.BatchOrder = false // KeepWanted sets it for the rest of a ubatch
		st := &r.step
		st.cut = false
		st.N, st.Tokens, st.Pos, st.kv, st.out, st.hidden = hi-lo, b.Tokens[lo:hi], b.Pos[lo:hi], pool, out[done*width:], b.Hidden
		r.net.Forward(st)
		for i := lo; i < hi; { // the ubatch's positions are now stored
			j := i + 1
			for j < hi && b.SeqOf(j) == b.SeqOf(i) {
				j++
			}
			b.Seqs[b.SeqOf(i)].Commit(b.Tokens[i:j])
			i = j
		}
		done += len(r.s.rows)
	}
	return done, nil
}

// place records where tokens [lo, hi) of b live in the cache: each token's
// slot, and per sequence the V row of every position it sees.
func (r *Runner) place(b *model.Batch, lo, hi int) {
	s, hd := &r.s, r.cfg.HeadDim
	s.aseq, s.vrows, s.vspan = s.aseq[:0], s.vrows[:0], s.vspan[:0]
	for i := lo; i < hi; {
		j := i + 1
		for j < hi && b.SeqOf(j) == b.SeqOf(i) {
			j++
		}
		sq := b.Seqs[b.SeqOf(i)]
		blocks := sq.Blocks()
		last := int(b.Pos[j-1])
		start := len(s.vrows)
		for p := 0; p <= last; p++ {
			s.vrows = append(s.vrows, int32(sq.Row(p)))
		}
		if b.DecodeOrder(b.SeqOf(i)) {
			// Each token attends as a one-token decode at its position
			// would: its own orders and its own padded view.
			for t := i; t < j; t++ {
				p := int(b.Pos[t])
				s.seq[t-lo] = int32(len(s.aseq))
				s.slot[t-lo] = sq.Slot(p)
				as := nn.Seq{Blocks: blocks}
				as.SetOrders(1, hd, p)
				s.aseq = append(s.aseq, as)
				s.vspan = append(s.vspan, [2]int{start, start + p + 1})
			}
			i = j
			continue
		}
		for t := i; t < j; t++ {
			p := int(b.Pos[t])
			s.seq[t-lo] = int32(len(s.aseq))
			s.slot[t-lo] = sq.Slot(p)
		}
		as := nn.Seq{Blocks: blocks}
		n := j - i
		if b.BatchOrder(b.SeqOf(i)) {
			n = max(n, 2) // a one-token prompt chunk: the prompt's order
		}
		as.SetOrders(n, hd, last)
		s.aseq = append(s.aseq, as)
		s.vspan = append(s.vspan, [2]int{start, len(s.vrows)})
		i = j
	}
	// VRows point into s.vrows once it has stopped growing.
	for k := range s.aseq {
		s.aseq[k].VRows = s.vrows[s.vspan[k][0]:s.vspan[k][1]]
	}
	if b.Seqs[0].Pool().Windowed() {
		r.placeWindow(b, lo, hi)
	}
}

// placeWindow builds the sliding layers' view of the ubatch: each of
// aseq's entries with its sequence's window slots in place of its blocks,
// and V rows in the sliding layers' arrays (the zero slot's for positions
// the sequence has let go: they lie outside every window here).
func (r *Runner) placeWindow(b *model.Batch, lo, hi int) {
	s := &r.s
	s.wseq, s.wblocks, s.wvrows, s.wbspan = append(s.wseq[:0], s.aseq...), s.wblocks[:0], s.wvrows[:0], s.wbspan[:0]
	k := 0
	for i := lo; i < hi; {
		j := i + 1
		for j < hi && b.SeqOf(j) == b.SeqOf(i) {
			j++
		}
		sq := b.Seqs[b.SeqOf(i)]
		start := len(s.wblocks)
		for bi := range sq.Blocks() {
			s.wblocks = append(s.wblocks, sq.WindowSlot(bi))
		}
		vstart := len(s.wvrows)
		for p := 0; p <= int(b.Pos[j-1]); p++ {
			s.wvrows = append(s.wvrows, int32(sq.WindowRow(p)))
		}
		entries := 1
		if b.DecodeOrder(b.SeqOf(i)) {
			entries = j - i
		}
		for e := range entries {
			n := s.vspan[k+e][1] - s.vspan[k+e][0] // positions this entry sees
			s.wbspan = append(s.wbspan, [2]int{start, len(s.wblocks)}, [2]int{vstart, vstart + n})
		}
		k += entries
		i = j
	}
	for e := range s.wseq {
		bs, vs := s.wbspan[2*e], s.wbspan[2*e+1]
		s.wseq[e].Blocks, s.wseq[e].VRows = s.wblocks[bs[0]:bs[1]], s.wvrows[vs[0]:vs[1]]
	}
}

// store writes the ubatch's keys and values of layer l into the cache.
//
//	k, v [n, kvDim]
func (r *Runner) store(pool *kvcache.Pool, l int, k, v []float32) {
	kvDim := r.cfg.KVDimOf(l)
	for t := range len(k) / kvDim {
		pool.Store(l, r.s.slot[t], k[t*kvDim:(t+1)*kvDim], v[t*kvDim:(t+1)*kvDim])
	}
}
