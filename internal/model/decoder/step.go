package decoder

import (
	"math"
	"time"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/nn"
)

// Step is one ubatch being evaluated, and the operations a family's forward
// pass is written in. They work on the runner's buffers: the residual
// stream x [N, dim], the normed block input xb [N, dim] and a block's
// output proj [N, dim].
type Step struct {
	r      *Runner
	N      int     // tokens in the ubatch
	Tokens []int32 // [N]
	Pos    []int32 // [N] each token's position in its sequence
	kv     *kvcache.Pool
	out    []float32 // logits of the tokens that want them
	rope   *nn.RoPE  // set by Angles: attention rotates Q and K
	local  *nn.RoPE  // set by SlidingAngles: the sliding layers' own RoPE
	hidden bool      // out takes hidden rows, not logits (Batch.Hidden)
	cut    bool      // the next mixer cuts the ubatch to the wanted tokens (KeepWanted)
}

// Embed sets the residual stream to the tokens' embeddings:
// x[t] = tab[Tokens[t]].
func (s *Step) Embed(tab *kernels.Matrix) {
	dim := s.r.cfg.Dim
	x := s.r.s.x
	for t, tok := range s.Tokens {
		tab.Row(x[t*dim:], int(tok))
	}
	s.rope, s.local = nil, nil
}

// AddPositions adds learned absolute position embeddings (GPT-2):
// x[t] += tab[Pos[t]].
func (s *Step) AddPositions(tab *kernels.Matrix) {
	dim := s.r.cfg.Dim
	x, tmp := s.r.s.x, s.r.s.proj[:dim]
	for t, p := range s.Pos {
		tab.Row(tmp, int(p))
		nn.Add(x[t*dim:(t+1)*dim], tmp)
	}
}

// ScaleEmbeddings multiplies the residual stream by √dim (Gemma).
func (s *Step) ScaleEmbeddings() { s.MulEmbeddings(float32(math.Sqrt(float64(s.r.cfg.Dim)))) }

// MulEmbeddings multiplies the residual stream by f (Granite's
// embedding_scale).
func (s *Step) MulEmbeddings(f float32) {
	x := s.r.s.x[:s.N*s.r.cfg.Dim]
	for i := range x {
		x[i] *= f
	}
}

// Angles computes each token's rotary angles; from here on Attention
// rotates queries and keys with rope.
func (s *Step) Angles(rope *nn.RoPE) {
	rd := s.r.cfg.RopeDims
	for t, p := range s.Pos {
		rope.Angles(s.r.s.cs[t*rd:(t+1)*rd], int(p))
	}
	s.rope = rope
}

// SlidingAngles computes each token's rotary angles for the sliding-window
// layers' own RoPE (Gemma 3: another base, unscaled); Attention rotates
// those layers' queries and keys with it.
func (s *Step) SlidingAngles(rope *nn.RoPE) {
	rd := rope.Dims // Config.RopeDimsOf a sliding layer
	for t, p := range s.Pos {
		rope.Angles(s.r.s.csSWA[t*rd:(t+1)*rd], int(p))
	}
	s.local = rope
}

// Embedded reports the residual stream entering the first block to the
// Embeddings hook.
func (s *Step) Embedded() {
	if h := s.r.hooks; h != nil && h.Embeddings != nil {
		h.Embeddings(s.r.s.x[:s.N*s.r.cfg.Dim])
	}
}

// norm applies n to rows of x into out.
func (s *Step) norm(out, x []float32, n *Norm) {
	if n.Layer {
		nn.LayerNorm(out, x, n.W, n.B, s.r.cfg.Eps)
		return
	}
	nn.RMSNorm(out, x, n.W, s.r.cfg.Eps)
}

// Norm normalizes the residual stream into the block input: xb = n(x).
func (s *Step) Norm(n *Norm) {
	d := s.N * s.r.cfg.Dim
	s.norm(s.r.s.xb[:d], s.r.s.x[:d], n)
}

// Input makes the residual stream itself the block input: xb = x (a
// post-norm encoder's blocks read the stream unnormalized: BERT).
func (s *Step) Input() {
	d := s.N * s.r.cfg.Dim
	copy(s.r.s.xb[:d], s.r.s.x[:d])
}

