package decoder

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/libm"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
)

// DeltaNet is a gated delta net's weights: the linear-attention layers of
// Qwen3.5 and Qwen3-Next (llama.cpp's build_layer_attn_linear). With H_k =
// ssm.group_count key heads of S = ssm.state_size and H_v =
// ssm.time_step_rank value heads of S (ssm.inner_size = H_v·S), a token's
//
//	q, k, v = silu(causal_conv(attn_qkv·x))      Q, K: [H_k, S], V: [H_v, S]
//	q, k    = q/‖q‖, k/‖k‖                       per head
//	g       = ssm_a · softplus(ssm_alpha·x + ssm_dt.bias)   [H_v] decay (log)
//	β       = sigmoid(ssm_beta·x)                [H_v] write strength
//
// update each value head h's state M [S (value), S (key)] with the key
// head h mod H_k (llama.cpp's tiled head order):
//
//	M = e^g·M;  d = β(v − M·k);  M += d kᵀ;  o = M·q / √S
//
// and the layer's output is ssm_out · (rms_norm(o_h)·ssm_norm ⊙ silu(z_h))
// with z = attn_gate·x.
//
// Qwen3-Next's delta net (BindDeltaNetNext) differs in two ways: value
// head h reads key head h/(H_v/H_k) (Grouped), and one product BA gives
// the write strengths and decays, per key head its H_v/H_k betas, then
// their alphas.
type DeltaNet struct {
	QKV     *kernels.Matrix // [2·H_k·S + H_v·S, dim]: the Q, K and V channels
	Gate    *kernels.Matrix // [H_v·S, dim]: z
	Beta    *kernels.Matrix // [H_v, dim]
	Alpha   *kernels.Matrix // [H_v, dim]
	BA      *kernels.Matrix // [2·H_v, dim] in place of Beta and Alpha (Qwen3-Next)
	Grouped bool            // value head h reads key head h/(H_v/H_k), not h mod H_k
	Conv    []float32       // [taps][channels]: per tap, the oldest input's first, its weights (convTable)
	DtBias  []float32       // [H_v]
	A       []float32       // [H_v] (−exp(A_log))
	Norm    []float32       // [S]
	Out     *kernels.Matrix // [dim, H_v·S]
}

// BindDeltaNet binds block p's gated delta net.
func BindDeltaNet(b *model.Binder, c *model.Config, p string) *DeltaNet {
	g := c.SSM
	ch := DeltaNetChannels(c)
	return &DeltaNet{
		QKV:    b.Matrix(p+"attn_qkv.weight", ch, c.Dim),
		Gate:   b.Matrix(p+"attn_gate.weight", g.Inner, c.Dim),
		Beta:   b.Matrix(p+"ssm_beta.weight", g.DtRank, c.Dim),
		Alpha:  b.Matrix(p+"ssm_alpha.weight", g.DtRank, c.Dim),
		Conv:   convTable(b, p+"ssm_conv1d.weight", ch, g.Conv),
		DtBias: b.Vector(p+"ssm_dt.bias", g.DtRank),
		A:      b.Vector(p+"ssm_a", g.DtRank),
		Norm:   b.Vector(p+"ssm_norm.weight", g.Inner/g.DtRank),
		Out:    b.Matrix(p+"ssm_out.weight", c.Dim, g.Inner),
	}
}

// BindDeltaNetNext binds block p's Qwen3-Next delta net: grouped value
// heads and the fused ssm_ba.
func BindDeltaNetNext(b *model.Binder, c *model.Config, p string) *DeltaNet {
	g := c.SSM
	ch := DeltaNetChannels(c)
	return &DeltaNet{
		QKV:     b.Matrix(p+"attn_qkv.weight", ch, c.Dim),
		Gate:    b.Matrix(p+"attn_gate.weight", g.Inner, c.Dim),
		BA:      b.Matrix(p+"ssm_ba.weight", 2*g.DtRank, c.Dim),
		Grouped: true,
		Conv:    convTable(b, p+"ssm_conv1d.weight", ch, g.Conv),
		DtBias:  b.Vector(p+"ssm_dt.bias", g.DtRank),
		A:       b.Vector(p+"ssm_a", g.DtRank),
		Norm:    b.Vector(p+"ssm_norm.weight", g.Inner/g.DtRank),
		Out:     b.Matrix(p+"ssm_out.weight", c.Dim, g.Inner),
	}
}

