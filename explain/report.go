// Package explain walks a prompt through a loaded model and reports, with
// the model's real numbers, what each stage of inference does: tokens,
// embeddings and positions, attention, the next-token distribution, the KV
// cache and where time and bytes go. The Report is plain data; text.go,
// html.go and encoding/json render it.
package explain

// Report is everything `loom explain` shows, in pipeline order.
type Report struct {
	Model     ModelInfo   `json:"model"`
	Prompt    string      `json:"prompt"`
	Tokens    []Token     `json:"tokens"`
	Chars     int         `json:"chars"` // bytes of the prompt text
	Embedding Embedding   `json:"embedding"`
	Positions Positions   `json:"positions"`
	Blocks    Blocks      `json:"blocks"`
	Attention Attention   `json:"attention"`
	Residual  []float64   `json:"residual_norms"` // L2 norm of the chosen token's residual stream entering block 0, then after each block
	Next      []Candidate `json:"next"`
	Sampling  Sampling    `json:"sampling"`
	// Speculation, when the decode steps ran with speculative decoding,
	// shows what was drafted, accepted and rejected.
	Speculation *Speculation `json:"speculation,omitempty"`
	KVCache     KVCache      `json:"kv_cache"`
	Cost        Cost         `json:"cost"`
	Weights     Weights      `json:"weights"`
}

// ModelInfo holds the hyperparameters.
type ModelInfo struct {
	File         string  `json:"file"`
	Architecture string  `json:"architecture"`
	NLayers      int     `json:"n_layers"`
	Dim          int     `json:"dim"`
	NHeads       int     `json:"n_heads"`
	NKVHeads     int     `json:"n_kv_heads"`
	HeadDim      int     `json:"head_dim"`
	FFNDim       int     `json:"ffn_dim"`
	NVocab       int     `json:"n_vocab"`
	CtxLen       int     `json:"ctx_len"`
	RopeTheta    float64 `json:"rope_theta"`
	Params       int64   `json:"params"`
	TiedOutput   bool    `json:"tied_output"`
}

// Token is one prompt (or generated) token.
type Token struct {
	ID      int32  `json:"id"`
	Piece   string `json:"piece"`
	Special bool   `json:"special,omitempty"` // BOS/EOS and other control tokens
}

// Embedding describes X, the residual stream entering the first block.
type Embedding struct {
	Rows   int       `json:"rows"` // tokens
	Cols   int       `json:"cols"` // dim
	Row    int       `json:"row"`  // the token whose values are shown
	Values []float32 `json:"values"`
	Norm   float64   `json:"norm"` // L2 norm of that row
}

// Positions describes how positions enter (rotary embeddings, or learned
// position vectors added to the embeddings).
type Positions struct {
	Kind     string      `json:"kind"` // "rope" or "learned"
	Style    string      `json:"style"`
	Base     float64     `json:"base"`
	Dims     int         `json:"rotated_dims"`
	HeadDim  int         `json:"head_dim"`
	Scale    float64     `json:"linear_scale"`
	Examples []RopeAngle `json:"examples"`
}

// RopeAngle is the rotation of one dimension pair at one position.
type RopeAngle struct {
	Pos   int     `json:"pos"`
	Pair  int     `json:"pair"`
	Theta float64 `json:"theta"` // frequency of the pair, radians per position
	Angle float64 `json:"angle"` // pos·theta
}

// Blocks describes the shapes inside each transformer block.
type Blocks struct {
	Count      int     `json:"count"`
	Norm       string  `json:"norm"`
	Eps        float64 `json:"eps"`
	Q          []int   `json:"q_shape"` // [n, heads, head_dim]
	K          []int   `json:"k_shape"` // [n, kv_heads, head_dim]
	V          []int   `json:"v_shape"`
	Grouping   string  `json:"grouping"` // MHA, GQA or MQA, with the group size
	GroupSize  int     `json:"group_size"`
	Mask       string  `json:"mask"`
	FFNHidden  int     `json:"ffn_hidden"`
	Activation string  `json:"activation"`
	QKVBias    bool    `json:"qkv_bias"`
	QKNorm     bool    `json:"qk_norm"`
	// Notes are the family's departures from the Llama block, one line
	// each (fused projections, post-norms, soft-capping, sliding window).
	Notes   []string `json:"notes,omitempty"`
	Experts *Experts `json:"experts,omitempty"`
}

