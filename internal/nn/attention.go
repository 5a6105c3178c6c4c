package nn

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/libm"
	"github.com/loom-inference/loom/internal/parallel"
)

// Attention is causal grouped-query attention over a paged F16 KV cache,
// the computation of llama.cpp's non-flash path, operation for operation:
// scores = K·f16(q) (kernels.ScoresF16), scaled by 1/√headDim, softmax with
// ggml's exp and sum order (kernels.ExpSum), out = Vᵀ·f16(p)
// (kernels.MixF16); the products are summed in the order llama.cpp uses for
// the number of tokens the sequence has in the batch (kernels.OrderFor), so
// a sequence's result does not depend on what else the batch holds.
type Attention struct {
	NHeads, NKVHeads, HeadDim int
	Scale                     float32
	// SoftCap, when set, caps the scaled scores: cap·tanh(s/cap) (Gemma 2).
	SoftCap float32
	// Window, when set, limits what a token sees to the Window positions
	// ending at its own (a sliding-window layer; set per layer), or with
	// Symmetric to the positions within ±Window/2 of its own.
	Window    int
	Symmetric bool
	// NonCausal lets every token see every position of its sequence in
	// the batch (Seq.VRows), later ones too: an encoder (BERT), whose
	// sequence is evaluated whole in one batch.
	NonCausal bool
	// RowDim is the width of a cache row (kvcache.Pool.KVDim): this
	// layer's NKVHeads·HeadDim, or more when the pool's rows are sized for
	// a wider layer (0: NKVHeads·HeadDim).
	RowDim int
	// Sinks, when set, are per-head logits [NHeads] that join each
	// softmax's denominator and take no value (gpt-oss's attention sinks;
	// set per layer).
	Sinks []float32

	// Types are the cache's element types (set per call, from the pool;
	// NewAttention sets kvcache.DefaultTypes: F16). Any type but F16 keys and values, or Flash, takes the
	// tiled path (flash.go): an online softmax over the cache's blocks, as
	// llama.cpp's -fa; otherwise the exact path below reproduces llama.cpp's
	// non-flash attention bit for bit.
	Types kvcache.Types
	Flash bool

	koff []int32 // [HeadDim] row starts of a K block: e·kvcache.BlockSize

	// Per-worker scratch: scores [threads][maxCtx], q16 [threads][HeadDim].
	scores [][]float32
	q16    [][]float32
	cur    attnCall

	flash      []flashScratch // per worker (flash.go)
	tiles      []int32        // the tiled path's token runs (flash.go)
	kDot, vDot kernels.RowDot // the tiled path's products for Types
	splits     int            // the tiled path's KV splits per job (flash-decoding; 1: none)
	part       flashParts     // the splits' partial softmaxes (flash.go)
}

// NewAttention preallocates scratch for sequences of up to maxCtx positions.
func NewAttention(nHeads, nKVHeads, headDim, maxCtx, threads int) *Attention {
	// kq_scale = 1.0f/sqrtf(head_dim), in float32 as llama.cpp computes it.
	a := &Attention{NHeads: nHeads, NKVHeads: nKVHeads, HeadDim: headDim,
		Scale: 1 / float32(math.Sqrt(float64(headDim))),
		koff:  kernels.Strides(headDim, kvcache.BlockSize), Types: kvcache.DefaultTypes}
	group := nHeads / max(nKVHeads, 1)
	for range threads {
		a.scores = append(a.scores, make([]float32, group*pad(maxCtx, kvcache.BlockSize)))
		a.q16 = append(a.q16, make([]float32, group*headDim))
		a.flash = append(a.flash, newFlashScratch(nHeads/max(nKVHeads, 1), headDim))
	}
	return a
}

// MaxCtx is the longest sequence the scratch holds.
func (a *Attention) MaxCtx() int { return len(a.scores[0]) / (a.NHeads / a.NKVHeads) }

func pad(n, m int) int { return (n + m - 1) / m * m }

// Observer, when non-nil, receives each (token, head)'s attention weights.
// It is called from worker goroutines; w is only valid during the call.
type Observer func(tok, head int, w []float32)

// Seq is what attention needs of one sequence in the batch: its block
// table, the V row of each position, and the batch rows of its tokens.
type Seq struct {
	Blocks []int32 // kvcache block table
	VRows  []int32 // [positions] start of each position's V row (elements)
	NKV    int     // llama.cpp's padded view: last position + 1, rounded up to 32
	QK, PV kernels.AttnOrder
}

