package model

import (
	"fmt"
	"math"
	"slices"
)

// Config holds the hyperparameters of a decoder-only transformer.
type Config struct {
	Arch       string
	Dim        int // embedding_length
	HiddenDim  int // feed_forward_length
	NLayers    int
	NHeads     int
	NKVHeads   int
	HeadDim    int
	NVocab     int
	CtxLen     int // training context (context_length)
	Eps        float32
	RopeBase   float32
	RopeDims   int
	RopeScale  float32 // scaling factor: positions ÷ RopeScale (1 = none); linear, or YaRN's interpolation
	Yarn       YaRN    // YaRN's extrapolation mix and magnitude scale (ExtFactor 0: none)
	RopeNeoX   bool
	QKVBias    bool // Qwen2
	QKNorm     bool // Qwen3
	TiedOutput bool // set by the builder when output.weight is absent

	// RopeScaling is the scaling llama.cpp's context applies: none,
	// linear (also when rope.scaling.type is absent, llama.cpp's default),
	// yarn or longrope (scaled as linear; its factors are tensors); ""
	// for a config not read from a file (then Yarn.ExtFactor says yarn).
	RopeScaling string
	// RopeFreqScale is llama.cpp's rope_freq_scale, the angles' scale
	// (0: 1/RopeScale): --rope-freq-scale's value is kept as given, since
	// the inverse of its inverse may not round back to it.
	RopeFreqScale float32
	// LongRoPE (Phi-3 128k, llama.cpp's get_rope_factors): the angles are
	// divided by rope_factors_long.weight when the per-sequence context
	// RopeCtx, rounded up to 256 as llama.cpp pads n_ctx, exceeds
	// RopeOrigCtx, by rope_factors_short.weight otherwise (rope_freqs.weight
	// wins over both).
	RopeOrigCtx int    // rope.scaling.original_context_length as the file gives it (default context_length): hparams.n_ctx_orig_yarn, which --yarn-orig-ctx does not change
	RopeCtx     int    // the per-sequence context the engine runs with (llama.cpp's n_ctx_seq; 0: DefaultCtx())
	LongRope    string // set by the builder: "long" or "short", the factors it bound ("": none)
	// ropeTrainFactor is the file's rope.scaling.factor whatever its type
	// (llama.cpp's 1/rope_freq_scale_train, kept for --rope-scaling; 0:
	// RopeScale).
	ropeTrainFactor float32

	// Families beyond Llama's block, read from metadata (by Arch.Meta where
	// only the family has the keys) or set by Tweak.
	LayerNorm     bool    // LayerNorm with bias instead of RMSNorm (GPT-2)
	LearnedPos    bool    // position_embd added to the embeddings, no RoPE (GPT-2)
	FFN           FFNKind // the feed-forward block's activation
	EmbedScale    bool    // embeddings scaled by √dim (Gemma)
	PostNorms     bool    // RMSNorm after attention and after the FFN too (Gemma 2)
	QPreScale     bool    // queries scaled by 1/√headDim after RoPE, scores unscaled (Phi-3, Gemma 2)
	AttnSoftcap   float32 // attention logits → cap·tanh(x/cap) (0: none)
	FinalSoftcap  float32 // output logits likewise
	SlidingWindow int     // positions a sliding-window layer sees (0: none)
	SlidingEvery  int     // layer i slides when i%SlidingEvery == 0 (1: every layer)
	SlidingLayers []bool  // per layer, whether it slides; overrides SlidingEvery when set (Gemma 3's 5 local : 1 global)
	RopeBaseSWA   float32 // sliding layers' own unscaled rope base (Gemma 3's rope.freq_base_swa; 0: the global RoPE)
	NoRopeEvery   int     // layer i has no RoPE when (i+1)%NoRopeEvery == 0 (SmolLM3's NoPE layers; 0: none)
	AttnScale     float32 // the scores' (or, with QPreScale, the queries') scale (0: 1/√headDim)
	EmbedMul      float32 // embeddings multiplied by it (Granite's embedding_scale; 0: none)
	ResidualMul   float32 // block outputs multiplied by it before each residual add (Granite's residual_scale; 0: none)
	LogitDiv      float32 // logits divided by it (Granite's logit_scale; 0: none)
	// Per-layer geometry (Gemma 4); zero values mean the model-wide field.
	HeadDimSWA   int   // sliding layers' head width (attention.key_length_swa; 0: HeadDim)
	RopeDimsSWA  int   // sliding layers' rotated dims (rope.dimension_count_swa; 0: RopeDims)
	LayerKVHeads []int // per layer KV heads (an attention.head_count_kv array; nil: NKVHeads for all)
	LayerHidden  []int // per layer FFN width (a feed_forward_length array; nil: HiddenDim for all)
	KVShared     int   // the last KVShared layers compute no K/V: they read KVLayer's (attention.shared_kv_layers)
	PerLayerEmbd int   // per-layer input embedding width (embedding_length_per_layer_input; 0: none)
	VNorm        bool  // values RMS-normalized without a weight before the cache (Gemma 4)
	// Llama 4-style attention temperature (Mistral 3): queries after RoPE
	// multiplied by 1 + AttnTempScale·ln(⌊pos/AttnTempFloor⌋ + 1) (0: none).
	AttnTempScale float32
	AttnTempFloor int
	Sinks         bool   // a learned sink logit per head joins each softmax (gpt-oss: attn_sinks.weight)
	NExperts      int    // mixture of experts: experts per layer (0: dense FFN)
	NExpertsUsed  int    // experts chosen per token
	ExpertHidden  int    // an expert's FFN width (0: dense)
	ExpertGating  Gating // how the chosen experts are weighed
	MoEDense      bool   // mixture-of-experts layers run a dense FFN beside the experts (Gemma 4)
	OutputNorm    string // the final norm's tensor ("": output_norm.weight; LFM2's is token_embd_norm.weight)
	SharedHidden  int    // a shared expert's FFN width beside the routed ones (expert_shared_feed_forward_length; 0: none)

	// Hybrid models: layers that carry a recurrent state of fixed size per
	// sequence instead of keys and values (Qwen3.5's gated delta nets).
	StateElems  []int // per layer: float32 elements of its state (0: an attention layer; nil: none)
	SSM         SSM   // the recurrent layers' sizes (ssm.*)
	AttnOutGate bool  // attention's Q projection holds, per head, the query then a sigmoid gate of its output (Qwen3.5)
	// RopeStill marks the rotary pairs [RopeDims/2] that do not rotate for
	// text: Qwen3.5's interleaved multi-section RoPE gives each pair a
	// position component by its section, and a text token's fourth
	// component is 0 (nil: every pair rotates).
	RopeStill []bool

	// Embedding and reranking models.
	NonCausal    bool    // attention.causal = false: every token sees the whole sequence (BERT), which is evaluated in one ubatch
	SymmetricSWA bool    // a sliding layer's token sees the positions within ±window/2 of its own (EmbeddingGemma)
	Pooling      Pooling // pooling_type: how an embedding model pools its tokens' outputs
	PoolingSet   bool    // Pooling came from the file or the caller (not the default)
	EmbedOnly    bool    // an embedding or reranking model (pooling_type set and not none, or an encoder family): no text generation
	NClsOut      int     // the rank head's outputs (classifier.output_labels; 1 without)
	TokenTypes   int     // tokenizer.ggml.token_type_count (BERT's sentence A/B table rows)
}