func (d *DeltaNet) matrices(ms []*kernels.Matrix) []*kernels.Matrix {
	if d == nil {
		return ms
	}
	return appendSet(ms, d.QKV, d.Gate, d.Beta, d.Alpha, d.BA, d.Out)
}

// DeltaNetChannels is the number of channels the convolution runs over:
// Q, K and V.
func DeltaNetChannels(c *model.Config) int { return 2*c.SSM.Groups*c.SSM.State + c.SSM.Inner }

// DeltaNetStateElems is a gated delta net's state per sequence: the last
// taps−1 inputs of every channel, then H_v matrices of S×S.
//
//	[taps−1][channels] then [H_v][S (value)][S (key)]
func DeltaNetStateElems(c *model.Config) int {
	s := c.SSM.Inner / c.SSM.DtRank
	return (c.SSM.Conv-1)*DeltaNetChannels(c) + c.SSM.DtRank*s*s
}

// recRun is one sequence's tokens in a ubatch of a model with recurrent
// layers: tokens [lo, hi), its live state slot, and the checkpoint to
// write after token ck (ckSlot 0: none).
type recRun struct {
	lo, hi int
	slot   int32
	ck     int
	ckSlot int32
}

// dnState is the gated delta nets' scratch, [n, …] per token.
type dnState struct {
	qkv   []float32 // [n, channels] the projection, then the convolution's output
	z     []float32 // [n, H_v·S]
	beta  []float32 // [n, H_v]
	alpha []float32 // [n, H_v]
	ba    []float32 // [n, 2·H_v] Qwen3-Next's fused projection
	ones  []float32 // [max(channels, H_v·S)] of 1: SiLU through kernels.SiLUMul
	out   []float32 // [n, H_v·S]
	conv  []float32 // [taps·channels] convRun's scratch
	task  dnTask
}

func (d *dnState) grow(n, threads int, c *model.Config) {
	ch, hv := DeltaNetChannels(c), c.SSM.DtRank
	d.conv = make([]float32, c.SSM.Conv*ch)
	d.qkv = make([]float32, n*ch)
	d.z = make([]float32, n*c.SSM.Inner)
	d.beta = make([]float32, n*hv)
	d.alpha = make([]float32, n*hv)
	d.ba = make([]float32, n*2*hv)
	d.ones = ones(max(ch, c.SSM.Inner))
	d.out = make([]float32, n*c.SSM.Inner)
}

// placeRecurrent lists the ubatch's sequence runs with their state slots,
// asking each sequence for a checkpoint at the last block boundary the run
// crosses.
func (r *Runner) placeRecurrent(b *model.Batch, lo, hi int) {
	s := &r.s
	s.rec = s.rec[:0]
	for i := lo; i < hi; {
		j := i + 1
		for j < hi && b.SeqOf(j) == b.SeqOf(i) {
			j++
		}
		sq := b.Seqs[b.SeqOf(i)]
		a, e := int(b.Pos[i]), int(b.Pos[j-1])
		run := recRun{lo: i - lo, hi: j - lo, slot: sq.StateSlot(), ck: -1}
		if at := (e + 1) / kvcache.BlockSize * kvcache.BlockSize; at > a {
			if cs := sq.Checkpoint(at); cs > 0 {
				run.ck, run.ckSlot = at-1-a+run.lo, cs
			}
		}
		s.rec = append(s.rec, run)
		i = j
	}
}

