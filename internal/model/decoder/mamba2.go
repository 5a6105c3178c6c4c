package decoder

import (
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/libm"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
)

// Mamba2 is a Mamba-2 layer's weights: the recurrent layers of Granite
// 4.0-H (llama.cpp's build_mamba2_layer). With H = ssm.time_step_rank
// heads of P = ssm.inner_size/H channels and G = ssm.group_count groups of
// B and C of N = ssm.state_size, a token's
//
//	z, xBC, dt = ssm_in·x                       [inner], [inner + 2·G·N], [H]
//	x, B, C    = silu(causal_conv(xBC) + bias)   per channel
//	Δ_h        = softplus(dt_h + dt_bias_h);  a_h = exp(Δ_h·A_h)
//
// update each head h's state S [P][N] with its group g = h/(H/G):
//
//	S[i][n] = S[i][n]·a_h + B_g[n]·(x_h[i]·Δ_h);  y_h[i] = Σ_n S[i][n]·C_g[n]
//
// and the layer's output is ssm_out · grouped_rms_norm((y + x⊙D) ⊙ silu(z))
// (each of G groups of inner/G channels normed alone, times its weights).
type Mamba2 struct {
	In       *kernels.Matrix // [2·inner + 2·G·N + H, dim]: z, xBC, dt
	Conv     []float32       // [taps][inner + 2·G·N] (convTable)
	ConvBias []float32       // [inner + 2·G·N] (nil: none)
	DtBias   []float32       // [H]
	A        []float32       // [H] (−exp(A_log))
	D        []float32       // [H]
	Norm     []float32       // [inner]: group g's weights at [g·inner/G, (g+1)·inner/G)
	Out      *kernels.Matrix // [dim, inner]
}

// Mamba2Channels is the number of channels the convolution runs over: x,
// B and C.
func Mamba2Channels(c *model.Config) int { return c.SSM.Inner + 2*c.SSM.Groups*c.SSM.State }

// Mamba2StateElems is a Mamba-2 layer's state per sequence: the last
// taps−1 inputs of every channel, then each head's P×N matrix.
//
//	[taps−1][channels] then [H][P][N]
func Mamba2StateElems(c *model.Config) int {
	return (c.SSM.Conv-1)*Mamba2Channels(c) + c.SSM.Inner*c.SSM.State
}

// BindMamba2 binds block p's Mamba-2 layer.
func BindMamba2(b *model.Binder, c *model.Config, p string) *Mamba2 {
	g := c.SSM
	ch := Mamba2Channels(c)
	return &Mamba2{
		In:       b.Matrix(p+"ssm_in.weight", 2*g.Inner+2*g.Groups*g.State+g.DtRank, c.Dim),
		Conv:     convTable(b, p+"ssm_conv1d.weight", ch, g.Conv),
		ConvBias: b.OptVector(p+"ssm_conv1d.bias", ch),
		DtBias:   b.Vector(p+"ssm_dt.bias", g.DtRank),
		A:        b.Table(p+"ssm_a", g.DtRank, 1), // [1, H]
		D:        b.Table(p+"ssm_d", g.DtRank, 1),
		Norm:     b.Table(p+"ssm_norm.weight", g.Groups, g.Inner/g.Groups), // [inner/G, G]
		Out:      b.Matrix(p+"ssm_out.weight", c.Dim, g.Inner),
	}
}

func (m *Mamba2) matrices(ms []*kernels.Matrix) []*kernels.Matrix {
	if m == nil {
		return ms
	}
	return appendSet(ms, m.In, m.Out)
}

// mbState is the Mamba-2 layers' scratch, [n, …] per token.
type mbState struct {
	proj []float32 // [n, 2·inner + 2·G·N + H] the input projection
	xbc  []float32 // [n, channels] the convolution's input, then its output
	y    []float32 // [n, inner]
	conv []float32 // [taps·channels] convRun's scratch
	ones []float32 // [channels] of 1
	task mbTask
}

func (st *mbState) grow(n, threads int, c *model.Config) {
	g, ch := c.SSM, Mamba2Channels(c)
	st.proj = make([]float32, n*(2*g.Inner+2*g.Groups*g.State+g.DtRank))
	st.xbc = make([]float32, n*ch)
	st.y = make([]float32, n*g.Inner)
	st.conv = make([]float32, g.Conv*ch)
	st.ones = ones(ch)
}

