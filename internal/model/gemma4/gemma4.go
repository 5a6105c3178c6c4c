// Package gemma4 is llama.cpp's llama_model_gemma4 (text): Gemma's
// post-norm block (decoder.PostNorm's steps) with per-layer geometry —
// sliding-window layers with their own head width, RoPE base and rotated
// dims, global layers with proportional RoPE (rope_freqs) and their own
// head width and KV heads — Q and K RMS-normed with weights and V without
// one, attention scale 1, the last attention.shared_kv_layers layers reading
// the cache of the last earlier layer of their kind, per-layer FFN widths,
// per-layer input embeddings (E2B/E4B), a per-layer output scale, and in
// mixture-of-experts layers (26B-A4B) experts beside the dense FFN; the
// final logits soft-capped (30 unless the file says).
package gemma4

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/model/decoder"
)

func init() {
	model.Register(model.Arch{Name: "gemma4", Meta: meta, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.EmbedScale, c.PostNorms, c.FFN, c.QKNorm, c.VNorm = true, true, true, model.GeGLU, true, true
		c.AttnScale, c.QPreScale, c.MoEDense = 1, false, c.NExperts > 0
	}, Build: New, Experts: true})
}

// meta reads what llama.cpp's gemma4 loader adds: the sliding pattern
// (required, an array), the local layers' head width, rotated dims and
// RoPE base, KV sharing, the per-layer input width and the final soft-cap
// (30 when absent).
func meta(f *gguf.File, c *model.Config) error {
	key := func(k string) string { return c.Arch + "." + k }
	if v, ok := f.Get(key("attention.sliding_window_pattern")); !ok || v.Type != gguf.ArrayT {
		return fmt.Errorf("model: %s must be a per-layer array", key("attention.sliding_window_pattern"))
	}
	if err := model.SlidingPattern(f, c, 0); err != nil {
		return err
	}
	u := func(k string, def int) (int, error) {
		v, err := f.UintOr(key(k), uint64(def))
		if err == nil && v > model.MaxWidth {
			err = fmt.Errorf("model: %s = %d is out of range", key(k), v)
		}
		return int(v), err
	}
	var err error
	if c.HeadDimSWA, err = u("attention.key_length_swa", c.HeadDim); err != nil {
		return err
	}
	if vl, err := u("attention.value_length_swa", c.HeadDimSWA); err != nil || vl != c.HeadDimSWA {
		return fmt.Errorf("model: %s = %d differs from %s = %d (unsupported) %v", key("attention.value_length_swa"), vl, key("attention.key_length_swa"), c.HeadDimSWA, err)
	}
	if c.RopeDimsSWA, err = u("rope.dimension_count_swa", c.RopeDims); err != nil {
		return err
	}
	if c.KVShared, err = u("attention.shared_kv_layers", 0); err != nil {
		return err
	}
	if c.PerLayerEmbd, err = u("embedding_length_per_layer_input", 0); err != nil {
		return err
	}
	base, err := f.FloatOr(key("rope.freq_base_swa"), 10000)
	if err != nil {
		return err
	}
	c.RopeBaseSWA = float32(base)
	capv, err := f.FloatOr(key("final_logit_softcapping"), 30)
	if err != nil {
		return err
	}
	c.FinalSoftcap = float32(capv)
	return nil
}

// Model is a Gemma 4 network's weights.
type Model struct {
	decoder.Weights
	PerLayer *decoder.PerLayer    // nil without per-layer inputs
	Inputs   []decoder.LayerInput // per layer, with PerLayer
	Scale    []float32            // per layer output scale (0: none)
	MoE      []moeNorms           // per layer, for mixture-of-experts layers
}

// moeNorms are a mixture-of-experts layer's extra norms: of the dense
// FFN's output, of the experts' input and of their output.
type moeNorms struct{ Post1, Pre2, Post2 decoder.Norm }

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	m := &Model{}
	w, err := decoder.Bind(cfg, src, func(b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
		return layer(m, b, c, p, i)
	}, func(b *model.Binder, c *model.Config) {
		if e := c.PerLayerEmbd; e > 0 {
			m.PerLayer = &decoder.PerLayer{
				Tok:  b.Matrix("per_layer_token_embd.weight", c.NVocab, c.NLayers*e),
				Proj: b.Matrix("per_layer_model_proj.weight", c.NLayers*e, c.Dim),
				Norm: b.Vector("per_layer_proj_norm.weight", e),
			}
			if m.PerLayer.Tok != nil {
				m.PerLayer.Tok.Embedding = true
			}
		}
	})
	if err != nil {
		return nil, err
	}
	m.Weights = w
	if m.PerLayer != nil { // Bind packed the block's weights; these too
		ms := []*kernels.Matrix{m.PerLayer.Proj}
		for i := range m.Inputs {
			ms = append(ms, m.Inputs[i].Gate, m.Inputs[i].Proj)
		}
		kernels.PackAll(ms)
	}
	return m, nil
}