// SetOrders sets the summation orders for a sequence with n tokens in the
// batch, the last at position last.
func (s *Seq) SetOrders(n, headDim, last int) {
	s.NKV = pad(last+1, 32)
	s.QK, s.PV = kernels.OrderFor(n, headDim), kernels.OrderFor(n, s.NKV)
}

// Forward computes attention for n query tokens of one layer.
//
//	q    [n, NHeads·HeadDim]   queries (RoPE applied)
//	out  [n, NHeads·HeadDim]
//	pos  [n]                   positions; token t sees positions 0..pos[t]
//	seq  [n]                   each token's index into seqs
//	k, v                       the layer's pool (kvcache.Pool K[l], V[l])
func (a *Attention) Forward(p *parallel.Pool, out, q []float32, n int, pos, seq []int32, seqs []Seq, k, v []uint16, obs Observer) {
	a.cur = attnCall{out: out, q: q, pos: pos, seq: seq, seqs: seqs, k: k, v: v, obs: obs, n: n}
	if a.Tiled() {
		a.forwardFlash(p)
		a.cur = attnCall{}
		return
	}
	// Jobs are head-major (job = head·n + token): a contiguous chunk then
	// holds whole heads over all tokens, so workers get equal shares of the
	// causal triangle instead of early (cheap) vs late (costly) tokens.
	// With grouped queries a job is a KV head's whole group, which reads
	// each K and V row once for all of them (kernels.ScoresF16N, MixF16N),
	// when that leaves every worker a job.
	if g := a.NHeads / a.NKVHeads; g > 1 && n*a.NKVHeads >= p.Threads() {
		p.RunTask(n*a.NKVHeads, 1, groupTask{a})
	} else {
		p.RunTask(n*a.NHeads, 1, a)
	}
	a.cur = attnCall{}
}

// Tiled reports whether Forward takes the tiled path (a sequence's queries
// in tiles that share each key and value read).
func (a *Attention) Tiled() bool { return a.Flash || a.Types != kvcache.DefaultTypes }

// attnCall holds one Forward's arguments for the workers (no allocation).
type attnCall struct {
	out, q   []float32
	pos, seq []int32
	seqs     []Seq
	k, v     []uint16
	obs      Observer
	n        int
}

// Do computes the (token, head) jobs [lo, hi) on worker w.
func (a *Attention) Do(w, lo, hi int) {
	c := &a.cur
	const B = kvcache.BlockSize
	hd, qDim, kvDim := a.HeadDim, a.NHeads*a.HeadDim, a.NKVHeads*a.HeadDim
	if a.RowDim > 0 {
		kvDim = a.RowDim
	}
	group := a.NHeads / a.NKVHeads
	q16 := a.q16[w][:hd]
	for job := lo; job < hi; job++ {
		h, t := job/c.n, job%c.n
		s := &c.seqs[c.seq[t]]
		kvh := h / group
		qh := c.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
		copy(q16, qh)
		kernels.RoundF16s(q16)
		p := int(c.pos[t])
		nk := p + 1
		if a.NonCausal {
			nk = len(s.VRows)
		}
		sc := a.scores[w][:pad(nk, 16)]
		// Scores block by block, for whole 16-column tiles (a block holds
		// them; the extra columns are masked to −∞ by softmax), so the
		// SIMD kernel takes every position. A sliding window starts at the
		// block of its first visible position: the blocks before it may
		// be gone (kvcache keeps only the window), and their scores are
		// masked anyway.
		lo, hi := a.visible(p, nk)
		for i := lo / B; i*B < len(sc); i++ {
			ks := c.k[kvcache.KRow(s.Blocks[i], kvDim, kvh*hd):]
			kernels.ScoresF16(sc[i*B:min((i+1)*B, len(sc))], q16, ks, a.koff, s.QK)
		}
		a.weigh(sc, lo, hi, nk, t, h)
		o := c.out[t*qDim+h*hd : t*qDim+(h+1)*hd]
		kernels.MixF16(o, sc[:nk], c.v[kvh*hd:], s.VRows, s.NKV, s.PV)
	}
}

// weigh turns query head h of token t's score row sc (positions [lo,
// hi) visible of nk) into its F16-rounded attention weights: masked,
// scaled (soft-capped), softmax with the head's sink, observed.
func (a *Attention) weigh(sc []float32, lo, hi, nk, t, h int) {
	for j := range sc[:lo] {
		sc[j] = float32(math.Inf(-1))
	}
	for j := hi; j < nk; j++ {
		sc[j] = float32(math.Inf(-1))
	}
	scale := a.Scale
	if a.SoftCap > 0 {
		inv := 1 / a.SoftCap
		for j := lo; j < hi; j++ {
			sc[j] = softcap(float32(sc[j]*scale), inv, a.SoftCap)
		}
		scale = 1
	}
	sink := float32(math.NaN())
	if a.Sinks != nil {
		sink = a.Sinks[h]
	}
	inv := softmaxExp(sc, nk, scale, sink)
	if a.cur.obs == nil {
		kernels.ScaleRoundF16(sc[:nk], inv)
		return
	}
	kernels.ScaleF32(sc[:nk], inv)
	a.cur.obs(t, h, sc[:nk])
	kernels.RoundF16s(sc[:nk])
}