// NormStream normalizes the residual stream in place: x = n(x) (BERT's
// norms after each residual add, and of its embeddings).
func (s *Step) NormStream(n *Norm) {
	x := s.r.s.x[:s.N*s.r.cfg.Dim]
	s.norm(x, x, n)
}

// AddRow adds one row to every token's embedding: x[t] += row (BERT's
// token type 0, which llama.cpp adds to every token).
func (s *Step) AddRow(row []float32) {
	dim := s.r.cfg.Dim
	x := s.r.s.x
	for t := range s.N {
		nn.Add(x[t*dim:(t+1)*dim], row)
	}
}

// NormOutput normalizes a block's output in place: proj = n(proj) (Gemma 2).
func (s *Step) NormOutput(n *Norm) {
	p := s.r.s.proj[:s.N*s.r.cfg.Dim]
	s.norm(p, p, n)
}

// ScaleOutput multiplies a block's output by f before its residual add
// (Granite's residual_scale): proj *= f.
func (s *Step) ScaleOutput(f float32) {
	p := s.r.s.proj[:s.N*s.r.cfg.Dim]
	for i := range p {
		p[i] *= f
	}
}

// Residual adds a block's output to the residual stream: x += proj.
func (s *Step) Residual() {
	d := s.N * s.r.cfg.Dim
	nn.Add(s.r.s.x[:d], s.r.s.proj[:d])
}

// KeepWanted narrows the ubatch to the tokens that want output (logits,
// or hidden rows) from the next mixer on, as llama.cpp's inp_out_ids does:
// a family calls it in its last layer, before the mixer. The mixer still
// stores every token's keys and values (and recurrent state); attention
// then computes the queries, the weighted values and the output projection
// of the wanted tokens only (on the untiled path), and after it their
// residual rows move to the front, in order, and N becomes their number
// (at least one row is kept, so the operations that follow never see an
// empty ubatch). A 128-token prompt whose last token wants logits runs its
// last layer's query and output projections and FFN for one token, not 128
// (tinyllama: 4.4% of the prompt's multiply-adds). Only row-wise
// operations may follow the mixer. The products of the kept rows keep the
// order the whole ubatch takes (kernels.Workspace.BatchOrder), and each
// query attends in its sequence's batch order, so every kept row is bit for
// bit what it is without the cut. Nothing is cut for an observer (Hooks:
// they see every token) or with adapters (their token groups would need
// renumbering).
func (s *Step) KeepWanted() {
	st := &s.r.s
	s.cut = len(st.rows) < s.N && len(st.lora.groups) == 0 && s.r.hooks == nil
}

// cutRows carries out KeepWanted's cut once the mixer has run: the wanted
// tokens' rows of the residual stream (and of Gemma 4's per-layer inputs,
// read after the FFN; and of the block output, unless the mixer wrote only
// theirs) move to the front.
func (s *Step) cutRows(proj bool) {
	r, st := s.r, &s.r.s
	dim, ple := r.cfg.Dim, r.cfg.NLayers*r.cfg.PerLayerEmbd
	for i, row := range st.rows { // rows ascend: each moves down or stays
		copy(st.x[i*dim:(i+1)*dim], st.x[row*dim:(row+1)*dim])
		if proj {
			copy(st.proj[i*dim:(i+1)*dim], st.proj[row*dim:(row+1)*dim])
		}
		if ple > 0 {
			copy(st.ple[i*ple:(i+1)*ple], st.ple[row*ple:(row+1)*ple])
		}
		st.rows[i] = i
	}
	st.ws.BatchOrder = s.N >= 2
	s.N, s.cut = max(1, len(st.rows)), false
}

// LayerDone reports the residual stream after layer li to the Residual hook.
func (s *Step) LayerDone(li int) {
	if h := s.r.hooks; h != nil && h.Residual != nil {
		h.Residual(li, s.r.s.x[:s.N*s.r.cfg.Dim])
	}
}

