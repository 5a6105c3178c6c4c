package llama

import (
	"fmt"
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
	"github.com/loom-inference/loom/internal/quant"
)

// Forward implements model.Runner.
func (r *Runner) Forward(b *model.Batch, out []float32) (int, error) {
	c := &r.m.cfg
	wanted, err := b.Check(c.NVocab, r.MaxCtx())
	if err != nil {
		return 0, fmt.Errorf("llama: %w", err)
	}
	if len(out) < wanted*c.NVocab {
		return 0, fmt.Errorf("llama: logits buffer holds %d values, need %d", len(out), wanted*c.NVocab)
	}
	pool := b.Seqs[0].Pool()
	if pool.NLayers != c.NLayers || pool.KVDim != c.KVDim() {
		return 0, fmt.Errorf("llama: KV pool of %d layers × %d dims, model has %d × %d", pool.NLayers, pool.KVDim, c.NLayers, c.KVDim())
	}
	// Cache room for every sequence's tokens, before anything is computed.
	n := len(b.Tokens)
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && b.SeqOf(hi) == b.SeqOf(lo) {
			hi++
		}
		sq := b.Seqs[b.SeqOf(lo)]
		if sq.Pool() != pool {
			return 0, fmt.Errorf("llama: the batch's sequences use different KV pools")
		}
		if err := sq.Reserve(hi - lo); err != nil {
			return 0, fmt.Errorf("llama: %d positions for sequence %d: %w", hi-lo, b.SeqOf(lo), err)
		}
		lo = hi
	}
	r.grow(min(n, maxUbatch))
	done := 0
	for lo := 0; lo < n; lo += maxUbatch {
		hi := min(lo+maxUbatch, n)
		r.s.rows = r.s.rows[:0]
		for i := lo; i < hi; i++ {
			if b.Wants(i) {
				r.s.rows = append(r.s.rows, i-lo)
			}
		}
		r.place(b, lo, hi)
		r.forward(b.Tokens[lo:hi], b.Pos[lo:hi], pool, out[done*c.NVocab:])
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
// K slot and V row, and per sequence the V row of every position it sees.
func (r *Runner) place(b *model.Batch, lo, hi int) {
	const B = kvcache.BlockSize
	s, kvDim, hd := &r.s, r.m.cfg.KVDim(), r.m.cfg.HeadDim
	s.aseq, s.vrows, s.vstart = s.aseq[:0], s.vrows[:0], s.vstart[:0]
	for i := lo; i < hi; {
		j := i + 1
		for j < hi && b.SeqOf(j) == b.SeqOf(i) {
			j++
		}
		sq := b.Seqs[b.SeqOf(i)]
		blocks := sq.Blocks()
		last := int(b.Pos[j-1])
		s.vstart = append(s.vstart, len(s.vrows))
		for p := 0; p <= last; p++ {
			s.vrows = append(s.vrows, int32(sq.Row(p)))
		}
		for t := i; t < j; t++ {
			p := int(b.Pos[t])
			s.seq[t-lo] = int32(len(s.aseq))
			s.kslot[t-lo] = int(blocks[p/B])*B*kvDim + p%B
			s.vrow[t-lo] = sq.Row(p)
		}
		as := nn.Seq{Blocks: blocks}
		as.SetOrders(j-i, hd, last)
		s.aseq = append(s.aseq, as)
		i = j
	}
	// VRows point into s.vrows once it has stopped growing.
	s.vstart = append(s.vstart, len(s.vrows))
	for k := range s.aseq {
		s.aseq[k].VRows = s.vrows[s.vstart[k]:s.vstart[k+1]]
	}
}

// store writes the ubatch's keys and values of layer l into the cache (F16;
// K transposed within its block).
func (r *Runner) store(pool *kvcache.Pool, l int, k, v []float32) {
	const B = kvcache.BlockSize
	s, kvDim := &r.s, r.m.cfg.KVDim()
	kl, vl := pool.K[l], pool.V[l]
	for t := range len(k) / kvDim {
		kernels.F32ToF16s(vl[s.vrow[t]:s.vrow[t]+kvDim], v[t*kvDim:(t+1)*kvDim])
		ks := kl[s.kslot[t]:]
		for e, x := range k[t*kvDim : (t+1)*kvDim] {
			ks[e*B] = quant.F32ToF16(x)
		}
	}
}

// forward evaluates one ubatch of n tokens; it reads like the paper.
func (r *Runner) forward(tokens, pos []int32, pool *kvcache.Pool, logits []float32) {
	m, c, s, p := r.m, &r.m.cfg, &r.s, r.pool
	n := len(tokens)
	dim := c.Dim
	x, xb, proj := s.x[:n*dim], s.xb[:n*dim], s.proj[:n*dim]

	// Token embeddings: x[t] = TokEmbd[tokens[t]] (· √dim for Gemma, plus
	// the learned position for GPT-2); rotary angles per position.
	rd := c.RopeDims
	for t, tok := range tokens {
		m.TokEmbd.Row(x[t*dim:], int(tok))
		if m.PosEmbd != nil {
			m.PosEmbd.Row(s.proj[:dim], int(pos[t]))
			nn.Add(x[t*dim:(t+1)*dim], s.proj[:dim])
		} else {
			m.rope.Angles(s.cs[t*rd:(t+1)*rd], int(pos[t]))
		}
	}
	if c.EmbedScale {
		sc := float32(math.Sqrt(float64(dim)))
		for i := range x {
			x[i] *= sc
		}
	}
	if r.hooks != nil && r.hooks.Embeddings != nil {
		r.hooks.Embeddings(x)
	}

	for li := range m.Layers {
		l := &m.Layers[li]
		// Attention block.
		r.norm(xb, x, l.AttnNorm, l.AttnNormB)
		r.attention(li, l, n, pos, pool)
		if l.PostAttn != nil { // Gemma 2 normalizes the block's output too
			nn.RMSNorm(proj, proj, l.PostAttn, c.Eps)
		}
		nn.Add(x, proj)

		// Feed-forward block.
		r.norm(xb, x, l.FFNNorm, l.FFNNormB)
		if l.Router != nil {
			r.moe(li, l, n)
		} else {
			r.ffn(l, n)
		}
		if l.PostFFN != nil {
			nn.RMSNorm(proj, proj, l.PostFFN, c.Eps)
		}
		nn.Add(x, proj)
		if r.hooks != nil && r.hooks.Residual != nil {
			r.hooks.Residual(li, x)
		}
	}

	// LM head, only for the rows that want logits.
	if len(s.rows) == 0 {
		return
	}
	in := s.outIn[:len(s.rows)*dim]
	for i, r := range s.rows {
		copy(in[i*dim:(i+1)*dim], x[r*dim:(r+1)*dim])
	}
	r.norm(in, in, m.OutputNorm, m.OutputNB)
	out := logits[:len(s.rows)*c.NVocab]
	kernels.MatMul(p, m.Output, in, len(s.rows), out, s.act)
	if c.FinalSoftcap > 0 {
		nn.Softcap(out, c.FinalSoftcap)
	}
}

// norm is the model's normalization: LayerNorm with bias, or RMSNorm.
func (r *Runner) norm(out, x, w, b []float32) {
	if r.m.cfg.LayerNorm {
		nn.LayerNorm(out, x, w, b, r.m.cfg.Eps)
		return
	}
	nn.RMSNorm(out, x, w, r.m.cfg.Eps)
}

// attention computes layer li's attention of the normed input s.xb into
// s.proj: projections (split or fused), biases, Q/K norms, RoPE, the
// cache, attention per sequence, output projection.
func (r *Runner) attention(li int, l *Layer, n int, pos []int32, pool *kvcache.Pool) {
	m, c, s, p := r.m, &r.m.cfg, &r.s, r.pool
	hd, rd := c.HeadDim, c.RopeDims
	qDim, kvDim := c.NHeads*hd, c.NKVHeads*hd
	xb, q, k, v := s.xb[:n*c.Dim], s.q[:n*qDim], s.k[:n*kvDim], s.v[:n*kvDim]
	if l.AttnQKV != nil { // one product, then the rows split into Q, K, V
		w := qDim + 2*kvDim
		qkv := s.qkv[:n*w]
		kernels.MatMul(p, l.AttnQKV, xb, n, qkv, s.act)
		if l.AttnQKVBias != nil {
			nn.AddBias(qkv, l.AttnQKVBias)
		}
		for t := range n {
			row := qkv[t*w : (t+1)*w]
			copy(q[t*qDim:(t+1)*qDim], row[:qDim])
			copy(k[t*kvDim:(t+1)*kvDim], row[qDim:qDim+kvDim])
			copy(v[t*kvDim:(t+1)*kvDim], row[qDim+kvDim:])
		}
	} else {
		kernels.MatMul(p, l.AttnQ, xb, n, q, s.act)
		kernels.MatMulNext(p, l.AttnK, l.AttnQ, xb, n, k, s.act)
		kernels.MatMulNext(p, l.AttnV, l.AttnK, xb, n, v, s.act)
	}
	if l.AttnQBias != nil {
		nn.AddBias(q, l.AttnQBias)
		nn.AddBias(k, l.AttnKBias)
		nn.AddBias(v, l.AttnVBias)
	}
	if l.AttnQNorm != nil { // per-head RMSNorm (Qwen3), before RoPE
		nn.RMSNorm(q, q, l.AttnQNorm, c.Eps)
		nn.RMSNorm(k, k, l.AttnKNorm, c.Eps)
	}
	if !c.LearnedPos {
		for t := range n {
			m.rope.Apply(q[t*qDim:(t+1)*qDim], hd, s.cs[t*rd:(t+1)*rd])
			m.rope.Apply(k[t*kvDim:(t+1)*kvDim], hd, s.cs[t*rd:(t+1)*rd])
		}
	}
	if c.QPreScale { // ggml_scale on Q, before its F16 rounding in the product
		sc := 1 / float32(math.Sqrt(float64(hd)))
		for i := range q {
			q[i] *= sc
		}
	}
	// Store K and V in the cache (F16), then attend per sequence.
	r.store(pool, li, k, v)
	var obs nn.Observer
	if r.hooks != nil && r.hooks.Attention != nil {
		h, layer := r.hooks.Attention, li
		obs = func(tok, head int, w []float32) { h(layer, tok, head, w) }
	}
	r.attn.Window = 0
	if c.Sliding(li) {
		r.attn.Window = c.SlidingWindow
	}
	att := s.att[:n*qDim]
	r.attn.Forward(p, att, q, n, pos, s.seq[:n], s.aseq, pool.K[li], pool.V[li], obs)
	kernels.MatMul(p, l.AttnOut, att, n, s.proj[:n*c.Dim], s.act)
	if l.AttnOutBias != nil {
		nn.AddBias(s.proj[:n*c.Dim], l.AttnOutBias)
	}
}

// ffn computes the dense feed-forward block of s.xb into s.proj:
// down(silu(gate)·up), down(gelu(gate)·up) or down(gelu(up)).
func (r *Runner) ffn(l *Layer, n int) {
	c, s, p := &r.m.cfg, &r.s, r.pool
	h := c.HiddenDim
	xb, gate, up := s.xb[:n*c.Dim], s.gate[:n*h], s.up[:n*h]
	switch {
	case l.FusedGateUp: // Phi-3: one product, the gate's half then up's
		gu := s.qkv[:n*2*h]
		kernels.MatMul(p, l.FFNUp, xb, n, gu, s.act)
		for t := range n {
			copy(gate[t*h:(t+1)*h], gu[t*2*h:t*2*h+h])
			copy(up[t*h:(t+1)*h], gu[t*2*h+h:(t+1)*2*h])
		}
	case l.FFNGate != nil:
		kernels.MatMul(p, l.FFNGate, xb, n, gate, s.act)
		kernels.MatMulNext(p, l.FFNUp, l.FFNGate, xb, n, up, s.act)
	default:
		kernels.MatMul(p, l.FFNUp, xb, n, up, s.act)
		if l.FFNUpBias != nil {
			nn.AddBias(up, l.FFNUpBias)
		}
	}
	s.ffnTask = nn.FFNTask{Gate: gate, Up: up, Hidden: h, Kind: uint8(c.FFN)}
	p.RunTask(n, 1, &s.ffnTask)
	in := gate
	if c.FFN == model.GELU {
		in = up
	}
	kernels.MatMul(p, l.FFNDown, in, n, s.proj[:n*c.Dim], s.act)
	if l.FFNDownBias != nil {
		nn.AddBias(s.proj[:n*c.Dim], l.FFNDownBias)
	}
}
