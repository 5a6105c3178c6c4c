package llama

import (
	"fmt"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
)

// Forward implements model.Model. The batch must continue the cached
// sequence: b.Pos[i] = CacheLen() + i.
func (m *Model) Forward(b *model.Batch, out []float32) (int, error) {
	n := len(b.Tokens)
	if len(b.Pos) != n || (b.Logits != nil && len(b.Logits) != n) {
		return 0, fmt.Errorf("llama: batch has %d tokens, %d positions, %d logit flags", n, len(b.Pos), len(b.Logits))
	}
	if err := m.cache.Check(m.cache.Len, n); err != nil {
		return 0, err
	}
	for i, t := range b.Tokens {
		if t < 0 || int(t) >= m.cfg.NVocab {
			return 0, fmt.Errorf("llama: token %d at batch index %d is outside the vocabulary (%d)", t, i, m.cfg.NVocab)
		}
		if int(b.Pos[i]) != m.cache.Len+i {
			return 0, fmt.Errorf("llama: position %d at batch index %d, want %d", b.Pos[i], i, m.cache.Len+i)
		}
	}
	wanted := 0
	for i := range n {
		if b.Wants(i) {
			wanted++
		}
	}
	if len(out) < wanted*m.cfg.NVocab {
		return 0, fmt.Errorf("llama: logits buffer holds %d values, need %d", len(out), wanted*m.cfg.NVocab)
	}
	m.grow(min(max(n, 1), maxUbatch))
	done := 0
	for lo := 0; lo < n; lo += maxUbatch {
		hi := min(lo+maxUbatch, n)
		m.s.rows = m.s.rows[:0]
		for i := lo; i < hi; i++ {
			if b.Wants(i) {
				m.s.rows = append(m.s.rows, i-lo)
			}
		}
		m.forward(b.Tokens[lo:hi], b.Pos[lo:hi], out[done*m.cfg.NVocab:])
		done += len(m.s.rows)
	}
	return done, nil
}

// forward evaluates one ubatch of n tokens; it reads like the paper.
func (m *Model) forward(tokens, pos []int32, logits []float32) {
	c, s, p := &m.cfg, &m.s, m.pool
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
	start := m.cache.Len
	if m.hooks != nil && m.hooks.Embeddings != nil {
		m.hooks.Embeddings(x)
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
		// Append K and V to the cache (F16).
		m.cache.Append(li, start, k, v, kernels.F32ToF16s)
		var obs nn.Observer
		if m.hooks != nil && m.hooks.Attention != nil {
			h, layer := m.hooks.Attention, li
			obs = func(tok, head int, w []float32) { h(layer, tok, head, w) }
		}
		m.attn.Forward(p, att, q, n, pos, m.cache.K[li], m.cache.V[li], obs)
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
		if m.hooks != nil && m.hooks.Residual != nil {
			m.hooks.Residual(li, x)
		}
	}
	m.cache.Len = start + n

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