// groupTask runs Attention.groupDo's jobs.
type groupTask struct{ a *Attention }

func (t groupTask) Do(w, lo, hi int) { t.a.groupDo(w, lo, hi) }

// groupDo computes the (KV head, token) jobs [lo, hi) on worker w: Do's
// arithmetic for each query head of the group, row for row the same bits,
// with the group's score rows side by side ([group, row]) so the kernels
// read each block of K and each row of V once for all of them.
func (a *Attention) groupDo(w, lo, hi int) {
	c := &a.cur
	const B = kvcache.BlockSize
	hd, qDim, kvDim := a.HeadDim, a.NHeads*a.HeadDim, a.NKVHeads*a.HeadDim
	if a.RowDim > 0 {
		kvDim = a.RowDim
	}
	group := a.NHeads / a.NKVHeads
	q16 := a.q16[w][:group*hd]
	for job := lo; job < hi; job++ {
		kvh, t := job/c.n, job%c.n
		s := &c.seqs[c.seq[t]]
		h0 := kvh * group
		copy(q16, c.q[t*qDim+h0*hd:t*qDim+(h0+group)*hd])
		kernels.RoundF16s(q16)
		p := int(c.pos[t])
		nk := p + 1
		if a.NonCausal {
			nk = len(s.VRows)
		}
		row := pad(nk, 16)
		sc := a.scores[w][:group*row]
		lo, hi := a.visible(p, nk)
		for i := lo / B; i*B < row; i++ {
			ks := c.k[kvcache.KRow(s.Blocks[i], kvDim, kvh*hd):]
			var next []uint16 // the next block, prefetched
			if (i+1)*B < row {
				next = c.k[kvcache.KRow(s.Blocks[i+1], kvDim, kvh*hd):]
			}
			kernels.ScoresF16NNext(sc[i*B:], row, min(B, row-i*B), q16, hd, hd, group, ks, a.koff, s.QK, next)
		}
		for g := range group {
			a.weigh(sc[g*row:(g+1)*row], lo, hi, nk, t, h0+g)
		}
		kernels.MixF16N(c.out[t*qDim+h0*hd:], hd, hd, sc, row, nk, group, c.v[kvh*hd:], s.VRows, s.NKV, s.PV)
	}
}

// visible is the range [lo, hi) of positions the token at position p sees
// among the nk its row spans: a sliding window hides those llama.cpp
// masks (causal: p − j ≥ window; symmetric: |p − j| > window/2).
func (a *Attention) visible(p, nk int) (lo, hi int) {
	switch {
	case a.Window <= 0:
		return 0, nk
	case a.Symmetric:
		half := a.Window / 2
		return max(0, p-half), min(nk, p+half+1)
	}
	return max(0, nk-a.Window), nk
}

// softmax turns the first nk scores of sc into weights as ggml_soft_max_ext
// does: scale, max, e^(x−max) and its sum over 16-element vectors (the
// masked positions llama.cpp carries up to the vector's end weigh e^−∞ = 0),
// then a multiply by float32(1/sum). len(sc) is nk rounded up to 16. A
// sink (NaN: none) is a logit that joins the max and, as e^(sink−max)
// (expf), the sum, as ggml's soft_max with sinks does.
func softmax(sc []float32, nk int, scale, sink float32) {
	kernels.ScaleF32(sc[:nk], softmaxExp(sc, nk, scale, sink))
}

// softmaxExp is softmax without its last multiply: it leaves e^(x−max) in
// sc and returns float32(1/sum), by which the caller scales (weigh fuses
// that with the F16 rounding).
func softmaxExp(sc []float32, nk int, scale, sink float32) float32 {
	mx := kernels.ScaleMax(sc[:nk], scale)
	hasSink := sink == sink
	if hasSink {
		mx = max(mx, sink)
	}
	for j := nk; j < len(sc); j++ {
		sc[j] = float32(math.Inf(-1))
	}
	sum := kernels.ExpSum(sc, sc, mx)
	if hasSink {
		sum += float64(libm.Expf(sink - mx))
	}
	return float32(1 / sum)
}