// Logits normalizes the rows that want logits with the head's norm and
// multiplies them by its output matrix; with softcap > 0 the logits are
// soft-capped (Gemma 2).
func (s *Step) Logits(h *Head, softcap float32) {
	r, st := s.r, &s.r.s
	st.ws.BatchOrder = false // the head multiplies the wanted rows alone, cut or not
	if len(st.rows) == 0 {
		return
	}
	dim, nv := r.cfg.Dim, r.cfg.NVocab
	in := st.outIn[:len(st.rows)*dim]
	if s.hidden { // an embedding model's rows: the final norm's output
		in = s.out[:len(st.rows)*dim]
	}
	for i, row := range st.rows {
		copy(in[i*dim:(i+1)*dim], st.x[row*dim:(row+1)*dim])
	}
	if h.Norm.W != nil { // encoders (BERT) end with their last layer's norm
		s.norm(in, in, &h.Norm)
	}
	if s.hidden {
		return
	}
	out := s.out[:len(st.rows)*nv]
	if len(st.lora.groups) == 0 {
		st.ws.MatMul(r.pool, h.Output, in, len(st.rows), out)
	} else { // the head's rows are the wanted tokens': their groups, renumbered
		tok := st.lora.groups
		st.lora.groups = st.lora.rowGroups(tok, st.rows)
		s.mm(h.Output, in, len(st.rows), out)
		st.lora.groups = tok
	}
	if softcap > 0 {
		nn.Softcap(out, softcap)
	}
}

// ScaleLogits multiplies the logits Logits wrote by f (Granite divides
// them by its logit_scale: f = 1/logit_scale in float32, as ggml_scale).
func (s *Step) ScaleLogits(f float32) {
	out := s.out[:len(s.r.s.rows)*s.r.cfg.NVocab]
	for i := range out {
		out[i] *= f
	}
}

