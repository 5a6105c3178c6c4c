package llama

import (
	"fmt"

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
	dim, hd := c.Dim, c.HeadDim
	qDim, kvDim := c.NHeads*hd, c.NKVHeads*hd
	x, xb := s.x[:n*dim], s.xb[:n*dim]
	q, k, v := s.q[:n*qDim], s.k[:n*kvDim], s.v[:n*kvDim]
	att, proj := s.att[:n*qDim], s.proj[:n*dim]
	gate, up := s.gate[:n*c.HiddenDim], s.up[:n*c.HiddenDim]

	// Token embeddings: x[t] = TokEmbd[tokens[t]]; rotary angles per position.
	rd := c.RopeDims
	for t, tok := range tokens {
		m.TokEmbd.Row(x[t*dim:], int(tok))
		m.rope.Angles(s.cs[t*rd:(t+1)*rd], int(pos[t]))
	}
	if r.hooks != nil && r.hooks.Embeddings != nil {
		r.hooks.Embeddings(x)
	}

	for li := range m.Layers {
		l := &m.Layers[li]
		// Attention block.
		nn.RMSNorm(xb, x, l.AttnNorm, c.Eps)
		kernels.MatMul(p, l.AttnQ, xb, n, q, s.act)
		kernels.MatMulNext(p, l.AttnK, l.AttnQ, xb, n, k, s.act)
		kernels.MatMulNext(p, l.AttnV, l.AttnK, xb, n, v, s.act)
		if l.AttnQBias != nil {
			nn.AddBias(q, l.AttnQBias)
			nn.AddBias(k, l.AttnKBias)
			nn.AddBias(v, l.AttnVBias)
		}
		if l.AttnQNorm != nil { // per-head RMSNorm (Qwen3), before RoPE
			nn.RMSNorm(q, q, l.AttnQNorm, c.Eps)
			nn.RMSNorm(k, k, l.AttnKNorm, c.Eps)
		}
		for t := range n {
			m.rope.Apply(q[t*qDim:(t+1)*qDim], hd, s.cs[t*rd:(t+1)*rd])
			m.rope.Apply(k[t*kvDim:(t+1)*kvDim], hd, s.cs[t*rd:(t+1)*rd])
		}
		// Store K and V in the cache (F16), then attend per sequence.
		r.store(pool, li, k, v)
		var obs nn.Observer
		if r.hooks != nil && r.hooks.Attention != nil {
			h, layer := r.hooks.Attention, li
			obs = func(tok, head int, w []float32) { h(layer, tok, head, w) }
		}
		r.attn.Forward(p, att, q, n, pos, s.seq[:n], s.aseq, pool.K[li], pool.V[li], obs)
		kernels.MatMul(p, l.AttnOut, att, n, proj, s.act)
		nn.Add(x, proj)

		// Feed-forward block: down(silu(gate(x))·up(x)).
		nn.RMSNorm(xb, x, l.FFNNorm, c.Eps)
		kernels.MatMul(p, l.FFNGate, xb, n, gate, s.act)
		kernels.MatMulNext(p, l.FFNUp, l.FFNGate, xb, n, up, s.act)
		s.swiglu = nn.SwiGLUTask{Gate: gate, Up: up, Hidden: c.HiddenDim}
		p.RunTask(n, 1, &s.swiglu)
		kernels.MatMul(p, l.FFNDown, gate, n, proj, s.act)
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
	nn.RMSNorm(in, in, m.OutputNorm, c.Eps)
	kernels.MatMul(p, m.Output, in, len(s.rows), logits[:len(s.rows)*c.NVocab], s.act)
}
