package decoder

import (
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
)

// ShortConv is a gated short convolution's weights: the recurrent layers
// of LFM2 (llama.cpp's build_shortconv_block). With L = shortconv.l_cache
// taps, a token's
//
//	B, C, X = in_proj·x                      three [dim] chunks, in that order
//	u       = B ⊙ X
//	y       = C ⊙ causal_conv(u)             per channel, its last L inputs u
//	out     = out_proj·y
//
// No activation anywhere: the state per sequence is the last L−1 inputs u.
type ShortConv struct {
	In   *kernels.Matrix // [3·dim, dim]: B, C, X
	Conv []float32       // [L][dim]: per tap, the oldest input's first, its weights (convTable)
	Out  *kernels.Matrix // [dim, dim]
}

// BindShortConv binds block p's short convolution.
func BindShortConv(b *model.Binder, c *model.Config, p string) *ShortConv {
	return &ShortConv{
		In:   b.Matrix(p+"shortconv.in_proj.weight", 3*c.Dim, c.Dim),
		Conv: convTable(b, p+"shortconv.conv.weight", c.Dim, c.SSM.Conv),
		Out:  b.Matrix(p+"shortconv.out_proj.weight", c.Dim, c.Dim),
	}
}

func (sc *ShortConv) matrices(ms []*kernels.Matrix) []*kernels.Matrix {
	if sc == nil {
		return ms
	}
	return appendSet(ms, sc.In, sc.Out)
}

// ShortConvStateElems is a short convolution's state per sequence: the
// last L−1 inputs of every channel, [L−1][dim].
func ShortConvStateElems(c *model.Config) int { return (c.SSM.Conv - 1) * c.Dim }

// scState is the short convolutions' scratch.
type scState struct {
	bcx  []float32 // [n, 3·dim] the input projection
	u    []float32 // [n, dim] B ⊙ X, then the convolution's output
	conv []float32 // [L·dim] convRun's scratch
}

func (st *scState) grow(n int, c *model.Config) {
	st.bcx = make([]float32, n*3*c.Dim)
	st.u = make([]float32, n*c.Dim)
	st.conv = make([]float32, c.SSM.Conv*c.Dim)
}

// ShortConv computes layer li's short convolution of the block input xb
// into proj, carrying each sequence's last inputs in the cache (and
// writing the checkpoints placeRecurrent asked for).
func (s *Step) ShortConv(li int, sc *ShortConv) {
	r, st := s.r, &s.r.s
	c, n, d := r.cfg, s.N, r.cfg.Dim
	bcx, u := st.sc.bcx[:n*3*d], st.sc.u[:n*d]
	s.mm(sc.In, st.xb[:n*d], n, bcx)
	for t := range n {
		row := bcx[t*3*d : (t+1)*3*d]
		b, x := row[:d], row[2*d:]
		ut := u[t*d : (t+1)*d]
		for i := range ut {
			ut[i] = b[i] * x[i]
		}
	}
	for _, run := range st.rec {
		convRun(s.kv, li, run, convSpec{w: sc.Conv, taps: c.SSM.Conv, ch: d}, u, st.sc.conv)
	}
	for t := range n {
		cg := bcx[t*3*d+d : t*3*d+2*d]
		ut := u[t*d : (t+1)*d]
		for i := range ut {
			ut[i] *= cg[i]
		}
	}
	s.mm(sc.Out, u, n, st.proj[:n*d])
}

// Mixer computes layer l's token mixer of the block input into proj:
// attention, or the recurrent layer the layer has in its place.
func (s *Step) Mixer(li int, l *Layer) {
	switch {
	case l.DeltaNet != nil:
		s.DeltaNet(li, l.DeltaNet)
	case l.ShortConv != nil:
		s.ShortConv(li, l.ShortConv)
	case l.Mamba != nil:
		s.Mamba2(li, l.Mamba)
	default:
		s.Attention(li, &l.Attn)
		return
	}
	if s.cut { // a recurrent layer wrote every token's output
		s.cutRows(true)
	}
}
