// Package llama is the Llama block structure: RMSNorm → GQA attention with
// RoPE → residual → RMSNorm → SwiGLU FFN → residual. A few flags cover
// Llama 2/3, Mistral, SmolLM, TinyLlama, Qwen2 (Q/K/V biases, NeoX RoPE) and
// Qwen3 (per-head RMSNorm on Q and K). Reference: llama.cpp's llm_build_llama
// and llm_build_qwen2/qwen3.
package llama

import (
	"fmt"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
	"github.com/loom-inference/loom/internal/parallel"
)

func init() {
	model.Register(model.Arch{Name: "llama", Tweak: func(*model.Config) {}, Build: New})
	model.Register(model.Arch{Name: "qwen2", Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKVBias = true, true
	}, Build: New})
	model.Register(model.Arch{Name: "qwen3", Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKNorm = true, true
	}, Build: New})
}

// Layer holds one block's weights; names follow the GGUF tensor names.
type Layer struct {
	AttnNorm  []float32       // [dim]
	AttnQ     *kernels.Matrix // [nHeads·headDim rows, dim]
	AttnK     *kernels.Matrix // [nKVHeads·headDim, dim]
	AttnV     *kernels.Matrix // [nKVHeads·headDim, dim]
	AttnQBias []float32       // [nHeads·headDim] (Qwen2)
	AttnKBias []float32       // [nKVHeads·headDim]
	AttnVBias []float32       // [nKVHeads·headDim]
	AttnQNorm []float32       // [headDim] (Qwen3)
	AttnKNorm []float32       // [headDim]
	AttnOut   *kernels.Matrix // [dim, nHeads·headDim]
	FFNNorm   []float32       // [dim]
	FFNGate   *kernels.Matrix // [hiddenDim, dim]
	FFNUp     *kernels.Matrix // [hiddenDim, dim]
	FFNDown   *kernels.Matrix // [dim, hiddenDim]
}

// Model is a Llama-family network's weights: immutable once built, shared
// by every runner and sequence.
type Model struct {
	cfg        model.Config
	TokEmbd    *kernels.Matrix // [nVocab, dim]
	OutputNorm []float32       // [dim]
	Output     *kernels.Matrix // [nVocab, dim]; TokEmbd when tied
	Layers     []Layer
	rope       nn.RoPE
}

// Runner is the mutable side of evaluation: buffers, attention scratch and
// the thread pool. KV state lives in the batch's sequences.
type Runner struct {
	m     *Model
	attn  *nn.Attention
	pool  *parallel.Pool
	owned bool // pool created here
	hooks *model.Hooks
	s     state
}

// state holds the activation buffers, batch-major, sized for cap tokens.
type state struct {
	cap   int
	x     []float32 // [n, dim] residual stream
	xb    []float32 // [n, dim] normed input
	q     []float32 // [n, nHeads·headDim]
	k, v  []float32 // [n, kvDim]
	att   []float32 // [n, nHeads·headDim] attention output
	proj  []float32 // [n, dim]
	gate  []float32 // [n, hiddenDim]
	up    []float32 // [n, hiddenDim]
	act   []byte    // quantized activations for MatMul
	rows  []int     // indices of tokens that want logits
	cs    []float32 // [n, ropeDims] cos/sin per token
	outIn []float32 // [nWanted, dim] final-normed rows for the LM head

	// Where the ubatch's tokens live in the cache.
	seq    []int32  // [n] token → index into aseq
	kslot  []int    // [n] K element 0 of the token's slot (block·B·kvDim + slot)
	vrow   []int    // [n] start of the token's V row
	aseq   []nn.Seq // the ubatch's sequences, as attention sees them
	vrows  []int32  // backing store of aseq[i].VRows
	vstart []int    // aseq[i].VRows = vrows[vstart[i]:vstart[i+1]]

	swiglu nn.SwiGLUTask // reused pool job
}

// maxUbatch bounds the tokens evaluated at once; longer batches are split
// (llama.cpp's n_ubatch plays the same role).
const maxUbatch = 512