// Mamba2 computes layer li's Mamba-2 layer of the block input xb into
// proj, carrying each sequence's state in the cache (and writing the
// checkpoints placeRecurrent asked for).
func (s *Step) Mamba2(li int, m *Mamba2) {
	r, st := s.r, &s.r.s
	c, n, g := r.cfg, s.N, r.cfg.SSM
	ch, width := Mamba2Channels(c), 2*g.Inner+2*g.Groups*g.State+g.DtRank
	mb := &st.mb
	proj, xbc := mb.proj[:n*width], mb.xbc[:n*ch]
	s.mm(m.In, st.xb[:n*c.Dim], n, proj)
	for t := range n {
		copy(xbc[t*ch:(t+1)*ch], proj[t*width+g.Inner:t*width+g.Inner+ch])
	}
	for _, run := range st.rec {
		convRun(s.kv, li, run, convSpec{w: m.Conv, bias: m.ConvBias, taps: g.Conv, ch: ch, silu: mb.ones}, xbc, mb.conv)
	}
	mb.task = mbTask{pool: s.kv, layer: li, runs: st.rec, m: m, proj: proj, xbc: xbc, y: mb.y[:n*g.Inner],
		width: width, ch: ch, heads: g.DtRank, p: g.Inner / g.DtRank, groups: g.Groups, nst: g.State,
		stateOff: (g.Conv - 1) * ch}
	r.pool.RunTask(len(st.rec)*g.DtRank, 1, &mb.task)
	// Gate with silu(z) (ggml_swiglu_split over each head's row), then
	// the grouped RMS norm.
	y, gw, hp := mb.y[:n*g.Inner], g.Inner/g.Groups, g.Inner/g.DtRank
	for t := range n {
		yt, z := y[t*g.Inner:(t+1)*g.Inner], proj[t*width:t*width+g.Inner]
		for h := 0; h < g.Inner; h += hp {
			kernels.SiLUMul(z[h:h+hp], yt[h:h+hp])
		}
		copy(yt, z)
		for gi := range g.Groups {
			seg := yt[gi*gw : (gi+1)*gw]
			nn.RMSNorm(seg, seg, m.Norm[gi*gw:(gi+1)*gw], c.Eps)
		}
	}
	s.mm(m.Out, y, n, st.proj[:n*c.Dim])
}

// mbTask runs the selective scan over (run, head) pairs: each owns its
// head's state.
type mbTask struct {
	pool                  *kvcache.Pool
	layer                 int
	runs                  []recRun
	m                     *Mamba2
	proj, xbc, y          []float32
	width, ch             int
	heads, p, groups, nst int
	stateOff              int
}

func (t *mbTask) Do(_, lo, hi int) {
	p, nst, ss := t.p, t.nst, t.p*t.nst
	inner := t.heads * p
	for w := lo; w < hi; w++ {
		run, h := t.runs[w/t.heads], w%t.heads
		state := t.pool.StateOf(t.layer, run.slot)[t.stateOff+h*ss : t.stateOff+(h+1)*ss]
		g := h / (t.heads / t.groups)
		a, d := t.m.A[h], t.m.D[h]
		for tok := run.lo; tok < run.hi; tok++ {
			row := t.xbc[tok*t.ch:]
			x := row[h*p : (h+1)*p]
			b := row[inner+g*nst : inner+(g+1)*nst]
			cg := row[inner+t.groups*nst+g*nst : inner+t.groups*nst+(g+1)*nst]
			dt := softplus(t.proj[tok*t.width+2*inner+2*t.groups*nst+h] + t.m.DtBias[h])
			dA := libm.Expf(dt * a)
			y := t.y[tok*inner+h*p : tok*inner+(h+1)*p]
			// ggml_ssm_scan_f32 in its order, then ggml_add(y, ggml_mul(x, D)).
			kernels.SSMScan(state, x, b, cg, y, dA, dt)
			for i := range p {
				y[i] += float32(x[i] * d)
			}
			if tok == run.ck {
				ck := t.pool.StateOf(t.layer, run.ckSlot)[t.stateOff+h*ss : t.stateOff+(h+1)*ss]
				copy(ck, state)
			}
		}
	}
}