// SSM is a hybrid model's recurrent layers' geometry, llama.cpp's ssm.*
// keys. For a gated delta net (Qwen3.5): Groups key heads of State
// dimensions, DtRank value heads of Inner/DtRank dimensions, a causal
// convolution of Conv taps over the Q, K and V channels. For Mamba-2
// (Granite 4.0-H): DtRank heads of Inner/DtRank channels, Groups groups of
// B and C of State each. For LFM2's short convolutions only Conv is set
// (shortconv.l_cache).
type SSM struct {
	Kind   Mixer // what the recurrent layers compute
	Conv   int   // ssm.conv_kernel: convolution taps
	Inner  int   // ssm.inner_size: value width
	State  int   // ssm.state_size: a key head's width
	Groups int   // ssm.group_count: key heads
	DtRank int   // ssm.time_step_rank: value heads
}

// Mixer is the kind of a hybrid model's recurrent layers.
type Mixer uint8

// Recurrent mixers.
const (
	DeltaNet  Mixer = iota // gated delta net (Qwen3.5, Qwen3-Next)
	ShortConv              // gated short convolution (LFM2)
	Mamba2                 // Mamba-2 selective state space (Granite 4.0-H)
)

// Recurrent reports whether layer l carries a recurrent state (no KV).
func (c *Config) Recurrent(l int) bool { return c.StateElems != nil && c.StateElems[l] > 0 }

