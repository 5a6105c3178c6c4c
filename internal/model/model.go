// Package model defines what every architecture shares: hyperparameters read
// from metadata, a source of named weight tensors, the Batch a forward pass
// evaluates, and the registry that maps an architecture name to its builder.
package model

import (
	"fmt"
	"sort"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Tensor is a named weight as stored: type, ggml dims (Dims[0] = row length)
// and raw bytes.
type Tensor struct {
	Name string
	Type tensor.DType
	Dims []uint64
	Data []byte
}

// Source provides weights by GGUF tensor name.
type Source interface {
	Tensor(name string) (Tensor, bool)
}

// MapSource is a Source over a map (llama2.c checkpoints, tests).
type MapSource map[string]Tensor

// Tensor implements Source.
func (m MapSource) Tensor(name string) (Tensor, bool) { t, ok := m[name]; return t, ok }

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
	RopeScale  float32 // linear scaling factor (1 = none)
	RopeNeoX   bool
	QKVBias    bool // Qwen2
	QKNorm     bool // Qwen3
	TiedOutput bool // set by the builder when output.weight is absent
}

// Validate rejects hyperparameters the forward pass cannot run.
func (c *Config) Validate() error {
	switch {
	case c.Dim <= 0 || c.NLayers <= 0 || c.NHeads <= 0 || c.HiddenDim <= 0 || c.HeadDim <= 0:
		return fmt.Errorf("model: bad hyperparameters (dim %d, layers %d, heads %d, ffn %d, head_dim %d)",
			c.Dim, c.NLayers, c.NHeads, c.HiddenDim, c.HeadDim)
	case c.NKVHeads <= 0 || c.NHeads%c.NKVHeads != 0:
		return fmt.Errorf("model: %d heads cannot be grouped over %d KV heads", c.NHeads, c.NKVHeads)
	case c.RopeDims <= 0 || c.RopeDims > c.HeadDim || c.RopeDims%2 != 0:
		return fmt.Errorf("model: rope dimension count %d (head_dim %d)", c.RopeDims, c.HeadDim)
	case c.NVocab <= 0:
		return fmt.Errorf("model: vocabulary size %d", c.NVocab)
	case c.CtxLen <= 0:
		return fmt.Errorf("model: context length %d", c.CtxLen)
	}
	return nil
}

// Batch is the unit of work of a forward pass: tokens at positions of one
// sequence, and which of them need logits. Prefill is a batch of the whole
// prompt; decode a batch of one token.
type Batch struct {
	Tokens []int32
	Pos    []int32
	Logits []bool // nil: logits for the last token only
}

// Wants reports whether token i needs logits.
func (b *Batch) Wants(i int) bool {
	if b.Logits == nil {
		return i == len(b.Tokens)-1
	}
	return b.Logits[i]
}

// Hooks lets a caller observe intermediate values; nil fields cost nothing.
// Token indices are within the current ubatch (the whole batch unless it is
// longer than the model's ubatch size). The slices are only valid during
// the call.
type Hooks struct {
	// Embeddings receives the residual stream entering the first block,
	// x [n, dim] (token embeddings, plus learned positions where a model
	// has them).
	Embeddings func(x []float32)
	// Attention receives each layer's attention weights per (token, head),
	// w [pos+1] (the causal row: the token and every earlier position). It
	// is called from worker goroutines, concurrently for distinct pairs.
	Attention func(layer, tok, head int, w []float32)
	// Residual receives the residual stream after each block, x [n, dim].
	Residual func(layer int, x []float32)
}

// CacheInfo describes a model's KV cache.
type CacheInfo struct {
	DType         string // element type of K and V
	BytesPerToken int    // K and V of every layer for one position
	Positions     int    // capacity
}

// Model is a loaded network that evaluates batches against its KV cache.
type Model interface {
	Config() *Config
	// Forward evaluates b and writes logits for the tokens that want them,
	// in order, into out [nWanted, NVocab]; it returns nWanted.
	Forward(b *Batch, out []float32) (int, error)
	// CacheLen is the number of positions in the KV cache.
	CacheLen() int
	// Truncate drops cache positions from n on.
	Truncate(n int)
	SetHooks(h *Hooks)
	Cache() CacheInfo
	Close()
}

// Options configure a model instance.
type Options struct {
	CtxLen  int // KV cache positions (0: the model's training context, capped)
	Threads int
	Pool    *parallel.Pool // optional shared pool
}

// Builder makes a model of one architecture from its config and weights.
type Builder func(cfg *Config, src Source, opts Options) (Model, error)

// Arch is a registered architecture: how its config differs, and its builder.
type Arch struct {
	Name  string
	Tweak func(cfg *Config) // set architecture flags (bias, norms, rope style)
	Build Builder
}

var registry = map[string]Arch{}

// Register adds an architecture; packages call it from init.
func Register(a Arch) { registry[a.Name] = a }

// Lookup finds a registered architecture.
func Lookup(name string) (Arch, error) {
	a, ok := registry[name]
	if !ok {
		return Arch{}, fmt.Errorf("model: unsupported architecture %q (supported: %v)", name, Names())
	}
	return a, nil
}

// Names lists the registered architectures.
func Names() []string {
	var s []string
	for n := range registry {
		s = append(s, n)
	}
	sort.Strings(s)
	return s
}

// Binder fetches weights from a Source with shape checks, recording the
// first error so a builder can bind every tensor and check once.
type Binder struct {
	Src Source
	Err error
}

func (b *Binder) fail(format string, args ...any) {
	if b.Err == nil {
		b.Err = fmt.Errorf(format, args...)
	}
}

// Matrix binds a 2-D weight with rows of cols elements (ggml [cols, rows]).
func (b *Binder) Matrix(name string, rows, cols int) *kernels.Matrix {
	t, ok := b.Src.Tensor(name)
	if !ok {
		b.fail("model: missing tensor %q", name)
		return nil
	}
	if len(t.Dims) != 2 || t.Dims[0] != uint64(cols) || t.Dims[1] != uint64(rows) {
		b.fail("model: tensor %q has shape %v, want [%d %d]", name, t.Dims, cols, rows)
		return nil
	}
	m, err := kernels.NewMatrix(name, t.Type, rows, cols, t.Data)
	if err != nil {
		b.fail("model: %w", err)
	}
	return m
}

// OptMatrix is Matrix for a weight that may be absent (nil, no error).
func (b *Binder) OptMatrix(name string, rows, cols int) *kernels.Matrix {
	if _, ok := b.Src.Tensor(name); !ok {
		return nil
	}
	return b.Matrix(name, rows, cols)
}

// Vector binds a 1-D weight of n elements, converted to float32.
func (b *Binder) Vector(name string, n int) []float32 {
	t, ok := b.Src.Tensor(name)
	if !ok {
		b.fail("model: missing tensor %q", name)
		return nil
	}
	if len(t.Dims) != 1 || t.Dims[0] != uint64(n) {
		b.fail("model: tensor %q has shape %v, want [%d]", name, t.Dims, n)
		return nil
	}
	v := make([]float32, n)
	if err := quant.Dequantize(t.Type, v, t.Data); err != nil {
		b.fail("model: tensor %q: %w", name, err)
	}
	return v
}

// OptVector is Vector for a weight that may be absent.
func (b *Binder) OptVector(name string, n int) []float32 {
	if _, ok := b.Src.Tensor(name); !ok {
		return nil
	}
	return b.Vector(name, n)
}
