package decoder

import (
	"math"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/nn"
)

// Gemma 4's per-layer input embeddings and the other steps its block adds
// to Gemma's: each token carries a small vector per layer (width E), made
// once from its own table row and a projection of the scaled embedding,
// that gates a residual branch at the end of each layer.

// PerLayer are the weights of the per-layer inputs.
type PerLayer struct {
	Tok  *kernels.Matrix // [nVocab, nLayers·E] rows read per token
	Proj *kernels.Matrix // [nLayers·E, dim]
	Norm []float32       // [E]
}

// LayerInput is one layer's per-layer branch.
type LayerInput struct {
	Gate *kernels.Matrix // [E, dim] inp_gate
	Proj *kernels.Matrix // [dim, E] proj
	Norm Norm            // post_norm
}

// PerLayerInputs computes every layer's input vector for the ubatch from
// the scaled embeddings in x (llama.cpp's project_per_layer_inputs):
// ple[t][l] = (norm(Proj·x[t] · 1/√dim)[l] + Tok[token][l] · √E) · 1/√2.
func (s *Step) PerLayerInputs(w *PerLayer) {
	r, st, c := s.r, &s.r.s, s.r.cfg
	e, nl, n := c.PerLayerEmbd, c.NLayers, s.N
	ple, tok := st.ple[:n*nl*e], st.pleTok[:n*nl*e]
	st.ws.MatMul(r.pool, w.Proj, st.x[:n*c.Dim], n, ple)
	inv := 1 / float32(math.Sqrt(float64(c.Dim)))
	for i := range ple {
		ple[i] *= inv
	}
	nn.RMSNorm(ple, ple, w.Norm, c.Eps) // each E-wide chunk
	se := float32(math.Sqrt(float64(e)))
	half := 1 / float32(math.Sqrt(2))
	for t, id := range s.Tokens {
		row := tok[t*nl*e : (t+1)*nl*e]
		w.Tok.Row(row, int(id))
		for i, v := range row {
			row[i] = float32(v * se)
		}
	}
	for i := range ple {
		ple[i] = float32(ple[i]+tok[i]) * half
	}
}

// LayerInputBranch adds layer li's per-layer branch to the residual
// stream: x += norm(Proj·(gelu(Gate·x) ⊙ ple[li])).
func (s *Step) LayerInputBranch(li int, w *LayerInput) {
	r, st, c := s.r, &s.r.s, s.r.cfg
	e, nl, n, d := c.PerLayerEmbd, c.NLayers, s.N, c.Dim
	g := st.pleGate[:n*e]
	st.ws.MatMul(r.pool, w.Gate, st.x[:n*d], n, g)
	st.ffnTask = nn.FFNTask{Up: g, Hidden: e, Kind: actGELU}
	r.pool.RunTask(n, 1, &st.ffnTask)
	for t := range n {
		in := st.ple[t*nl*e+li*e : t*nl*e+(li+1)*e]
		gt := g[t*e : (t+1)*e]
		for i := range gt {
			gt[i] *= in[i]
		}
	}
	y := st.proj[:n*d]
	st.ws.MatMul(r.pool, w.Proj, g, n, y)
	s.norm(y, y, &w.Norm)
	nn.Add(st.x[:n*d], y)
}

// ScaleStream multiplies the residual stream by f (Gemma 4's
// layer_output_scale).
func (s *Step) ScaleStream(f float32) {
	x := s.r.s.x[:s.N*s.r.cfg.Dim]
	for i := range x {
		x[i] *= f
	}
}

// SaveOutput keeps a block's output aside (Gemma 4's dense FFN, while the
// experts of the same layer write theirs).
func (s *Step) SaveOutput() {
	d := s.N * s.r.cfg.Dim
	copy(s.r.s.aux[:d], s.r.s.proj[:d])
}

// AddSaved adds the output kept by SaveOutput to the block's output:
// proj = saved + proj.
func (s *Step) AddSaved() {
	d := s.N * s.r.cfg.Dim
	nn.Add(s.r.s.proj[:d], s.r.s.aux[:d])
}