// Attention computes layer li's attention of the block input xb into proj:
// projections (split or fused), biases, Q/K norms, RoPE (after Angles),
// queries scaled first when the family does so (Config.QPreScale), the
// cache, attention per sequence (through the sliding window on the layers
// Config.Sliding names), output projection. After KeepWanted, on the
// untiled path, only the wanted tokens' queries attend (keys and values
// are every token's) and proj holds their rows alone.
func (s *Step) Attention(li int, a *Attn) {
	r, st, p := s.r, &s.r.s, s.r.pool
	c, n := r.cfg, s.N
	hd, rd := c.HeadDimOf(li), c.RopeDimsOf(li)
	qDim, kvDim := c.NHeads*hd, c.KVDimOf(li)
	src := c.KVLayer(li) // the layer whose cache this one reads (itself but for Gemma 4's shared layers)
	at := r.attn[li]
	at.Window, at.Sinks, at.RowDim, at.Types = 0, a.Sinks, s.kv.KVDim, s.kv.Types
	at.NonCausal, at.Symmetric = c.NonCausal, c.SymmetricSWA
	// The queries: every token's, or after KeepWanted the wanted ones'
	// (query i is token qt[i]); the tiled path groups a sequence's
	// queries in tiles and cuts after attending instead.
	nq, qt := n, st.qtok[:n]
	wanted := s.cut && !at.Tiled()
	prevQ := a.Q // K's product reuses Q's input conversion, unless Q had other rows
	if wanted {
		// The products of fewer rows keep the ubatch's order.
		st.ws.BatchOrder, prevQ = n >= 2, nil
		nq, qt = max(1, len(st.rows)), st.qtok[:0]
		for _, t := range st.rows {
			qt = append(qt, int32(t))
		}
		if len(qt) == 0 {
			qt = append(qt, 0)
		}
	} else {
		for t := range qt {
			qt[t] = int32(t)
		}
	}
	xb, q, k, v := st.xb[:n*c.Dim], st.q[:nq*qDim], st.k[:n*kvDim], st.v[:n*kvDim]
	// xq: the block input of the queried tokens (their rows gathered into
	// proj, free until the output projection).
	xq := xb
	if wanted {
		xq = st.proj[:nq*c.Dim]
		for i, t := range qt {
			copy(xq[i*c.Dim:(i+1)*c.Dim], xb[int(t)*c.Dim:(int(t)+1)*c.Dim])
		}
	}
	switch {
	case a.QKV != nil: // one product, then the rows split into Q, K, V
		w := qDim + 2*kvDim
		qkv := st.fused[:n*w]
		s.mm(a.QKV, xb, n, qkv)
		if a.QKVBias != nil {
			nn.AddBias(qkv, a.QKVBias)
		}
		for t := range n {
			row := qkv[t*w : (t+1)*w]
			copy(k[t*kvDim:(t+1)*kvDim], row[qDim:qDim+kvDim])
			copy(v[t*kvDim:(t+1)*kvDim], row[qDim+kvDim:])
		}
		for i, t := range qt {
			copy(q[i*qDim:(i+1)*qDim], qkv[int(t)*w:int(t)*w+qDim])
		}
	case a.Gated: // each head's query, then its output gate
		qg := st.qg[:nq*2*qDim]
		if wanted {
			s.mm(a.Q, xq, nq, qg)
			s.mmNext(a.K, prevQ, xb, n, k)
			s.mmNext(a.V, a.K, xb, n, v)
		} else {
			s.mms([3]*kernels.Matrix{a.Q, a.K, a.V}, xb, n, [3][]float32{qg, k, v})
		}
		for i := range nq {
			for h := range c.NHeads {
				row := qg[(i*c.NHeads+h)*2*hd:]
				copy(q[i*qDim+h*hd:i*qDim+(h+1)*hd], row[:hd])
			}
		}
	case src != li: // keys and values are another layer's (Gemma 4): queries only
		s.mm(a.Q, xq, nq, q)
	case a.V == nil: // V is the raw K projection (Gemma 4's K = V layers)
		s.mm(a.Q, xq, nq, q)
		s.mmNext(a.K, prevQ, xb, n, k)
		copy(v, k)
	case wanted: // queries for the kept rows only
		s.mm(a.Q, xq, nq, q)
		s.mmNext(a.K, prevQ, xb, n, k)
		s.mmNext(a.V, a.K, xb, n, v)
	default:
		s.mms([3]*kernels.Matrix{a.Q, a.K, a.V}, xb, n, [3][]float32{q, k, v})
	}
	own := src == li
	if a.QBias != nil {
		nn.AddBias(q, a.QBias)
		nn.AddBias(k, a.KBias)
		nn.AddBias(v, a.VBias)
	}
	if a.QNorm != nil { // per-head RMSNorm (Qwen3, Gemma 3/4), before RoPE
		nn.RMSNorm(q, q, a.QNorm, c.Eps)
		if own {
			nn.RMSNorm(k, k, a.KNorm, c.Eps)
		}
	}
	if c.VNorm && own { // Gemma 4: values RMS-normed per head, no weight
		nn.RMSNorm(v, v, r.ones[:hd], c.Eps)
	}
	rope, cs := s.rope, st.cs
	if s.local != nil && c.Sliding(li) {
		rope, cs = s.local, st.csSWA
	}
	if rope != nil && c.Rotary(li) {
		for i, t := range qt {
			rope.Apply(q[i*qDim:(i+1)*qDim], hd, cs[int(t)*rd:(int(t)+1)*rd])
		}
		if own {
			for t := range n {
				rope.Apply(k[t*kvDim:(t+1)*kvDim], hd, cs[t*rd:(t+1)*rd])
			}
		}
	}
	if c.AttnTempScale != 0 { // Llama 4 / Mistral 3 temperature tuning, per position
		for i, t := range qt {
			fl := math.Floor(float64(float32(s.Pos[t]) / float32(c.AttnTempFloor)))
			sc := float32(math.Log(fl+1)*float64(c.AttnTempScale) + 1)
			qi := q[i*qDim : (i+1)*qDim]
			for j := range qi {
				qi[j] *= sc
			}
		}
	}
	if c.QPreScale { // ggml_scale on Q, before its F16 rounding in the product
		sc := c.Scale()
		for i := range q {
			q[i] *= sc
		}
	}
	// Store K and V in the cache (F16), then attend per sequence.
	if own {
		r.store(s.kv, li, k, v)
	}
	var obs nn.Observer
	if r.hooks != nil && r.hooks.Attention != nil {
		h, layer := r.hooks.Attention, li
		obs = func(tok, head int, w []float32) { h(layer, tok, head, w) }
	}
	seqs := st.aseq
	if c.Sliding(li) {
		at.Window = c.SlidingWindow
		if s.kv.Sliding(src) { // the pool keeps only the window: its slots
			seqs = st.wseq
		}
	}
	// Each query's position and sequence; a sequence keeps the orders set
	// for all its tokens in the ubatch (nn.Seq.SetOrders), so a query
	// attends as it does beside them.
	pos, seq := s.Pos, st.seq[:n]
	if wanted {
		pos, seq = st.qpos[:nq], st.qseq[:nq]
		for i, t := range qt {
			pos[i], seq[i] = s.Pos[t], st.seq[t]
		}
	}
	att := st.att[:nq*qDim]
	t0 := time.Now()
	at.Forward(p, att, q, nq, pos, seq, seqs, s.kv.K[src], s.kv.V[src], obs)
	r.attnTime += time.Since(t0)
	if a.Gated { // att ⊙ sigmoid(gate), per head
		qg := st.qg[:nq*2*qDim]
		for i := range nq {
			for h := range c.NHeads {
				gate := qg[(i*c.NHeads+h)*2*hd+hd : (i*c.NHeads+h+1)*2*hd]
				o := att[i*qDim+h*hd : i*qDim+(h+1)*hd]
				for j := range o {
					o[j] *= sigmoid(gate[j])
				}
			}
		}
	}
	s.mm(a.Out, att, nq, st.proj[:nq*c.Dim])
	if a.OutBias != nil {
		nn.AddBias(st.proj[:nq*c.Dim], a.OutBias)
	}
	if s.cut { // proj holds the wanted rows alone, or every token's
		s.cutRows(!wanted)
	}
}