// layer binds layer i of a Gemma 4 network with its own geometry.
func layer(m *Model, b *model.Binder, c *model.Config, p string, i int) decoder.Layer {
	hd, kvd := c.HeadDimOf(i), c.KVDimOf(i)
	qDim := c.NHeads * hd
	l := decoder.Layer{
		AttnNorm: decoder.RMSNorm(b, p+"attn_norm.weight", c.Dim),
		Attn: decoder.Attn{
			Q:     b.Matrix(p+"attn_q.weight", qDim, c.Dim),
			Out:   b.Matrix(p+"attn_output.weight", c.Dim, qDim),
			QNorm: b.Vector(p+"attn_q_norm.weight", hd),
		},
		PostAttn: decoder.RMSNorm(b, p+"post_attention_norm.weight", c.Dim),
		FFNNorm:  decoder.RMSNorm(b, p+"ffn_norm.weight", c.Dim),
		FFN: decoder.FFN{
			Gate: b.Matrix(p+"ffn_gate.weight", c.HiddenOf(i), c.Dim),
			Up:   b.Matrix(p+"ffn_up.weight", c.HiddenOf(i), c.Dim),
			Down: b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenOf(i)),
		},
		PostFFN: decoder.RMSNorm(b, p+"post_ffw_norm.weight", c.Dim),
	}
	if c.KVLayer(i) == i { // shared layers' K and V tensors, if any, are unused
		l.Attn.K = b.Matrix(p+"attn_k.weight", kvd, c.Dim)
		l.Attn.V = b.OptMatrix(p+"attn_v.weight", kvd, c.Dim) // absent: V = K
		l.Attn.KNorm = b.Vector(p+"attn_k_norm.weight", hd)
	}
	var scale float32
	if v := b.OptVector(p+"layer_output_scale.weight", 1); v != nil {
		scale = v[0]
	}
	m.Scale = append(m.Scale, scale)
	var mn moeNorms
	if b.Has(p + "ffn_gate_inp.weight") {
		e, h := c.NExperts, c.ExpertHidden
		x := decoder.Experts{Router: b.Matrix(p+"ffn_gate_inp.weight", e, c.Dim), RouterScale: b.Vector(p+"ffn_gate_inp.scale", c.Dim)}
		if b.Has(p + "ffn_gate_up_exps.weight") {
			x.GateUp = b.Experts(p+"ffn_gate_up_exps.weight", e, 2*h, c.Dim)
		} else {
			x.Gate = b.Experts(p+"ffn_gate_exps.weight", e, h, c.Dim)
			x.Up = b.Experts(p+"ffn_up_exps.weight", e, h, c.Dim)
		}
		x.Down = b.Experts(p+"ffn_down_exps.weight", e, c.Dim, h)
		x.DownScale = b.OptVector(p+"ffn_down_exps.scale", e)
		l.Experts = &x
		mn = moeNorms{
			Post1: decoder.RMSNorm(b, p+"post_ffw_norm_1.weight", c.Dim),
			Pre2:  decoder.RMSNorm(b, p+"pre_ffw_norm_2.weight", c.Dim),
			Post2: decoder.RMSNorm(b, p+"post_ffw_norm_2.weight", c.Dim),
		}
	}
	m.MoE = append(m.MoE, mn)
	if e := c.PerLayerEmbd; e > 0 {
		m.Inputs = append(m.Inputs, decoder.LayerInput{
			Gate: b.Matrix(p+"inp_gate.weight", e, c.Dim),
			Proj: b.Matrix(p+"proj.weight", c.Dim, e),
			Norm: decoder.RMSNorm(b, p+"post_norm.weight", c.Dim),
		})
	}
	return l
}

// NewRunner implements model.Model.
func (m *Model) NewRunner(opts model.RunnerOptions) model.Runner { return decoder.NewRunner(m, opts) }

// Matrices implements decoder.Net: the shared layers' and the per-layer
// inputs' too.
func (m *Model) Matrices() []*kernels.Matrix {
	ms := m.Weights.Matrices()
	if m.PerLayer != nil {
		ms = append(ms, m.PerLayer.Proj)
		for i := range m.Inputs {
			ms = append(ms, m.Inputs[i].Gate, m.Inputs[i].Proj)
		}
	}
	return ms
}

// Forward implements decoder.Net.
func (m *Model) Forward(s *decoder.Step) {
	s.Embed(m.Head.Embd)
	s.ScaleEmbeddings()
	if m.PerLayer != nil {
		s.PerLayerInputs(m.PerLayer)
	}
	s.Angles(&m.Rope)           // global layers: proportional (rope_freqs)
	s.SlidingAngles(&m.RopeSWA) // local layers: their own base and dims
	s.Embedded()
	for li := range m.Layers {
		l := &m.Layers[li]
		s.Norm(&l.AttnNorm)
		if li == len(m.Layers)-1 {
			s.KeepWanted() // queries, output and FFN for the wanted tokens only
		}
		s.Attention(li, &l.Attn) // Q/K norms, V norm, scale 1; shared layers read another's cache
		s.NormOutput(&l.PostAttn)
		s.Residual()
		s.Norm(&l.FFNNorm)
		s.GeGLU(&l.FFN)
		if l.Experts != nil { // the experts beside the dense FFN
			mn := &m.MoE[li]
			s.NormOutput(&mn.Post1)
			s.SaveOutput()
			s.Norm(&mn.Pre2)
			s.MoE(li, l.Experts)
			s.NormOutput(&mn.Post2)
			s.AddSaved()
		}
		s.NormOutput(&l.PostFFN)
		s.Residual()
		if m.PerLayer != nil {
			s.LayerInputBranch(li, &m.Inputs[li])
		}
		if m.Scale[li] != 0 {
			s.ScaleStream(m.Scale[li])
		}
		s.LayerDone(li)
	}
	s.Logits(&m.Head, m.Cfg.FinalSoftcap)
}
