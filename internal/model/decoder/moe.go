package decoder

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
)

// Mixture of experts (llama.cpp's llm_build_moe_ffn with softmax gating and
// normalized weights, as Mixtral and Qwen3-MoE use it): router logits →
// softmax → the top k → their probabilities renormalized to sum to 1 →
// each chosen expert's SwiGLU FFN → the weighted sum in rank order.
//
// The batch is grouped by expert: each expert's rows are read once for all
// the tokens that chose it (prefill and multi-sequence decode), and a lone
// token reads only its k experts. Expert matrices keep ggml's one-row
// vec_dot order whatever the group size (mul_mat_id's), so a token's result
// does not depend on who else chose the same expert.

// moeState is the MoE scratch, sized for cap tokens.
type moeState struct {
	logits []float32 // [n, nExperts] router probabilities
	sel    []int32   // [n, k] chosen experts, best first
	w      []float32 // [n, k] their weights
	order  []int32   // [nExperts] argsort scratch
	out    []float32 // [n, k, dim] each chosen expert's output
	xg     []float32 // [n, dim] the inputs of one expert's tokens
	rin    []float32 // [n, dim] the router's input when it is not the block's (Gemma 4)
	yg     []float32 // [n, dim] its outputs
	slot   []int32   // [n] where each gathered row goes: token·k + rank
	shg    []float32 // [n] the shared expert's gate logits
}

func (st *moeState) grow(n int, c *model.Config) {
	e, k := c.NExperts, c.NExpertsUsed
	st.logits = make([]float32, n*e)
	st.sel = make([]int32, n*k)
	st.w = make([]float32, n*k)
	st.order = make([]int32, e)
	st.out = make([]float32, n*k*c.Dim)
	st.xg = make([]float32, n*c.Dim)
	st.rin = make([]float32, n*c.Dim)
	st.yg = make([]float32, n*c.Dim)
	st.slot = make([]int32, n)
	st.shg = make([]float32, n)
}

// Route picks the k experts of one token from its router logits (in
// place: they become probabilities) and writes their indices and weights.
// The order is ggml_argsort's (descending, its exchange sort: among equal
// probabilities the lower index comes first) cut to k, as ggml_top_k.
func Route(probs []float32, k int, order, sel []int32, w []float32) {
	mx := probs[0]
	for _, v := range probs {
		mx = max(mx, v)
	}
	inv := float32(1 / kernels.ExpSum(probs, probs, mx))
	for i := range probs {
		probs[i] *= inv
	}
	for i := range order {
		order[i] = int32(i)
	}
	for j := range order {
		for i := j + 1; i < len(order); i++ {
			if probs[order[j]] < probs[order[i]] {
				order[j], order[i] = order[i], order[j]
			}
		}
	}
	var sum float64 // ggml_sum_rows: float64 in rank order
	for r := range k {
		sel[r] = order[r]
		w[r] = probs[order[r]]
		sum += float64(w[r])
	}
	s := float32(sum)
	for r := range k {
		w[r] /= s
	}
}

// RouteTopK picks the k experts of one token by their router logits
// (ggml_argsort_top_k: descending; equal logits in index order) and weighs
// them by a softmax over those k logits alone (llama.cpp's SOFTMAX_WEIGHT
// gating, gpt-oss): ggml_soft_max of the k-row, expf and a float64 sum.
func RouteTopK(logits []float32, k int, order, sel []int32, w []float32) {
	for i := range order {
		order[i] = int32(i)
	}
	for j := range k { // a partial selection sort: the k best, in order
		for i := j + 1; i < len(order); i++ {
			if logits[order[j]] < logits[order[i]] || logits[order[j]] == logits[order[i]] && order[i] < order[j] {
				order[j], order[i] = order[i], order[j]
			}
		}
	}
	mx := float32(math.Inf(-1))
	for r := range k {
		sel[r] = order[r]
		w[r] = logits[order[r]]
		mx = max(mx, w[r])
	}
	inv := float32(1 / kernels.ExpSum(w[:k], w[:k], mx))
	for r := range k {
		w[r] *= inv
	}
}