// Hybrid reports whether some layer is recurrent.
func (c *Config) Hybrid() bool {
	for l := range c.StateElems {
		if c.StateElems[l] > 0 {
			return true
		}
	}
	return false
}

// Pooling is how an embedding model turns its tokens' outputs into one
// vector; the values are llama.cpp's (pooling_type).
type Pooling uint8

const (
	PoolNone Pooling = iota // every token's vector
	PoolMean                // their mean
	PoolCLS                 // the first token's
	PoolLast                // the last token's
	PoolRank                // a classification head over the first token's (the last one's for Qwen3): a reranker
)

// PoolingNames are the pooling kinds by llama.cpp's --pooling names.
var PoolingNames = map[string]Pooling{"none": PoolNone, "mean": PoolMean, "cls": PoolCLS, "last": PoolLast, "rank": PoolRank}

// SetPooling makes the model an embedding model that pools as name says
// (llama.cpp's --pooling none|mean|cls|last|rank): a text-generation model
// then embeds with it (no LM head is bound), an embedding model pools
// otherwise than its file says.
func (c *Config) SetPooling(name string) error {
	p, ok := PoolingNames[name]
	if !ok {
		return fmt.Errorf("model: pooling %q (want none, mean, cls, last or rank)", name)
	}
	c.Pooling, c.PoolingSet, c.EmbedOnly = p, true, true
	return nil
}

// Embedding reports whether the model embeds (or ranks) rather than
// generates.
func (c *Config) Embedding() bool { return c.EmbedOnly }

// PoolLastToken reports whether pooling takes the last token's output
// (last pooling, and Qwen3's rankers as llama.cpp picks their row).
func (c *Config) PoolLastToken() bool {
	return c.Pooling == PoolLast || c.Pooling == PoolRank && c.Arch == "qwen3"
}

// PooledDim is the width of a pooled output: the rank head's outputs for
// a reranker, the embedding width otherwise.
func (c *Config) PooledDim() int {
	if c.Pooling == PoolRank {
		return c.NClsOut
	}
	return c.Dim
}

// YaRN is llama.cpp's YaRN RoPE scaling as its context computes it
// (llama_context's cparams.yarn_*): each rotated pair's angle mixes the
// interpolated (÷ RopeScale) and the original angle by a ramp over the
// pairs between the correction dimensions that BetaFast and BetaSlow give
// for OrigCtx, and cos/sin are multiplied by AttnFactor·(1 + 0.1·ln
// RopeScale).
type YaRN struct {
	ExtFactor          float32 // ramp weight (1 with YaRN scaling, 0: plain scaling)
	AttnFactor         float32 // llama.cpp's yarn_attn_factor, derived from the rest (1: none)
	BetaFast, BetaSlow float32 // 32 and 1 (llama.cpp's), or the file's where the family reads rope.scaling.yarn_beta_fast/slow
	OrigCtx            int     // rope.scaling.original_context_length (the training context by default)
	LogMul             float32 // rope.scaling.yarn_log_mul where the family reads it (0: none)
	RopeAttnFactor     float32 // rope.scaling.attn_factor (1 by default)
}

// RopeParams are the RoPE parameters llama.cpp's context takes over the
// file's (llama_context_params: rope_scaling_type, rope_freq_base,
// rope_freq_scale, yarn_orig_ctx); zero values keep the file's.
type RopeParams struct {
	Scaling     string  // none, linear or yarn ("": the file's)
	FreqBase    float32 // rope_freq_base
	FreqScale   float32 // rope_freq_scale: 1/the context scaling factor
	YarnOrigCtx int     // YaRN's original context (n_ctx_orig_yarn)
}

