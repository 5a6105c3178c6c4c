package nn

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
)

// Attention is causal grouped-query attention over an F16 KV cache, the
// computation of llama.cpp's non-flash path: scores = f16(q)·K / √headDim
// (K in F16, q rounded to F16 as ggml_mul_mat does for an F16 operand;
// each score summed in element order),
// softmax in float32, out = Σ f16(p_j)·V_j.
type Attention struct {
	NHeads, NKVHeads, HeadDim int
	Scale                     float32
	ctx                       int // cache positions (the stride of transposed K)

	// Per-worker scratch: scores [threads][ctxLen], q16 [threads][HeadDim].
	scores [][]float32
	q16    [][]float32
	cur    attnCall
}

// NewAttention preallocates scratch for ctxLen cache positions.
func NewAttention(nHeads, nKVHeads, headDim, ctxLen, threads int) *Attention {
	a := &Attention{NHeads: nHeads, NKVHeads: nKVHeads, HeadDim: headDim, ctx: ctxLen,
		Scale: float32(1 / math.Sqrt(float64(headDim)))}
	for range threads {
		a.scores = append(a.scores, make([]float32, ctxLen))
		a.q16 = append(a.q16, make([]float32, headDim))
	}
	return a
}

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
	a.cur = attnCall{out: out, q: q, pos: pos, k: k, v: v, obs: obs, n: n}
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
	n      int
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
		sc := a.scores[w][:nk]
		kernels.DotsF16T(sc, q16, c.k[kvh*hd*a.ctx:], a.ctx)
		for j := range sc {
			sc[j] *= a.Scale
		}
		Softmax(sc)
		if c.obs != nil {
			c.obs(t, h, sc)
		}
		o := c.out[t*qDim+h*hd : t*qDim+(h+1)*hd]
		clear(o)
		for j, pj := range sc {
			kernels.AxpyF16(o, quant.RoundF16(pj), c.v[j*kvDim+kvh*hd:j*kvDim+(kvh+1)*hd])
		}
	}
}