// Activation kinds of nn.FFNTask.
const (
	actSwiGLU    = 0
	actGELU      = 1
	actGeGLU     = 2
	actSwiGLUOAI = 3
)

// SwiGLU computes down(silu(gate(xb))·up(xb)) into proj.
func (s *Step) SwiGLU(f *FFN) { s.gated(f, actSwiGLU) }

// GeGLU computes down(gelu(gate(xb))·up(xb)) into proj (tanh GELU, Gemma).
func (s *Step) GeGLU(f *FFN) { s.gated(f, actGeGLU) }

// gated runs a gated FFN: gate and up from two products or one fused one.
func (s *Step) gated(f *FFN, kind uint8) {
	r, st, p := s.r, &s.r.s, s.r.pool
	c, n, h := r.cfg, s.N, f.Down.Cols // the layer's own width (Gemma 4's vary)
	xb, gate, up := st.xb[:n*c.Dim], st.gate[:n*h], st.up[:n*h]
	if f.Fused { // Phi-3: one product, the gate's half then up's
		gu := st.fused[:n*2*h]
		s.mm(f.Up, xb, n, gu)
		for t := range n {
			copy(gate[t*h:(t+1)*h], gu[t*2*h:t*2*h+h])
			copy(up[t*h:(t+1)*h], gu[t*2*h+h:(t+1)*2*h])
		}
	} else {
		s.mms([3]*kernels.Matrix{f.Gate, f.Up}, xb, n, [3][]float32{gate, up})
	}
	st.ffnTask = nn.FFNTask{Gate: gate, Up: up, Hidden: h, Kind: kind}
	p.RunTask(n, 1, &st.ffnTask)
	s.mm(f.Down, gate, n, st.proj[:n*c.Dim])
}

// GELU computes down(gelu(up(xb) + upBias)) + downBias into proj (tanh
// GELU, GPT-2's MLP).
func (s *Step) GELU(f *FFN) {
	r, st, p := s.r, &s.r.s, s.r.pool
	c, n, h := r.cfg, s.N, r.cfg.HiddenDim
	xb, up := st.xb[:n*c.Dim], st.up[:n*h]
	s.mm(f.Up, xb, n, up)
	if f.UpBias != nil {
		nn.AddBias(up, f.UpBias)
	}
	st.ffnTask = nn.FFNTask{Up: up, Hidden: h, Kind: actGELU}
	p.RunTask(n, 1, &st.ffnTask)
	s.mm(f.Down, up, n, st.proj[:n*c.Dim])
	if f.DownBias != nil {
		nn.AddBias(st.proj[:n*c.Dim], f.DownBias)
	}
}