// DeltaNet computes layer li's gated delta net of the block input xb into
// proj, carrying each sequence's state in the cache (and writing the
// checkpoints placeRecurrent asked for).
func (s *Step) DeltaNet(li int, d *DeltaNet) {
	r, st := s.r, &s.r.s
	c, n, g := r.cfg, s.N, r.cfg.SSM
	ch, hv, sv := DeltaNetChannels(c), g.DtRank, g.Inner/g.DtRank
	dn := &st.dn
	xb := st.xb[:n*c.Dim]
	qkv, z, beta, alpha := dn.qkv[:n*ch], dn.z[:n*g.Inner], dn.beta[:n*hv], dn.alpha[:n*hv]
	s.mm(d.QKV, xb, n, qkv)
	s.mmNext(d.Gate, d.QKV, xb, n, z)
	if d.BA != nil { // per key head: its r value heads' betas, then their alphas
		ba, r := dn.ba[:n*2*hv], hv/g.Groups
		s.mmNext(d.BA, d.Gate, xb, n, ba)
		for t := range n {
			for h := range hv {
				kh, j := h/r, h%r
				beta[t*hv+h] = ba[t*2*hv+kh*2*r+j]
				alpha[t*hv+h] = ba[t*2*hv+kh*2*r+r+j]
			}
		}
	} else {
		s.mmNext(d.Beta, d.Gate, xb, n, beta)
		s.mmNext(d.Alpha, d.Beta, xb, n, alpha)
	}
	for _, run := range st.rec {
		convRun(s.kv, li, run, convSpec{w: d.Conv, taps: g.Conv, ch: ch, silu: dn.ones}, qkv, dn.conv)
	}
	// q and k L2-normalized per head (llama.cpp: rms_norm with eps/S,
	// scaled by 1/√S: x/√(Σx² + eps)).
	kd := g.Groups * g.State
	for t := range n {
		row := qkv[t*ch : t*ch+2*kd]
		for h := 0; h < 2*g.Groups; h++ {
			l2norm(row[h*g.State:(h+1)*g.State], c.Eps)
		}
	}
	for t := range n {
		for h := range hv {
			a := alpha[t*hv+h] + d.DtBias[h]
			alpha[t*hv+h] = softplus(a) * d.A[h]
			beta[t*hv+h] = sigmoid(beta[t*hv+h])
		}
	}
	dn.task = dnTask{pool: s.kv, layer: li, runs: st.rec, qkv: qkv, g: alpha, beta: beta, out: dn.out[:n*g.Inner],
		ch: ch, hk: g.Groups, hv: hv, sv: sv, stateOff: (g.Conv - 1) * ch, grouped: d.Grouped}
	r.pool.RunTask(len(st.rec)*hv, 1, &dn.task)
	// Gated RMS norm per value head, then the output projection.
	out := dn.out[:n*g.Inner]
	for t := range n {
		for h := range hv {
			o, zh := out[t*g.Inner+h*sv:t*g.Inner+(h+1)*sv], z[t*g.Inner+h*sv:t*g.Inner+(h+1)*sv]
			nn.RMSNorm(o, o, d.Norm, c.Eps)
			kernels.SiLUMul(zh, dn.ones[:sv]) // ggml_silu over each head's row
			for i := range o {
				o[i] *= zh[i]
			}
		}
	}
	s.mm(d.Out, out, n, st.proj[:n*c.Dim])
}

// convSpec is a causal depthwise convolution: per tap (the oldest input's
// first) its weights for every channel, an optional bias, and SiLU after
// it or not.
type convSpec struct {
	w        []float32 // [taps][ch] (convTable)
	bias     []float32 // [ch] (nil: none)
	taps, ch int
	silu     []float32 // [ch] of 1: SiLU after (nil: none), ggml_silu over each token's row
}

// convTable binds a convolution's weights, stored [ch][taps] (ggml's
// [taps, ch]: per channel its taps, the oldest input's first), as convRun
// reads them: tap-major, [taps][ch].
func convTable(b *model.Binder, name string, ch, taps int) []float32 {
	w := b.Table(name, ch, taps)
	if w == nil {
		return nil
	}
	t := make([]float32, len(w))
	for c := range ch {
		for i := range taps {
			t[i*ch+c] = w[c*taps+i]
		}
	}
	return t
}