// MoE computes layer li's experts of the block input xb into proj.
func (step *Step) MoE(li int, l *Experts) {
	r, n := step.r, step.N
	c, s, p, st := r.cfg, &r.s, r.pool, &r.s.moe
	e, k, h, dim := c.NExperts, c.NExpertsUsed, c.ExpertHidden, c.Dim
	xb := s.xb[:n*dim]
	rin := xb
	if l.RouterScale != nil { // Gemma 4: rms_norm(x)·(1/√dim) ⊙ scale of the stream
		rin = st.rin[:n*dim]
		nn.RMSNorm(rin, s.x[:n*dim], r.onesDim, c.Eps)
		inv := 1 / float32(math.Sqrt(float64(dim)))
		for t := range n {
			row := rin[t*dim : (t+1)*dim]
			for i := range row {
				row[i] = float32(row[i]*inv) * l.RouterScale[i]
			}
		}
	}
	s.ws.MatMul(p, l.Router, rin, n, st.logits[:n*e])
	if l.RouterBias != nil {
		nn.AddBias(st.logits[:n*e], l.RouterBias)
	}
	route := Route
	if c.ExpertGating == model.TopKSoftmax {
		route = RouteTopK
	}
	for t := range n {
		route(st.logits[t*e:(t+1)*e], k, st.order, st.sel[t*k:(t+1)*k], st.w[t*k:(t+1)*k])
	}
	act := uint8(actSwiGLU)
	switch c.FFN {
	case model.SwiGLUOAI:
		act = actSwiGLUOAI
	case model.GeGLU:
		act = actGeGLU
	}
	if r.hooks != nil && r.hooks.Experts != nil {
		r.hooks.Experts(li, st.sel[:n*k], st.w[:n*k])
	}
	// Each expert once, over the tokens that chose it.
	for x := range e {
		cnt := 0
		for t := range n {
			for rank := range k {
				if int(st.sel[t*k+rank]) == x {
					copy(st.xg[cnt*dim:(cnt+1)*dim], xb[t*dim:(t+1)*dim])
					st.slot[cnt] = int32(t*k + rank)
					cnt++
				}
			}
		}
		if cnt == 0 {
			continue
		}
		gate, up := s.gate[:cnt*h], s.up[:cnt*h]
		if l.GateUp != nil { // one product, each row's gate half then up half
			gu := s.fused[:cnt*2*h]
			s.ws.MatMul(p, l.GateUp[x], st.xg[:cnt*dim], cnt, gu)
			for i := range cnt {
				copy(gate[i*h:(i+1)*h], gu[i*2*h:i*2*h+h])
				copy(up[i*h:(i+1)*h], gu[i*2*h+h:(i+1)*2*h])
			}
		} else {
			s.ws.MatMul(p, l.Gate[x], st.xg[:cnt*dim], cnt, gate)
			s.ws.MatMulNext(p, l.Up[x], l.Gate[x], st.xg[:cnt*dim], cnt, up)
		}
		if l.UpBias != nil { // ggml_add_id: the expert's own bias row
			nn.AddBias(up, l.UpBias[x])
			nn.AddBias(gate, l.GateBias[x])
		}
		s.ffnTask = nn.FFNTask{Gate: gate, Up: up, Hidden: h, Kind: act}
		p.RunTask(cnt, 1, &s.ffnTask)
		s.ws.MatMul(p, l.Down[x], gate, cnt, st.yg[:cnt*dim])
		if l.DownBias != nil {
			nn.AddBias(st.yg[:cnt*dim], l.DownBias[x])
		}
		if l.DownScale != nil { // build_lora_mm_id's per-expert scale
			ys := l.DownScale[x]
			for i, y := range st.yg[:cnt*dim] {
				st.yg[i] = y * ys
			}
		}
		for i := range cnt {
			o := int(st.slot[i]) * dim
			copy(st.out[o:o+dim], st.yg[i*dim:(i+1)*dim])
		}
	}
	// Weighted sum in rank order: ggml_mul by the weights, then ggml_add.
	proj := s.proj[:n*dim]
	for t := range n {
		dst := proj[t*dim : (t+1)*dim]
		for rank := range k {
			w := st.w[t*k+rank]
			src := st.out[(t*k+rank)*dim : (t*k+rank+1)*dim]
			if rank == 0 {
				for i, y := range src {
					dst[i] = float32(y * w)
				}
				continue
			}
			for i, y := range src {
				dst[i] += float32(y * w)
			}
		}
	}
	if l.Shared != nil {
		step.sharedExpert(l)
	}
}

// sharedExpert adds the shared expert's output to the routed experts' sum
// in proj: proj = routed + shared(xb)·sigmoid(SharedGate·xb) (llama.cpp's
// build_moe_ffn, then ggml_add of the shared branch).
func (step *Step) sharedExpert(l *Experts) {
	s, n := &step.r.s, step.N
	step.SaveOutput()
	step.gated(l.Shared, actSwiGLU)
	if l.SharedGate != nil {
		dim, g := step.r.cfg.Dim, s.moe.shg[:n]
		step.mm(l.SharedGate, s.xb[:n*dim], n, g)
		for t := range n {
			f := sigmoid(g[t])
			row := s.proj[t*dim : (t+1)*dim]
			for i := range row {
				row[i] *= f
			}
		}
	}
	step.AddSaved()
}
