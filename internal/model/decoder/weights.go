package decoder

import (
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/model"
)

// The layer types a family binds its weights into. Names follow the GGUF
// tensor names; a family's binder says which of them it has.

// Norm is a normalization's weights: RMSNorm, or LayerNorm with a bias.
type Norm struct {
	W     []float32 // [dim] scale
	B     []float32 // [dim] bias (LayerNorm)
	Layer bool      // LayerNorm (mean and variance) rather than RMSNorm
}

// RMSNorm binds name as an RMSNorm's scale.
func RMSNorm(b *model.Binder, name string, dim int) Norm {
	return Norm{W: b.Vector(name, dim)}
}

// LayerNorm binds p+"weight" and p+"bias" as a LayerNorm's.
func LayerNorm(b *model.Binder, p string, dim int) Norm {
	return Norm{W: b.Vector(p+"weight", dim), B: b.Vector(p+"bias", dim), Layer: true}
}

// Attn is an attention block's weights.
type Attn struct {
	Q, K, V *kernels.Matrix // [nHeads·headDim, dim], [kvDim, dim] ×2; nil when fused
	QKV     *kernels.Matrix // [qDim+2·kvDim, dim] fused Q, K, V (Phi-3, GPT-2)
	QKVBias []float32       // [qDim+2·kvDim] (GPT-2)

	QBias, KBias, VBias []float32 // [qDim], [kvDim] ×2 (Qwen2)
	QNorm, KNorm        []float32 // [headDim] per-head RMSNorm before RoPE (Qwen3)
	Sinks               []float32 // [nHeads] attention sink logits (gpt-oss)
	// Gated: Q's rows hold, per head, its query and then a gate of the
	// head's output, which is multiplied by sigmoid(gate) before the
	// output projection (Qwen3.5, Qwen3-Next); Q is [2·qDim, dim].
	Gated bool

	Out     *kernels.Matrix // [dim, qDim]
	OutBias []float32       // [dim] (GPT-2)
}

// SplitQKV binds attn_q, attn_k, attn_v and attn_output (with its bias,
// if present) of block p.
func SplitQKV(b *model.Binder, c *model.Config, p string) Attn {
	qDim, kvDim := c.NHeads*c.HeadDim, c.KVDim()
	return Attn{
		Q:   b.Matrix(p+"attn_q.weight", qDim, c.Dim),
		K:   b.Matrix(p+"attn_k.weight", kvDim, c.Dim),
		V:   b.Matrix(p+"attn_v.weight", kvDim, c.Dim),
		Out: b.Matrix(p+"attn_output.weight", c.Dim, qDim),
		// llama.cpp binds an output bias wherever a file has one.
		OutBias: b.OptVector(p+"attn_output.bias", c.Dim),
	}
}

// FusedQKV binds attn_qkv and attn_output, with their biases if present.
func FusedQKV(b *model.Binder, c *model.Config, p string) Attn {
	qDim, kvDim := c.NHeads*c.HeadDim, c.KVDim()
	return Attn{
		QKV:     b.Matrix(p+"attn_qkv.weight", qDim+2*kvDim, c.Dim),
		QKVBias: b.OptVector(p+"attn_qkv.bias", qDim+2*kvDim),
		Out:     b.Matrix(p+"attn_output.weight", c.Dim, qDim),
		OutBias: b.OptVector(p+"attn_output.bias", c.Dim),
	}
}

// BindQKVBias binds the biases of split Q, K and V projections.
func (a *Attn) BindQKVBias(b *model.Binder, c *model.Config, p string) {
	qDim, kvDim := c.NHeads*c.HeadDim, c.KVDim()
	a.QBias = b.Vector(p+"attn_q.bias", qDim)
	a.KBias = b.Vector(p+"attn_k.bias", kvDim)
	a.VBias = b.Vector(p+"attn_v.bias", kvDim)
}

// BindQKNorm binds the per-head Q and K norms.
func (a *Attn) BindQKNorm(b *model.Binder, c *model.Config, p string) {
	a.QNorm = b.Vector(p+"attn_q_norm.weight", c.HeadDim)
	a.KNorm = b.Vector(p+"attn_k_norm.weight", c.HeadDim)
}

func (a *Attn) matrices(ms []*kernels.Matrix) []*kernels.Matrix {
	return appendSet(ms, a.Q, a.K, a.V, a.QKV, a.Out)
}

// FFN is a dense feed-forward block's weights.
type FFN struct {
	Gate     *kernels.Matrix // [hidden, dim] (nil: no gate, or fused into Up)
	Up       *kernels.Matrix // [hidden, dim]; [2·hidden, dim] gate then up when Fused
	Down     *kernels.Matrix // [dim, hidden]
	UpBias   []float32       // [hidden] (GPT-2)
	DownBias []float32       // [dim]
	Fused    bool            // Up's rows are the gate's, then up's (Phi-3)
}