// convRun runs the causal depthwise convolution (ggml_ssm_conv, then
// ggml_add of the bias and SiLU when the spec has them) over one
// sequence's tokens, in place in xs [n, ch]; the sequence's state keeps
// the last taps−1 inputs, as does the checkpoint. tmp holds (taps−1)·ch +
// ch values. ggml's `sumf += s·c` is compiled (GCC contracts it) into a
// fused multiply-add per tap, oldest first: so is each tap here — a
// separately rounded product moved llama.cpp's 8-bit activations past a
// rounding step within 20 tokens. With the weights tap-major, a tap is
// one kernels.FMAVec over the token's channels (each channel's sum is
// still fma(input, weight, sum), taps oldest first, from 0).
//
//	state [taps−1][ch], oldest first
func convRun(pool *kvcache.Pool, l int, run recRun, cs convSpec, xs, tmp []float32) {
	w, taps, ch := cs.w, cs.taps, cs.ch
	k := taps - 1
	hist := pool.StateOf(l, run.slot)[:k*ch]
	x := xs[run.lo*ch : run.hi*ch]
	m := run.hi - run.lo
	// row(τ): the ch inputs at run time τ, the history's for τ < 0.
	row := func(τ int) []float32 {
		if τ < 0 {
			return hist[(k+τ)*ch : (k+τ+1)*ch]
		}
		return x[τ*ch : (τ+1)*ch]
	}
	save := func(dst []float32, t int) { // the k inputs up to run time t
		for r := range k {
			copy(dst[r*ch:(r+1)*ch], row(t-k+1+r))
		}
	}
	if run.ckSlot > 0 {
		save(pool.StateOf(l, run.ckSlot)[:k*ch], run.ck-run.lo)
	}
	next, out := tmp[:k*ch], tmp[k*ch:k*ch+ch]
	save(next, m-1)
	// Outputs overwrite inputs that earlier outputs still read: from the
	// last token back.
	for t := m - 1; t >= 0; t-- {
		clear(out)
		for i := range taps {
			kernels.FMAVec(out, row(t-k+i), w[i*ch:(i+1)*ch])
		}
		if cs.bias != nil {
			kernels.AddTo(out, cs.bias[:ch])
		}
		if cs.silu != nil {
			kernels.SiLUMul(out, cs.silu[:ch])
		}
		copy(x[t*ch:(t+1)*ch], out)
	}
	copy(hist, next)
}

// dnTask runs the delta rule over (run, value head) pairs: each owns its
// head's state.
type dnTask struct {
	pool              *kvcache.Pool
	layer             int
	runs              []recRun
	qkv, g, beta, out []float32
	ch, hk, hv, sv    int
	stateOff          int
	grouped           bool // key head h/(hv/hk), else h mod hk
}

func (t *dnTask) Do(_, lo, hi int) {
	sv, ss := t.sv, t.sv*t.sv
	scale := 1 / float32(math.Sqrt(float64(sv)))
	kd := t.hk * sv
	for w := lo; w < hi; w++ {
		run, h := t.runs[w/t.hv], w%t.hv
		state := t.pool.StateOf(t.layer, run.slot)[t.stateOff+h*ss : t.stateOff+(h+1)*ss]
		kh := h % t.hk
		if t.grouped {
			kh = h / (t.hv / t.hk)
		}
		for tok := run.lo; tok < run.hi; tok++ {
			row := t.qkv[tok*t.ch:]
			q, k := row[kh*sv:(kh+1)*sv], row[kd+kh*sv:kd+(kh+1)*sv]
			v := row[2*kd+h*sv : 2*kd+(h+1)*sv]
			decay, b := libm.Expf(t.g[tok*t.hv+h]), t.beta[tok*t.hv+h]
			o := t.out[tok*t.hv*sv+h*sv : tok*t.hv*sv+(h+1)*sv]
			// ggml_gated_delta_net's vec_scale, vec_dot and vec_mad, in
			// their order (row by row: the rows are independent).
			kernels.GatedDeltaRule(state, q, k, v, o, decay, b, scale)
			if tok == run.ck {
				ck := t.pool.StateOf(t.layer, run.ckSlot)[t.stateOff+h*ss : t.stateOff+(h+1)*ss]
				copy(ck, state)
			}
		}
	}
}

// l2norm scales x to unit length as llama.cpp's build_gdn_l2_norm:
// rms_norm(x, eps/n)·(1/√n).
func l2norm(x []float32, eps float32) {
	n := float32(len(x))
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	sc := 1 / float32(math.Sqrt(float64(float32(sum/float64(len(x)))+eps/n)))
	inv := 1 / float32(math.Sqrt(float64(n)))
	for i := range x {
		x[i] = x[i] * sc * inv
	}
}

func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	return float32(math.Log(float64(1 + libm.Expf(x))))
}

func sigmoid(x float32) float32 { return 1 / (1 + libm.Expf(-x)) }

// ones is n values of 1 (SiLU as kernels.SiLUMul by 1: ggml_vec_silu_f32's
// values, its vectorized exp included).
func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}