// FFNKind is a feed-forward block's shape.
type FFNKind uint8

const (
	SwiGLU    FFNKind = iota // down(silu(gate(x))·up(x))
	GELU                     // down(gelu(up(x))), tanh form (GPT-2)
	GeGLU                    // down(gelu(gate(x))·up(x)), tanh form (Gemma)
	SwiGLUOAI                // gpt-oss's clamped SwiGLU: down(x·σ(1.702x)·(y+1)), x = min(gate, 7), y = clamp(up, ±7)
)

// Gating is how a mixture-of-experts layer weighs its chosen experts.
type Gating uint8

const (
	// SoftmaxTopK: softmax over all experts' router logits, the top k,
	// their probabilities renormalized to sum 1 (Mixtral, Qwen3-MoE).
	SoftmaxTopK Gating = iota
	// TopKSoftmax: the top k router logits, softmax over those k
	// (gpt-oss: llama.cpp's SOFTMAX_WEIGHT gating).
	TopKSoftmax
)

// Sliding reports whether layer l attends through the sliding window.
func (c *Config) Sliding(l int) bool {
	if c.SlidingWindow <= 0 {
		return false
	}
	if c.SlidingLayers != nil {
		return l < len(c.SlidingLayers) && c.SlidingLayers[l]
	}
	return c.SlidingEvery > 0 && l%c.SlidingEvery == 0
}

// HeadDimOf is layer l's head width: HeadDimSWA on sliding layers when set.
func (c *Config) HeadDimOf(l int) int {
	if c.HeadDimSWA > 0 && c.Sliding(l) {
		return c.HeadDimSWA
	}
	return c.HeadDim
}

// FreqScale is llama.cpp's rope_freq_scale: each angle's scale.
func (c *Config) FreqScale() float32 {
	if c.RopeFreqScale != 0 {
		return c.RopeFreqScale
	}
	return 1 / c.RopeScale
}

// LongRopeCtx reports whether LongRoPE's long factors apply: llama.cpp's
// n_ctx_seq > n_ctx_orig_yarn, n_ctx_seq being the per-sequence context
// (RopeCtx, else DefaultCtx) rounded up to a multiple of 256 as
// llama_context pads n_ctx.
func (c *Config) LongRopeCtx() bool {
	ctx := c.RopeCtx
	if ctx <= 0 {
		ctx = c.DefaultCtx()
	}
	return (ctx+255)/256*256 > c.RopeOrigCtx
}

// RopeDimsOf is the number of dimensions layer l rotates.
func (c *Config) RopeDimsOf(l int) int {
	if c.RopeDimsSWA > 0 && c.Sliding(l) {
		return c.RopeDimsSWA
	}
	return c.RopeDims
}

// KVHeadsOf is layer l's number of KV heads.
func (c *Config) KVHeadsOf(l int) int {
	if c.LayerKVHeads != nil {
		return c.LayerKVHeads[l]
	}
	return c.NKVHeads
}

// KVDimOf is the width of one position's key (and value) in layer l.
func (c *Config) KVDimOf(l int) int { return c.KVHeadsOf(l) * c.HeadDimOf(l) }

// HiddenOf is layer l's FFN width.
func (c *Config) HiddenOf(l int) int {
	if c.LayerHidden != nil {
		return c.LayerHidden[l]
	}
	return c.HiddenDim
}

// KVLayer is the layer whose cache layer l attends over: itself, or for
// the last KVShared layers the last layer before them of the same kind
// (sliding or global), as llama.cpp's KV reuse maps them.
func (c *Config) KVLayer(l int) int {
	first := c.NLayers - c.KVShared
	if l < first {
		return l
	}
	for s := first - 1; s >= 0; s-- {
		if c.Sliding(s) == c.Sliding(l) {
			return s
		}
	}
	return l
}