// GatedFFN binds ffn_gate, ffn_up and ffn_down.
func GatedFFN(b *model.Binder, c *model.Config, p string) FFN {
	return FFN{
		Gate: b.Matrix(p+"ffn_gate.weight", c.HiddenDim, c.Dim),
		Up:   b.Matrix(p+"ffn_up.weight", c.HiddenDim, c.Dim),
		Down: b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim),
	}
}

// FusedGatedFFN binds ffn_up holding the gate's rows then up's, and
// ffn_down (Phi-3).
func FusedGatedFFN(b *model.Binder, c *model.Config, p string) FFN {
	return FFN{
		Up:    b.Matrix(p+"ffn_up.weight", 2*c.HiddenDim, c.Dim),
		Down:  b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim),
		Fused: true,
	}
}

// MLP binds ffn_up and ffn_down with their biases, if present (GPT-2).
func MLP(b *model.Binder, c *model.Config, p string) FFN {
	return FFN{
		Up:       b.Matrix(p+"ffn_up.weight", c.HiddenDim, c.Dim),
		UpBias:   b.OptVector(p+"ffn_up.bias", c.HiddenDim),
		Down:     b.Matrix(p+"ffn_down.weight", c.Dim, c.HiddenDim),
		DownBias: b.OptVector(p+"ffn_down.bias", c.Dim),
	}
}

func (f *FFN) matrices(ms []*kernels.Matrix) []*kernels.Matrix {
	return appendSet(ms, f.Gate, f.Up, f.Down)
}

// Experts is a mixture-of-experts layer's weights (see moe.go).
type Experts struct {
	Router         *kernels.Matrix   // [nExperts, dim]
	Gate, Up, Down []*kernels.Matrix // per expert: [expertHidden, dim] ×2, [dim, expertHidden]

	// Gemma 4: the gate and up rows of each expert fused ([2·expertHidden,
	// dim], gate first) in place of Gate and Up; a per-expert scale of the
	// output; the router reading rms_norm(x)/√dim ⊙ RouterScale of the
	// residual stream rather than the block input.
	GateUp      []*kernels.Matrix
	DownScale   []float32 // [nExperts]
	RouterScale []float32 // [dim]

	// A shared expert every token runs beside its routed ones (Qwen3.5
	// MoE, Qwen3-Next, Granite 4.0-H): a SwiGLU FFN of
	// Config.SharedHidden, its output multiplied by sigmoid(SharedGate·x)
	// when SharedGate is set ([1, dim]), then added to the experts' sum.
	Shared     *FFN
	SharedGate *kernels.Matrix

	// Biases (gpt-oss), nil when the file has none.
	RouterBias       []float32   // [nExperts]
	GateBias, UpBias [][]float32 // per expert: [expertHidden]
	DownBias         [][]float32 // per expert: [dim]
}

// BindExpertBiases binds the router's and the experts' biases
// (ffn_gate_inp.bias [nExperts], ffn_{gate,up}_exps.bias [expertHidden,
// nExperts], ffn_down_exps.bias [dim, nExperts]).
func (x *Experts) BindExpertBiases(b *model.Binder, c *model.Config, p string) {
	e, h := c.NExperts, c.ExpertHidden
	x.RouterBias = b.Vector(p+"ffn_gate_inp.bias", e)
	x.GateBias = b.Rows(p+"ffn_gate_exps.bias", e, h)
	x.UpBias = b.Rows(p+"ffn_up_exps.bias", e, h)
	x.DownBias = b.Rows(p+"ffn_down_exps.bias", e, c.Dim)
}

// BindExperts binds ffn_gate_inp and the 3-D ffn_{gate,up,down}_exps.
func BindExperts(b *model.Binder, c *model.Config, p string) Experts {
	e, h := c.NExperts, c.ExpertHidden
	return Experts{
		Router: b.Matrix(p+"ffn_gate_inp.weight", e, c.Dim),
		Gate:   b.Experts(p+"ffn_gate_exps.weight", e, h, c.Dim),
		Up:     b.Experts(p+"ffn_up_exps.weight", e, h, c.Dim),
		Down:   b.Experts(p+"ffn_down_exps.weight", e, c.Dim, h),
	}
}