// New binds the weights of cfg from src.
func New(cfg *model.Config, src model.Source) (model.Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := *cfg
	b := &model.Binder{Src: src}
	m := &Model{cfg: c}
	qDim, kvDim := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	m.TokEmbd = b.Matrix("token_embd.weight", c.NVocab, c.Dim)
	if m.TokEmbd != nil {
		m.TokEmbd.Embedding = true
	}
	m.OutputNorm = b.Vector("output_norm.weight", c.Dim)
	m.Output = b.OptMatrix("output.weight", c.NVocab, c.Dim)
	if m.Output == nil {
		m.Output = m.TokEmbd
		m.cfg.TiedOutput = true
	}
	m.rope = nn.RoPE{Dims: c.RopeDims, Base: c.RopeBase, FreqScale: 1 / c.RopeScale, NeoX: c.RopeNeoX}
	m.rope.Factors = b.OptVector("rope_freqs.weight", c.RopeDims/2)
	for i := range c.NLayers {
		p := fmt.Sprintf("blk.%d.", i)
		l := Layer{
			AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
			AttnQ:    b.Matrix(p+"attn_q.weight", qDim, c.Dim),
			AttnK:    b.Matrix(p+"attn_k.weight", kvDim, c.Dim),
			AttnV:    b.Matrix(p+"attn_v.weight", kvDim, c.Dim),
			AttnOut:  b.Matrix(p+"attn_output.weight", c.Dim, qDim),
			FFNNorm:  b.Vector(p+"ffn_norm.weight", c.Dim),
			FFNGate:  b.Matrix(p+"ffn_gate.weight", c.HiddenDim, c.Dim),
			FFNUp:    b.Matrix(p+"ffn_up.weight", c.HiddenDim, c.Dim),
			FFNDown:  b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim),
		}
		if c.QKVBias {
			l.AttnQBias = b.Vector(p+"attn_q.bias", qDim)
			l.AttnKBias = b.Vector(p+"attn_k.bias", kvDim)
			l.AttnVBias = b.Vector(p+"attn_v.bias", kvDim)
		}
		if c.QKNorm {
			l.AttnQNorm = b.Vector(p+"attn_q_norm.weight", c.HeadDim)
			l.AttnKNorm = b.Vector(p+"attn_k_norm.weight", c.HeadDim)
		}
		m.Layers = append(m.Layers, l)
	}
	if b.Err != nil {
		return nil, b.Err
	}
	// Repack what is multiplied into the SIMD-friendly layout (a no-op for
	// types or CPUs without packed kernels), once per model; the embedding
	// table is only read row by row unless it doubles as the LM head.
	for _, mat := range m.matrices() {
		mat.Pack()
	}
	return m, nil
}

// Config implements model.Model.
func (m *Model) Config() *model.Config { return &m.cfg }

// NewRunner implements model.Model.
func (m *Model) NewRunner(opts model.RunnerOptions) model.Runner {
	ctx := opts.MaxCtx
	if ctx <= 0 {
		ctx = m.cfg.DefaultCtx()
	}
	r := &Runner{m: m, pool: opts.Pool}
	if r.pool == nil {
		r.pool, r.owned = parallel.New(opts.Threads), true
	}
	c := &m.cfg
	r.attn = nn.NewAttention(c.NHeads, c.NKVHeads, c.HeadDim, ctx, r.pool.Threads())
	return r
}

// MaxCtx implements model.Runner.
func (r *Runner) MaxCtx() int { return r.attn.MaxCtx() }

// SetHooks implements model.Runner.
func (r *Runner) SetHooks(h *model.Hooks) { r.hooks = h }

// Close implements model.Runner.
func (r *Runner) Close() {
	if r.owned {
		r.pool.Close()
	}
}

func (r *Runner) grow(n int) {
	if n <= r.s.cap {
		return
	}
	c := &r.m.cfg
	qDim, kvDim := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	s := &r.s
	s.cap = n
	s.x = make([]float32, n*c.Dim)
	s.xb = make([]float32, n*c.Dim)
	s.q = make([]float32, n*qDim)
	s.k = make([]float32, n*kvDim)
	s.v = make([]float32, n*kvDim)
	s.att = make([]float32, n*qDim)
	s.proj = make([]float32, n*c.Dim)
	s.gate = make([]float32, n*c.HiddenDim)
	s.up = make([]float32, n*c.HiddenDim)
	s.outIn = make([]float32, n*c.Dim)
	s.cs = make([]float32, n*c.RopeDims)
	s.rows = make([]int, 0, n)
	s.seq = make([]int32, n)
	s.kslot = make([]int, n)
	s.vrow = make([]int, n)
	actBytes := 0
	for _, mat := range r.m.matrices() {
		actBytes = max(actBytes, mat.ActBytes(n))
	}
	s.act = make([]byte, actBytes)
}

func (m *Model) matrices() []*kernels.Matrix {
	ms := []*kernels.Matrix{m.Output}
	for _, l := range m.Layers {
		ms = append(ms, l.AttnQ, l.AttnK, l.AttnV, l.AttnOut, l.FFNGate, l.FFNUp, l.FFNDown)
	}
	return ms
}
