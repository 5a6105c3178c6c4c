package engine

import (
	"slices"

	"github.com/loom-inference/loom/internal/model"
)

// ModelInfo describes the loaded network: its hyperparameters and how its
// family builds a block. It is a copy: changing it changes nothing.
type ModelInfo struct {
	Arch                        string // GGUF architecture: llama, qwen2, qwen3, qwen3moe, phi3, gemma2, gemma3, gpt2, granite, smollm3
	Dim, HiddenDim, NLayers     int
	NHeads, NKVHeads, HeadDim   int
	NVocab, CtxLen              int // CtxLen: the context the model was trained for
	Eps                         float32
	RopeBase, RopeScale         float32
	RopeDims                    int
	RopeNeoX                    bool // rotate the two halves of a head (NeoX), not interleaved pairs
	QKVBias, QKNorm             bool // Qwen2's Q/K/V biases; Qwen3's per-head Q/K norms
	TiedOutput                  bool // the LM head is the embedding table
	LayerNorm, LearnedPos       bool // GPT-2: LayerNorm with bias, learned absolute positions
	FFN                         string
	EmbedScale, PostNorms       bool // Gemma 2: embeddings × √dim, norms after attention and FFN too
	QPreScale                   bool // queries scaled by 1/√headDim before the product
	AttnSoftcap, FinalSoftcap   float32
	SlidingWindow, SlidingEvery int
	SlidingLayers               []bool  // per layer, whether it slides (overrides SlidingEvery when set: Gemma 3)
	RopeBaseSWA                 float32 // the sliding layers' own unscaled RoPE base (Gemma 3; 0: none)
	NoRopeEvery                 int     // every NoRopeEvery-th layer has no RoPE (SmolLM3; 0: none)
	AttnScale                   float32 // attention scale (0: 1/√headDim)
	EmbedMul, ResidualMul       float32 // Granite: embeddings × EmbedMul, block outputs × ResidualMul (0: none)
	LogitDiv                    float32 // Granite: logits ÷ LogitDiv (0: none)
	HeadDimSWA, RopeDimsSWA     int     // Gemma 4: the sliding layers' head width and rotated dims (0: as the others)
	LayerKVHeads, LayerHidden   []int   // Gemma 4: per-layer KV heads and FFN widths (nil: uniform)
	KVShared                    int     // Gemma 4: the last KVShared layers read an earlier layer's cache
	PerLayerEmbd                int     // Gemma 4: per-layer input embedding width (0: none)
	VNorm, MoEDense             bool    // Gemma 4: values RMS-normed; a dense FFN beside the experts
	YarnExt, YarnAttnFactor     float32 // YaRN's extrapolation mix and magnitude scale (0: no YaRN)
	YarnOrigCtx                 int
	AttnTempScale               float32 // Mistral 3's attention temperature (0: none)
	AttnTempFloor               int
	ExpertTopKSoftmax           bool // gpt-oss: softmax over the chosen experts' logits only
	Sinks                       bool // gpt-oss: attention sink logits
	NExperts, NExpertsUsed      int  // mixture of experts (0: dense)
	ExpertHidden                int
	// Hybrid models: per layer, the float32 elements of its recurrent
	// state (0: an attention layer; nil: none), and the recurrent layers'
	// geometry (llama.cpp's ssm.* keys): a gated delta net has SSMGroups
	// key heads of SSMState, SSMDtRank value heads (SSMInner wide in all)
	// and a convolution of SSMConv taps.
	StateElems                                        []int
	SSMKind                                           string // the recurrent layers' kind: SSMDeltaNet, SSMShortConv or SSMMamba2 ("": none)
	SSMConv, SSMInner, SSMState, SSMGroups, SSMDtRank int
	AttnOutGate                                       bool // attention output gated per head (sigmoid of a second query)
}

// Kinds of recurrent layers (ModelInfo.SSMKind).
const (
	SSMDeltaNet  = "gated delta net"   // Qwen3.5, Qwen3-Next
	SSMShortConv = "short convolution" // LFM2
	SSMMamba2    = "Mamba-2"           // Granite 4.0-H
)

// Recurrent reports whether layer l carries a recurrent state instead of
// keys and values.
func (m ModelInfo) Recurrent(l int) bool { return m.StateElems != nil && m.StateElems[l] > 0 }

// FFN kinds of ModelInfo.FFN.
const (
	FFNSwiGLU = "swiglu" // down(silu(gate(x))·up(x))
	FFNGELU   = "gelu"   // down(gelu(up(x))), tanh form
	FFNGeGLU  = "geglu"  // down(gelu(gate(x))·up(x)), tanh form
)

var ffnNames = map[model.FFNKind]string{model.SwiGLU: FFNSwiGLU, model.GELU: FFNGELU, model.GeGLU: FFNGeGLU}

// Sliding reports whether layer l attends through the sliding window.
func (m ModelInfo) Sliding(l int) bool { return m.config().Sliding(l) }

// Rotary reports whether layer l rotates its queries and keys.
func (m ModelInfo) Rotary(l int) bool { return m.config().Rotary(l) }

// KVLayer is the layer whose cache layer l reads (itself but for Gemma 4's
// shared layers).
func (m ModelInfo) KVLayer(l int) int { return m.config().KVLayer(l) }