// MaxHeadDim is the widest head of any layer.
func (c *Config) MaxHeadDim() int { return max(c.HeadDim, c.HeadDimSWA) }

// Rotary reports whether layer l rotates its queries and keys.
func (c *Config) Rotary(l int) bool {
	return !c.LearnedPos && (c.NoRopeEvery <= 0 || (l+1)%c.NoRopeEvery != 0)
}

// Scale is the attention scale: AttnScale, or 1/√headDim computed in
// float32 as llama.cpp does (1.0f/sqrtf(head_dim)).
func (c *Config) Scale() float32 {
	if c.AttnScale != 0 {
		return c.AttnScale
	}
	return 1 / float32(math.Sqrt(float64(c.HeadDim)))
}

// Limits on hyperparameters, far beyond any released model (the largest
// have ~130 layers, width 16–25k, FFN 53k, 128 heads, 256 experts, 262k
// tokens): they stop absurd metadata before anything is sized by it, and
// keep products of them (KV bytes per token, Q width) far from overflow.
// The counts that size weights are further checked against the tensors a
// file holds (block_count against its blk.N tensors, widths against the
// tensors' shapes) before anything is allocated for them.
const (
	MaxLayers  = 1 << 12 // block_count
	MaxWidth   = 1 << 20 // embedding, FFN, expert FFN and head widths, heads × head width
	MaxHeads   = 1 << 12 // attention heads (and KV heads) per layer
	MaxVocab   = 1 << 24 // token_embd rows
	MaxExperts = 1 << 10 // experts per layer
	// MaxStateElems bounds a recurrent layer's state per sequence (the
	// largest released, Qwen3-Next's, has 32 heads of 128×128: 2^19).
	MaxStateElems = 1 << 24
	MaxCtx        = math.MaxInt32 // context_length, sliding window: positions are int32
)

// Validate rejects hyperparameters the forward pass cannot run, or that
// are beyond the limits above.
func (c *Config) Validate() error { return c.validate(func(k string) string { return k }) }

