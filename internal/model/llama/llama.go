// Package llama is the pre-norm decoder block and its variants: norm →
// attention → residual → norm → FFN → residual. The Llama block (RMSNorm,
// GQA with RoPE, SwiGLU) with a few flags covers Llama 2/3, Mistral,
// SmolLM, TinyLlama, Qwen2 (Q/K/V biases, NeoX RoPE), Qwen3 (per-head
// RMSNorm on Q and K), Phi-3 (fused QKV and gate+up projections), mixtures
// of experts (Mixtral, Qwen3-MoE: see moe.go), GPT-2 (LayerNorm with bias,
// learned positions, fused QKV with bias, GELU MLP) and Gemma 2 (√d
// embedding scale, norms after attention and FFN too, GeGLU, soft-capped
// attention and output logits, sliding-window attention on alternate
// layers). Reference: llama.cpp's llm_build_llama, _qwen2, _qwen3,
// _qwen3moe, _phi3, _gpt2 and _gemma2.
package llama

import (
	"fmt"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/nn"
	"github.com/loom-inference/loom/internal/parallel"
)

func init() {
	model.Register(model.Arch{Name: "llama", Tweak: func(c *model.Config) { c.SlidingWindow = 0 }, Build: New})
	model.Register(model.Arch{Name: "phi3", Tweak: func(c *model.Config) { c.RopeNeoX, c.QPreScale = true, true }, Build: New})
	model.Register(model.Arch{Name: "qwen3moe", Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKNorm, c.SlidingWindow = true, true, 0
	}, Build: New})
	model.Register(model.Arch{Name: "gpt2", Tweak: func(c *model.Config) {
		c.LayerNorm, c.LearnedPos, c.FFN, c.RopeDims, c.SlidingWindow = true, true, model.GELU, 0, 0
	}, Build: New})
	model.Register(model.Arch{Name: "gemma2", Softcaps: true, Tweak: func(c *model.Config) {
		c.RopeNeoX, c.EmbedScale, c.PostNorms, c.FFN, c.SlidingEvery, c.QPreScale = true, true, true, model.GeGLU, 2, true
	}, Build: New})
	model.Register(model.Arch{Name: "qwen2", Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKVBias, c.SlidingWindow = true, true, 0
	}, Build: New})
	model.Register(model.Arch{Name: "qwen3", Tweak: func(c *model.Config) {
		c.RopeNeoX, c.QKNorm, c.SlidingWindow = true, true, 0
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
	FFNGate   *kernels.Matrix // [hiddenDim, dim] (nil: no gate, or fused into FFNUp)
	FFNUp     *kernels.Matrix // [hiddenDim, dim]; [2·hiddenDim, dim] gate then up when FusedGateUp
	FFNDown   *kernels.Matrix // [dim, hiddenDim]

	AttnNormB   []float32       // [dim] LayerNorm bias (GPT-2)
	AttnQKV     *kernels.Matrix // [qDim+2·kvDim, dim] fused Q, K, V (Phi-3, GPT-2); AttnQ/K/V nil
	AttnQKVBias []float32       // [qDim+2·kvDim] (GPT-2)
	AttnOutBias []float32       // [dim] (GPT-2)
	PostAttn    []float32       // [dim] norm of the attention output (Gemma 2)
	FFNNormB    []float32       // [dim] LayerNorm bias
	FFNUpBias   []float32       // [hiddenDim] (GPT-2)
	FFNDownBias []float32       // [dim]
	PostFFN     []float32       // [dim] norm of the FFN output (Gemma 2)
	FusedGateUp bool            // Phi-3: FFNUp's rows are the gate's, then up's

	Router                  *kernels.Matrix   // [nExperts, dim] (mixture of experts)
	ExpGate, ExpUp, ExpDown []*kernels.Matrix // per expert: [expertHidden, dim] ×2, [dim, expertHidden]
}

// Model is a Llama-family network's weights: immutable once built, shared
// by every runner and sequence.
type Model struct {
	cfg        model.Config
	TokEmbd    *kernels.Matrix // [nVocab, dim]
	OutputNorm []float32       // [dim]
	OutputNB   []float32       // [dim] final LayerNorm bias (GPT-2)
	PosEmbd    *kernels.Matrix // [ctx, dim] learned positions (GPT-2)
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

	ffnTask nn.FFNTask // reused pool job
	qkv     []float32  // [n, qDim+2·kvDim] fused QKV, or [n, 2·hiddenDim] fused gate+up
	moe     moeState
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
	if c.LayerNorm {
		m.OutputNB = b.Vector("output_norm.bias", c.Dim)
	}
	if c.LearnedPos {
		m.PosEmbd = b.Matrix("position_embd.weight", c.CtxLen, c.Dim)
		if m.PosEmbd != nil {
			m.PosEmbd.Embedding = true
		}
	} else {
		m.rope = nn.RoPE{Dims: c.RopeDims, Base: c.RopeBase, FreqScale: 1 / c.RopeScale, NeoX: c.RopeNeoX}
		m.rope.Factors = b.OptVector("rope_freqs.weight", c.RopeDims/2)
	}
	for i := range c.NLayers {
		m.Layers = append(m.Layers, bindLayer(b, &c, fmt.Sprintf("blk.%d.", i)))
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
	r.attn.SoftCap = c.AttnSoftcap
	if c.QPreScale {
		r.attn.Scale = 1
	}
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
	hidden := max(c.HiddenDim, c.ExpertHidden)
	s.gate = make([]float32, n*hidden)
	s.up = make([]float32, n*hidden)
	s.qkv = make([]float32, n*max(qDim+2*kvDim, 2*c.HiddenDim))
	if c.NExperts > 0 {
		s.moe.grow(n, c)
	}
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

// bindLayer binds block p's weights, the variant given by c and by which
// tensors the file has (fused or split projections, biases, experts).
func bindLayer(b *model.Binder, c *model.Config, p string) Layer {
	qDim, kvDim := c.NHeads*c.HeadDim, c.NKVHeads*c.HeadDim
	l := Layer{
		AttnNorm: b.Vector(p+"attn_norm.weight", c.Dim),
		AttnOut:  b.Matrix(p+"attn_output.weight", c.Dim, qDim),
		FFNNorm:  b.Vector(p+"ffn_norm.weight", c.Dim),
	}
	if b.Has(p + "attn_qkv.weight") {
		l.AttnQKV = b.Matrix(p+"attn_qkv.weight", qDim+2*kvDim, c.Dim)
		l.AttnQKVBias = b.OptVector(p+"attn_qkv.bias", qDim+2*kvDim)
	} else {
		l.AttnQ = b.Matrix(p+"attn_q.weight", qDim, c.Dim)
		l.AttnK = b.Matrix(p+"attn_k.weight", kvDim, c.Dim)
		l.AttnV = b.Matrix(p+"attn_v.weight", kvDim, c.Dim)
	}
	l.AttnOutBias = b.OptVector(p+"attn_output.bias", c.Dim)
	if c.QKVBias {
		l.AttnQBias = b.Vector(p+"attn_q.bias", qDim)
		l.AttnKBias = b.Vector(p+"attn_k.bias", kvDim)
		l.AttnVBias = b.Vector(p+"attn_v.bias", kvDim)
	}
	if c.QKNorm {
		l.AttnQNorm = b.Vector(p+"attn_q_norm.weight", c.HeadDim)
		l.AttnKNorm = b.Vector(p+"attn_k_norm.weight", c.HeadDim)
	}
	if c.LayerNorm {
		l.AttnNormB = b.Vector(p+"attn_norm.bias", c.Dim)
		l.FFNNormB = b.Vector(p+"ffn_norm.bias", c.Dim)
	}
	if c.PostNorms {
		l.PostAttn = b.Vector(p+"post_attention_norm.weight", c.Dim)
		l.PostFFN = b.Vector(p+"post_ffw_norm.weight", c.Dim)
	}
	switch {
	case c.NExperts > 0:
		e, h := c.NExperts, c.ExpertHidden
		l.Router = b.Matrix(p+"ffn_gate_inp.weight", e, c.Dim)
		l.ExpGate = b.Experts(p+"ffn_gate_exps.weight", e, h, c.Dim)
		l.ExpUp = b.Experts(p+"ffn_up_exps.weight", e, h, c.Dim)
		l.ExpDown = b.Experts(p+"ffn_down_exps.weight", e, c.Dim, h)
	case c.FFN == model.GELU:
		l.FFNUp = b.Matrix(p+"ffn_up.weight", c.HiddenDim, c.Dim)
		l.FFNUpBias = b.OptVector(p+"ffn_up.bias", c.HiddenDim)
		l.FFNDown = b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim)
		l.FFNDownBias = b.OptVector(p+"ffn_down.bias", c.Dim)
	case !b.Has(p + "ffn_gate.weight"): // Phi-3: gate and up in one tensor
		l.FusedGateUp = true
		l.FFNUp = b.Matrix(p+"ffn_up.weight", 2*c.HiddenDim, c.Dim)
		l.FFNDown = b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim)
	default:
		l.FFNGate = b.Matrix(p+"ffn_gate.weight", c.HiddenDim, c.Dim)
		l.FFNUp = b.Matrix(p+"ffn_up.weight", c.HiddenDim, c.Dim)
		l.FFNDown = b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim)
	}
	return l
}

// Matrices lists every weight that is multiplied, for tools that report
// which kernel runs what (loom bench).
func (m *Model) Matrices() []*kernels.Matrix { return m.matrices() }

// matrices lists every weight that is multiplied (for packing and scratch).
func (m *Model) matrices() []*kernels.Matrix {
	ms := []*kernels.Matrix{m.Output}
	for _, l := range m.Layers {
		for _, x := range []*kernels.Matrix{l.AttnQ, l.AttnK, l.AttnV, l.AttnQKV, l.AttnOut, l.FFNGate, l.FFNUp, l.FFNDown, l.Router} {
			if x != nil {
				ms = append(ms, x)
			}
		}
		ms = append(ms, l.ExpGate...)
		ms = append(ms, l.ExpUp...)
		ms = append(ms, l.ExpDown...)
	}
	return ms
}