// BindMoE binds block p's experts (with the shared expert, gated or not,
// when c has one) if c has experts, else a dense SwiGLU FFN: Layer.Experts
// or Layer.FFN.
func BindMoE(l *Layer, b *model.Binder, c *model.Config, p string, gatedShared bool) {
	if c.NExperts == 0 {
		l.FFN = GatedFFN(b, c, p)
		return
	}
	x := BindExperts(b, c, p)
	if c.SharedHidden > 0 {
		x.BindSharedExpert(b, c, p, gatedShared)
	}
	l.Experts = &x
}

// BindSharedExpert binds ffn_{gate,up,down}_shexp, and with gated the
// shared expert's gate ffn_gate_inp_shexp ([dim]: one logit per token).
func (x *Experts) BindSharedExpert(b *model.Binder, c *model.Config, p string, gated bool) {
	h := c.SharedHidden
	x.Shared = &FFN{
		Gate: b.Matrix(p+"ffn_gate_shexp.weight", h, c.Dim),
		Up:   b.Matrix(p+"ffn_up_shexp.weight", h, c.Dim),
		Down: b.Matrix(p+"ffn_down_shexp.weight", c.Dim, h),
	}
	if gated {
		x.SharedGate = b.RowMatrix(p+"ffn_gate_inp_shexp.weight", c.Dim)
	}
}

func (x *Experts) matrices(ms []*kernels.Matrix) []*kernels.Matrix {
	ms = appendSet(ms, x.Router, x.SharedGate)
	if x.Shared != nil {
		ms = x.Shared.matrices(ms)
	}
	ms = append(ms, x.GateUp...)
	ms = append(ms, x.Gate...)
	ms = append(ms, x.Up...)
	return append(ms, x.Down...)
}

// Head is the embedding table, the final norm and the LM head.
type Head struct {
	Embd   *kernels.Matrix // [nVocab, dim]
	Norm   Norm
	Output *kernels.Matrix // [nVocab, dim]; Embd when tied
}

// BindHead binds token_embd, output_norm (RMSNorm, or LayerNorm when
// layerNorm) and output, tied to the embeddings when the file has no
// output.weight (recorded in c.TiedOutput).
func BindHead(b *model.Binder, c *model.Config, layerNorm bool) Head {
	h := Head{Embd: b.Matrix("token_embd.weight", c.NVocab, c.Dim)}
	if h.Embd != nil {
		h.Embd.Embedding = true
	}
	switch {
	case c.Embedding() && !b.Has("output_norm.weight"): // an encoder ends with its last layer's norm (BERT)
	case layerNorm:
		h.Norm = LayerNorm(b, "output_norm.", c.Dim)
	case c.OutputNorm != "":
		h.Norm = RMSNorm(b, c.OutputNorm, c.Dim)
	default:
		h.Norm = RMSNorm(b, "output_norm.weight", c.Dim)
	}
	h.Output = b.OptMatrix("output.weight", c.NVocab, c.Dim)
	if h.Output == nil && !c.Embedding() { // an embedding model needs no LM head
		h.Output = h.Embd
		c.TiedOutput = true
	}
	return h
}

// Matrices starts a Net's list of multiplied weights with the LM head's;
// the embedding table is only read row by row unless it doubles as the head.
func (h *Head) Matrices() []*kernels.Matrix { return appendSet(nil, h.Output) }

// Layer is the block every family here is made of: attention, then a dense
// FFN or experts, with the norms before (and, for Gemma 2, after) each.
type Layer struct {
	AttnNorm, PostAttn Norm // PostAttn: Gemma 2's norm of the attention output
	Attn               Attn
	FFNNorm, PostFFN   Norm
	FFN                FFN
	Experts            *Experts   // mixture of experts in place of FFN
	DeltaNet           *DeltaNet  // a gated delta net in place of attention (Qwen3.5's recurrent layers)
	ShortConv          *ShortConv // a gated short convolution in place of attention (LFM2's)
	Mamba              *Mamba2    // a Mamba-2 layer in place of attention (Granite 4.0-H's)
}

// Matrices lists the multiplied weights of layers after ms.
func Matrices(ms []*kernels.Matrix, layers []Layer) []*kernels.Matrix {
	for i := range layers {
		l := &layers[i]
		ms = l.Attn.matrices(ms)
		ms = l.DeltaNet.matrices(ms)
		ms = l.ShortConv.matrices(ms)
		ms = l.Mamba.matrices(ms)
		ms = l.FFN.matrices(ms)
		if l.Experts != nil {
			ms = l.Experts.matrices(ms)
		}
	}
	return ms
}

func appendSet(ms []*kernels.Matrix, xs ...*kernels.Matrix) []*kernels.Matrix {
	for _, x := range xs {
		if x != nil {
			ms = append(ms, x)
		}
	}
	return ms
}