// validate is Validate naming each hyperparameter by key(short GGUF key),
// e.g. "llama.block_count" for a GGUF file's.
func (c *Config) validate(key func(string) string) error {
	bad := func(k string, v int, want string) error {
		return fmt.Errorf("model: %s = %d %s", key(k), v, want)
	}
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	for _, f := range []struct {
		k      string
		v, max int
	}{
		{"embedding_length", c.Dim, MaxWidth},
		{"block_count", c.NLayers, MaxLayers},
		{"feed_forward_length", c.HiddenDim, MaxWidth},
		{"attention.head_count", c.NHeads, MaxHeads},
		{"attention.head_count_kv", c.NKVHeads, MaxHeads},
		{"attention.key_length", c.HeadDim, MaxWidth},
		{"context_length", c.CtxLen, MaxCtx},
	} {
		switch {
		case f.v <= 0:
			return bad(f.k, f.v, "(must be positive)")
		case f.v > f.max:
			return bad(f.k, f.v, fmt.Sprintf("is over the limit of %d", f.max))
		}
	}
	switch {
	case c.NHeads%c.NKVHeads != 0:
		return fmt.Errorf("model: %s = %d heads cannot be grouped over %s = %d KV heads", key("attention.head_count"), c.NHeads, key("attention.head_count_kv"), c.NKVHeads)
	case c.NHeads*c.HeadDim > MaxWidth:
		return fmt.Errorf("model: %s × %s = %d × %d is over the limit of %d", key("attention.head_count"), key("attention.key_length"), c.NHeads, c.HeadDim, MaxWidth)
	case !c.LearnedPos && (c.RopeDims <= 0 || c.RopeDims > c.HeadDim || c.RopeDims%2 != 0):
		return fmt.Errorf("model: %s = %d (want an even count from 2 to the head width %d)", key("rope.dimension_count"), c.RopeDims, c.HeadDim)
	case c.NVocab <= 0 || c.NVocab > MaxVocab:
		return fmt.Errorf("model: vocabulary of %d tokens (token_embd.weight rows; limit %d)", c.NVocab, MaxVocab)
	case c.SlidingWindow < 0 || c.SlidingWindow > MaxCtx:
		return bad("attention.sliding_window", c.SlidingWindow, "is out of range")
	case c.NExperts < 0 || c.NExperts > MaxExperts:
		return bad("expert_count", c.NExperts, fmt.Sprintf("is out of range (limit %d)", MaxExperts))
	case c.NExperts > 0 && (c.NExpertsUsed <= 0 || c.NExpertsUsed > c.NExperts):
		return fmt.Errorf("model: %s = %d of %s = %d experts", key("expert_used_count"), c.NExpertsUsed, key("expert_count"), c.NExperts)
	case c.NExperts > 0 && (c.ExpertHidden <= 0 || c.ExpertHidden > MaxWidth):
		return bad("expert_feed_forward_length", c.ExpertHidden, fmt.Sprintf("is out of range (1 to %d)", MaxWidth))
	case c.SharedHidden < 0 || c.SharedHidden > MaxWidth:
		return bad("expert_shared_feed_forward_length", c.SharedHidden, fmt.Sprintf("is out of range (0 to %d)", MaxWidth))
	case !finite(c.Eps) || c.Eps < 0:
		return fmt.Errorf("model: norm epsilon %v", c.Eps)
	case !c.LearnedPos && (!finite(c.RopeBase) || c.RopeBase <= 0):
		return fmt.Errorf("model: %s = %v (must be positive)", key("rope.freq_base"), c.RopeBase)
	case !c.LearnedPos && (!finite(c.RopeScale) || c.RopeScale <= 0):
		return fmt.Errorf("model: %s = %v (must be positive)", key("rope.scaling.factor"), c.RopeScale)
	case !c.LearnedPos && (!finite(c.RopeFreqScale) || c.RopeFreqScale < 0):
		return fmt.Errorf("model: RoPE frequency scale %v (must be positive)", c.RopeFreqScale)
	case !slices.Contains([]string{"", "none", "linear", "yarn", "longrope"}, c.RopeScaling):
		return fmt.Errorf("model: %s = %q is not supported", key("rope.scaling.type"), c.RopeScaling)
	case c.RopeOrigCtx < 0 || c.RopeOrigCtx > MaxCtx || c.RopeCtx < 0 || c.RopeCtx > MaxCtx:
		return fmt.Errorf("model: %s = %d with a context of %d (want counts from 0 to %d)", key("rope.scaling.original_context_length"), c.RopeOrigCtx, c.RopeCtx, MaxCtx)
	case !finite(c.AttnSoftcap) || c.AttnSoftcap < 0 || !finite(c.FinalSoftcap) || c.FinalSoftcap < 0:
		return fmt.Errorf("model: soft-caps %v and %v", c.AttnSoftcap, c.FinalSoftcap)
	case c.SlidingLayers != nil && len(c.SlidingLayers) != c.NLayers:
		return fmt.Errorf("model: %s has %d entries for %d layers", key("attention.sliding_window_pattern"), len(c.SlidingLayers), c.NLayers)
	case !finite(c.RopeBaseSWA) || c.RopeBaseSWA < 0:
		return fmt.Errorf("model: %s = %v (must be positive)", key("rope.freq_base_swa"), c.RopeBaseSWA)
	case c.Yarn.ExtFactor != 0 && (c.Yarn.OrigCtx <= 0 || c.Yarn.OrigCtx > MaxCtx):
		return bad("rope.scaling.original_context_length", c.Yarn.OrigCtx, "(must be positive)")
	case !finite(c.Yarn.ExtFactor) || !finite(c.Yarn.AttnFactor) || !finite(c.Yarn.BetaFast) || !finite(c.Yarn.BetaSlow) ||
		c.Yarn.ExtFactor != 0 && (c.Yarn.BetaFast <= 0 || c.Yarn.BetaSlow <= 0):
		return fmt.Errorf("model: YaRN parameters %+v (want finite, positive betas)", c.Yarn)
	case !finite(c.AttnTempScale) || c.AttnTempScale != 0 && (c.AttnTempFloor <= 0 || c.AttnTempFloor > MaxCtx):
		return fmt.Errorf("model: %s = %v with a floor of %d positions (want a finite scale and a positive floor: rope.scaling.original_context_length)", key("attention.temperature_scale"), c.AttnTempScale, c.AttnTempFloor)
	case c.LayerKVHeads != nil && len(c.LayerKVHeads) != c.NLayers, c.LayerHidden != nil && len(c.LayerHidden) != c.NLayers:
		return fmt.Errorf("model: per-layer arrays of %d and %d entries for %d layers", len(c.LayerKVHeads), len(c.LayerHidden), c.NLayers)
	case c.HeadDimSWA < 0 || c.HeadDimSWA > MaxWidth || c.RopeDimsSWA < 0 || c.RopeDimsSWA > max(c.HeadDimSWA, c.HeadDim) || c.RopeDimsSWA%2 != 0:
		return fmt.Errorf("model: %s = %d, %s = %d", key("attention.key_length_swa"), c.HeadDimSWA, key("rope.dimension_count_swa"), c.RopeDimsSWA)
	case c.KVShared < 0 || c.KVShared >= c.NLayers && c.KVShared > 0:
		return bad("attention.shared_kv_layers", c.KVShared, fmt.Sprintf("(want fewer than the %d layers)", c.NLayers))
	case c.PerLayerEmbd < 0 || c.PerLayerEmbd > MaxWidth:
		return bad("embedding_length_per_layer_input", c.PerLayerEmbd, "is out of range")
	case c.NoRopeEvery < 0:
		return bad("no_rope_layer_step", c.NoRopeEvery, "(must not be negative)")
	}
	if err := c.validLayers(key); err != nil {
		return err
	}
	if c.StateElems != nil && len(c.StateElems) != c.NLayers {
		return fmt.Errorf("model: recurrent state sizes for %d of %d layers", len(c.StateElems), c.NLayers)
	}
	for l, e := range c.StateElems {
		if e < 0 || e > MaxStateElems {
			return fmt.Errorf("model: layer %d's recurrent state of %d values is over the limit of %d (%s)", l, e, MaxStateElems, key("ssm.*"))
		}
	}
	for _, f := range []struct {
		k string
		v float32
	}{{"attention.scale", c.AttnScale}, {"embedding_scale", c.EmbedMul}, {"residual_scale", c.ResidualMul}, {"logit_scale", c.LogitDiv}} {
		if !finite(f.v) || f.v < 0 {
			return fmt.Errorf("model: %s = %v (must be positive, or 0 for none)", key(f.k), f.v)
		}
	}
	return nil
}