// HeadDimOf is layer l's head width.
func (m ModelInfo) HeadDimOf(l int) int { return m.config().HeadDimOf(l) }

// KVHeadsOf is layer l's number of KV heads.
func (m ModelInfo) KVHeadsOf(l int) int { return m.config().KVHeadsOf(l) }

// config is the part of the model's config these methods read.
func (m ModelInfo) config() *model.Config {
	return &model.Config{SlidingWindow: m.SlidingWindow, SlidingEvery: m.SlidingEvery, SlidingLayers: m.SlidingLayers,
		NoRopeEvery: m.NoRopeEvery, LearnedPos: m.LearnedPos, NLayers: m.NLayers, KVShared: m.KVShared,
		HeadDim: m.HeadDim, HeadDimSWA: m.HeadDimSWA, NKVHeads: m.NKVHeads, LayerKVHeads: m.LayerKVHeads}
}

// KVDim is the width of one position's key (and value) in one layer.
func (m ModelInfo) KVDim() int { return m.NKVHeads * m.HeadDim }

// Info describes the loaded model.
func (e *Engine) Info() ModelInfo { return infoOf(e.model.Config()) }

var ssmKinds = map[model.Mixer]string{model.DeltaNet: SSMDeltaNet, model.ShortConv: SSMShortConv, model.Mamba2: SSMMamba2}

func ssmKind(c *model.Config) string {
	if !c.Hybrid() {
		return ""
	}
	return ssmKinds[c.SSM.Kind]
}

func infoOf(c *model.Config) ModelInfo {
	return ModelInfo{
		Arch: c.Arch, Dim: c.Dim, HiddenDim: c.HiddenDim, NLayers: c.NLayers,
		NHeads: c.NHeads, NKVHeads: c.NKVHeads, HeadDim: c.HeadDim, NVocab: c.NVocab, CtxLen: c.CtxLen,
		Eps: c.Eps, RopeBase: c.RopeBase, RopeScale: c.RopeScale, RopeDims: c.RopeDims, RopeNeoX: c.RopeNeoX,
		QKVBias: c.QKVBias, QKNorm: c.QKNorm, TiedOutput: c.TiedOutput, LayerNorm: c.LayerNorm, LearnedPos: c.LearnedPos,
		FFN: ffnNames[c.FFN], EmbedScale: c.EmbedScale, PostNorms: c.PostNorms, QPreScale: c.QPreScale,
		AttnSoftcap: c.AttnSoftcap, FinalSoftcap: c.FinalSoftcap, SlidingWindow: c.SlidingWindow, SlidingEvery: c.SlidingEvery,
		NExperts: c.NExperts, NExpertsUsed: c.NExpertsUsed, ExpertHidden: c.ExpertHidden,
		SlidingLayers: append([]bool(nil), c.SlidingLayers...), RopeBaseSWA: c.RopeBaseSWA, NoRopeEvery: c.NoRopeEvery,
		AttnScale: c.AttnScale, EmbedMul: c.EmbedMul, ResidualMul: c.ResidualMul, LogitDiv: c.LogitDiv,
		HeadDimSWA: c.HeadDimSWA, RopeDimsSWA: c.RopeDimsSWA, LayerKVHeads: slices.Clone(c.LayerKVHeads), LayerHidden: slices.Clone(c.LayerHidden),
		KVShared: c.KVShared, PerLayerEmbd: c.PerLayerEmbd, VNorm: c.VNorm, MoEDense: c.MoEDense,
		YarnExt: c.Yarn.ExtFactor, YarnAttnFactor: c.Yarn.AttnFactor, YarnOrigCtx: c.Yarn.OrigCtx,
		AttnTempScale: c.AttnTempScale, AttnTempFloor: c.AttnTempFloor, ExpertTopKSoftmax: c.ExpertGating == model.TopKSoftmax,
		Sinks: c.Sinks, StateElems: slices.Clone(c.StateElems), SSMKind: ssmKind(c), SSMConv: c.SSM.Conv, SSMInner: c.SSM.Inner,
		SSMState: c.SSM.State, SSMGroups: c.SSM.Groups, SSMDtRank: c.SSM.DtRank, AttnOutGate: c.AttnOutGate,
	}
}

// Hooks observe the forward pass; nil fields cost nothing. Token indices
// are within the current ubatch (the whole batch unless it is longer than
// the model's ubatch size). The slices are only valid during the call.
type Hooks struct {
	// Embeddings receives the residual stream entering the first block,
	// x [n, dim] (token embeddings, plus learned positions for GPT-2,
	// scaled by √dim for Gemma).
	Embeddings func(x []float32)
	// Attention receives each layer's attention weights per (token, head),
	// w [pos+1] (the causal row). It is called from worker goroutines,
	// concurrently for distinct pairs.
	Attention func(layer, tok, head int, w []float32)
	// Residual receives the residual stream after each block, x [n, dim].
	Residual func(layer int, x []float32)
	// Experts receives a mixture-of-experts layer's routing: per token the
	// chosen experts best first, sel [n, k], and their weights w [n, k].
	Experts func(layer int, sel []int32, w []float32)
}

func (h *Hooks) internal() *model.Hooks {
	if h == nil {
		return nil
	}
	return &model.Hooks{Embeddings: h.Embeddings, Attention: h.Attention, Residual: h.Residual, Experts: h.Experts}
}