// Experts describes a mixture-of-experts FFN and the chosen token's routing.
type Experts struct {
	Count   int    `json:"count"`
	Used    int    `json:"used"`
	Hidden  int    `json:"hidden"`
	Routing string `json:"routing"`
	// Chosen is, per layer, the experts the chosen token went to, best
	// first, with their weights.
	Chosen []Routed `json:"chosen"`
}

// Routed is one layer's routing of the chosen token.
type Routed struct {
	Layer   int       `json:"layer"`
	Experts []int32   `json:"experts"`
	Weights []float32 `json:"weights"`
}

// Attention holds the chosen layer's attention weights.
type Attention struct {
	Layer   int         `json:"layer"`
	Head    int         `json:"head"`
	Token   int         `json:"token"`   // the query token charted
	Weights [][]float32 `json:"weights"` // [n, n] for (Layer, Head): row i = query i
	// Heads is every head of the layer: [head][n][n].
	Heads [][][]float32 `json:"heads"`
	// Top ranks earlier tokens by the chosen token's weight averaged over
	// the layer's heads.
	Top []Attended `json:"top_attended"`
}

// Attended is a key token and the attention it receives.
type Attended struct {
	Index  int     `json:"index"`
	Piece  string  `json:"piece"`
	Weight float64 `json:"weight"`
}

// Candidate is one next-token candidate.
type Candidate struct {
	Rank     int     `json:"rank"`
	ID       int32   `json:"id"`
	Piece    string  `json:"piece"`
	Logit    float32 `json:"logit"`
	Prob     float64 `json:"prob"`      // softmax at temperature 1 over the whole vocabulary
	ProbTemp float64 `json:"prob_temp"` // softmax at the chosen temperature
	InTopK   bool    `json:"in_top_k"`
	InTopP   bool    `json:"in_top_p"` // inside the top-p nucleus (of the top-k, at temperature 1, as the sampler cuts)
}

// Sampling records the cut-offs and the draw.
type Sampling struct {
	Temp      float32 `json:"temp"`
	TopK      int     `json:"top_k"`
	TopP      float32 `json:"top_p"`
	Seed      uint64  `json:"seed"`
	Nucleus   int     `json:"nucleus_size"` // tokens kept by top-p (within top-k)
	Chosen    Token   `json:"chosen"`
	Generated []Token `json:"generated"` // the decode steps' tokens, chosen first
	Text      string  `json:"text"`
}

// Speculation is speculative decoding in the timed run: a drafter (an
// n-gram lookup of the sequence's own text, or a draft model) proposes
// tokens, one forward pass evaluates them all, and the model's own choice
// at each position (the same draw as without drafts) accepts a draft while
// they agree; the first disagreement ends the step with the model's token
// and the drafts after it are dropped.
type Speculation struct {
	Mode     string     `json:"mode"`
	Max      int        `json:"max"` // drafts per step at most (0: the engine's 16)
	Min      int        `json:"min"`
	Fixed    bool       `json:"fixed,omitempty"`
	Tokens   int        `json:"tokens"`   // generated in the timed run (the steps' and the last)
	Drafted  int        `json:"drafted"`  // tokens proposed
	Accepted int        `json:"accepted"` // of those, taken
	Steps    []SpecStep `json:"steps"`    // one per forward pass that chose tokens, the prompt's first
}

// SpecStep is one forward pass's outcome.
type SpecStep struct {
	Accepted []Token `json:"accepted,omitempty"` // drafts the model took, in order
	Token    *Token  `json:"token"`              // the token the model chose after them (nil: a draft ended the generation)
	Rejected []Token `json:"rejected,omitempty"` // drafts not taken: the first is the one Token replaced
	Why      string  `json:"why"`
}

