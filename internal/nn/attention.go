package nn

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
)

// Attention is causal grouped-query attention over an F16 KV cache, the
// computation of llama.cpp's non-flash path, operation for operation:
// scores = K·f16(q) (kernels.ScoresF16), scaled by 1/√headDim, softmax with
// ggml's exp and sum order (kernels.ExpSum), out = Vᵀ·f16(p)
// (kernels.MixF16); the products are summed in the order llama.cpp uses for
// the batch size (kernels.OrderFor).
type Attention struct {
	NHeads, NKVHeads, HeadDim int
	Scale                     float32
	ctx                       int // cache positions (the stride of transposed K)

	// Per-worker scratch: scores [threads][pad16(ctxLen)], q16 [threads][HeadDim].
	scores [][]float32
	q16    [][]float32
	cur    attnCall
}

// NewAttention preallocates scratch for ctxLen cache positions.
func NewAttention(nHeads, nKVHeads, headDim, ctxLen, threads int) *Attention {
	// kq_scale = 1.0f/sqrtf(head_dim), in float32 as llama.cpp computes it.
	a := &Attention{NHeads: nHeads, NKVHeads: nKVHeads, HeadDim: headDim, ctx: ctxLen,
		Scale: 1 / float32(math.Sqrt(float64(headDim)))}
	for range threads {
		a.scores = append(a.scores, make([]float32, pad(ctxLen, 16)))
		a.q16 = append(a.q16, make([]float32, headDim))
	}
	return a
}

func pad(n, m int) int { return (n + m - 1) / m * m }

// Observer, when non-nil, receives each (token, head)'s attention weights.
// It is called from worker goroutines; w is only valid during the call.
type Observer func(tok, head int, w []float32)

// Forward computes attention for n query tokens.
//
//	q   [n, NHeads·HeadDim]     queries (RoPE applied)
//	out [n, NHeads·HeadDim]
//	k   [NKVHeads·HeadDim, ctx] the layer's keys, transposed, F16 bits
//	v   [ctx, NKVHeads·HeadDim] the layer's values, F16 bits
//	pos [n]                     positions; token t sees cache rows 0..pos[t]
func (a *Attention) Forward(p *parallel.Pool, out, q []float32, n int, pos []int32, k, v []uint16, obs Observer) {
	// llama.cpp pads the cache view to a multiple of 32 positions.
	nkv := pad(int(pos[n-1])+1, 32)
	a.cur = attnCall{out: out, q: q, pos: pos, k: k, v: v, obs: obs, n: n, nkv: nkv,
		qk: kernels.OrderFor(n, a.HeadDim), pv: kernels.OrderFor(n, nkv)}
	// Jobs are head-major (job = head·n + token): a contiguous chunk then
	// holds whole heads over all tokens, so workers get equal shares of the
	// causal triangle instead of early (cheap) vs late (costly) tokens.
	p.RunTask(n*a.NHeads, 1, a)
	a.cur = attnCall{}
}

// attnCall holds one Forward's arguments for the workers (no allocation).
type attnCall struct {
	out, q []float32
	pos    []int32
	k, v   []uint16
	obs    Observer
	n, nkv int
	qk, pv kernels.AttnOrder
}

// Do computes the (token, head) jobs [lo, hi) on worker w.
func (a *Attention) Do(w, lo, hi int) {
	c := &a.cur
	hd, qDim, kvDim := a.HeadDim, a.NHeads*a.HeadDim, a.NKVHeads*a.HeadDim
	group := a.NHeads / a.NKVHeads
	q16 := a.q16[w]
	for job := lo; job < hi; job++ {
		h, t := job/c.n, job%c.n
		kvh := h / group
		qh := c.q[t*qDim+h*hd : t*qDim+(h+1)*hd]
		for i, x := range qh {
			q16[i] = quant.RoundF16(x)
		}
		nk := int(c.pos[t]) + 1
		sc := a.scores[w][:pad(nk, 16)]
		// Scores for whole 16-column blocks when the cache has the columns
		// (the extra ones are masked to −∞ by softmax), so the SIMD kernel
		// takes every position.
		ncol := nk
		if len(sc) <= a.ctx {
			ncol = len(sc)
		}
		kernels.ScoresF16(sc[:ncol], q16, c.k[kvh*hd*a.ctx:], a.ctx, c.qk)
		softmax(sc, nk, a.Scale)
		if c.obs != nil {
			c.obs(t, h, sc[:nk])
		}
		for j, pj := range sc[:nk] {
			sc[j] = quant.RoundF16(pj)
		}
		o := c.out[t*qDim+h*hd : t*qDim+(h+1)*hd]
		kernels.MixF16(o, sc[:nk], c.v[kvh*hd:], kvDim, c.nkv, c.pv)
	}
}

// softmax turns the first nk scores of sc into weights as ggml_soft_max_ext
// does: scale, max, e^(x−max) and its sum over 16-element vectors (the
// masked positions llama.cpp carries up to the vector's end weigh e^−∞ = 0),
// then a multiply by float32(1/sum). len(sc) is nk rounded up to 16.
func softmax(sc []float32, nk int, scale float32) {
	mx := float32(math.Inf(-1))
	for j := range sc[:nk] {
		sc[j] *= scale
		mx = max(mx, sc[j])
	}
	for j := nk; j < len(sc); j++ {
		sc[j] = float32(math.Inf(-1))
	}
	inv := float32(1 / kernels.ExpSum(sc, sc, mx))
	for j := range sc[:nk] {
		sc[j] *= inv
	}
}