// DefaultCtx is the per-sequence context when none is asked for.
func (c *Config) DefaultCtx() int { return min(c.CtxLen, 4096) }

// KVDim is the width of one position's key (and value) in one layer: the
// widest layer's where they differ (the cache's rows; narrower layers use
// the first KVDimOf elements of each).
func (c *Config) KVDim() int {
	d := c.NKVHeads * c.HeadDim
	for l := range c.NLayers {
		d = max(d, c.KVDimOf(l))
	}
	return d
}

// validLayers checks the per-layer counts: each positive, within the
// limits, and the KV heads dividing the query heads.
func (c *Config) validLayers(key func(string) string) error {
	for l := range c.NLayers {
		kv, h := c.KVHeadsOf(l), c.HiddenOf(l)
		switch {
		case kv == 0 && c.Recurrent(l): // a recurrent layer has no attention
		case kv <= 0 || kv > MaxHeads || c.NHeads%kv != 0:
			return fmt.Errorf("model: layer %d: %s = %d (want a divisor of the %d heads)", l, key("attention.head_count_kv"), kv, c.NHeads)
		case h <= 0 || h > MaxWidth:
			return fmt.Errorf("model: layer %d: %s = %d is out of range", l, key("feed_forward_length"), h)
		case c.NHeads*c.HeadDimOf(l) > MaxWidth:
			return fmt.Errorf("model: layer %d: %d heads of %d are over the limit of %d", l, c.NHeads, c.HeadDimOf(l), MaxWidth)
		}
	}
	return nil
}