// KVCache is the memory the keys and values take.
type KVCache struct {
	DType            string  `json:"dtype"`
	BytesPerElement  float64 `json:"bytes_per_element"` // mean of K's and V's (q8_0: 34/32)
	BytesPerToken    int64   `json:"bytes_per_token"`
	CtxLen           int     `json:"ctx_len"`
	BytesAtCtx       int64   `json:"bytes_at_ctx"`
	MHABytesPerToken int64   `json:"mha_bytes_per_token"` // if every query head had its own K and V
	Formula          string  `json:"formula"`
	// Sliding-window layers kept apart: they hold only Window positions
	// (plus slack and a step) per sequence, WindowBytes in all; the
	// other layers are BytesPerToken. FullBytesAtCtx is the cache of
	// every layer keeping every position.
	WindowLayers   int   `json:"window_layers,omitempty"`
	Window         int   `json:"window,omitempty"`
	WindowBytes    int64 `json:"window_bytes,omitempty"`
	FullBytesAtCtx int64 `json:"full_bytes_at_ctx,omitempty"`
	// A hybrid model's recurrent layers: StateLayers of them keep, per
	// sequence, a state of StateBytes in all (whatever its length) in
	// place of K and V; a model of the same shape with attention on every
	// layer would take AttnOnlyBytesPerToken per position. Growth compares
	// the two as the context grows. Checkpoints is the pool's state slots
	// (live states and checkpoints for prefix reuse).
	StateLayers           int           `json:"state_layers,omitempty"`
	StateBytes            int64         `json:"state_bytes,omitempty"`
	Checkpoints           int           `json:"state_slots,omitempty"`
	AttnOnlyBytesPerToken int64         `json:"attn_only_bytes_per_token,omitempty"`
	Growth                []ContextCost `json:"growth,omitempty"`
}

// ContextCost is one sequence's cache and one token's work at a context
// length, for a hybrid model and for the same shape with attention on
// every layer.
type ContextCost struct {
	Ctx           int     `json:"ctx"`
	Bytes         int64   `json:"bytes"`
	AttnOnlyBytes int64   `json:"attn_only_bytes"`
	FLOPs         float64 `json:"flops_per_token"`
	AttnOnlyFLOPs float64 `json:"attn_only_flops_per_token"`
}

// Cost is time, work and traffic per phase, against the machine's roofline.
type Cost struct {
	Prefill Phase   `json:"prefill"`
	Decode  Decode  `json:"decode"`
	Machine Machine `json:"machine"` // the roofs; PeakGFLOPS the one for this model's weights
}

// Phase is the prefill: the whole prompt as one batch.
type Phase struct {
	Tokens    int     `json:"tokens"`
	Seconds   float64 `json:"seconds"`
	FLOPs     float64 `json:"flops"`
	Bytes     float64 `json:"bytes"` // weights (read once per batch) + KV cache traffic
	TokS      float64 `json:"tok_s"`
	GFLOPS    float64 `json:"gflops"`
	Intensity float64 `json:"intensity"` // FLOPs per byte
}

// Decode is the per-token view of the decode steps.
type Decode struct {
	Tokens        int     `json:"tokens"`
	Seconds       float64 `json:"seconds"`
	Passes        int     `json:"forward_passes,omitempty"` // with speculative decoding: passes that chose the Tokens
	FLOPsPerToken float64 `json:"flops_per_token"`
	BytesPerToken float64 `json:"bytes_per_token"`
	TokS          float64 `json:"tok_s"`
	GBs           float64 `json:"gbs"` // achieved weight+KV read rate
	GFLOPS        float64 `json:"gflops"`
	Intensity     float64 `json:"intensity"`
	Bound         string  `json:"bound"`         // "memory" or "compute" (which roof is lower at this intensity)
	RoofTokS      float64 `json:"roof_tok_s"`    // tok/s the roofline allows
	RoofFraction  float64 `json:"roof_fraction"` // achieved / roof
}

// Weights breaks the stored weight bytes down by component.
type Weights struct {
	TotalBytes int64       `json:"total_bytes"`
	Components []Component `json:"components"`
}

// Component is a group of tensors.
type Component struct {
	Name    string  `json:"name"`
	Tensors int     `json:"tensors"`
	Params  int64   `json:"params"`
	Bytes   int64   `json:"bytes"`
	Share   float64 `json:"share"`
	Types   string  `json:"types"` // storage types, e.g. "q4_K, q6_K"
}
