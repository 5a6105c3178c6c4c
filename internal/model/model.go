// Package model defines what every architecture shares: hyperparameters read
// from metadata, a source of named weight tensors, the Batch a forward pass
// evaluates, and the registry that maps an architecture name to its builder.
package model

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/parallel"
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

// TensorNames implements TensorNamer.
func (m MapSource) TensorNames() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	return names
}

// TensorNamer is a Source that can list the names of its tensors (every
// Source in Loom can), so counts in metadata can be checked against the
// tensors that exist before anything is sized by them.
type TensorNamer interface {
	TensorNames() []string
}

// Layers counts the blocks src has tensors for: 1 + the highest N of its
// "blk.N." tensors (0 when there are none); ok is false when src cannot
// list its tensors.
func Layers(src Source) (n int, ok bool) {
	tn, ok := src.(TensorNamer)
	if !ok {
		return 0, false
	}
	for _, name := range tn.TensorNames() {
		rest, found := strings.CutPrefix(name, "blk.")
		if !found {
			continue
		}
		num, _, found := strings.Cut(rest, ".")
		if !found {
			continue
		}
		if i, err := strconv.Atoi(num); err == nil && i >= 0 && i < math.MaxInt32 {
			n = max(n, i+1)
		}
	}
	return n, true
}

// CheckLayers rejects a layer count (named key in the message, e.g.
// "llama.block_count") beyond the blocks src has tensors for, before
// anything is allocated per layer.
func CheckLayers(src Source, nLayers int, key string) error {
	have, ok := Layers(src)
	switch {
	case !ok || nLayers <= have:
		return nil
	case have == 0:
		return fmt.Errorf("model: %s = %d but the file has no layer tensors (blk.N.*)", key, nLayers)
	case have == 1:
		return fmt.Errorf("model: %s = %d but the file has tensors for 1 layer (blk.0)", key, nLayers)
	}
	return fmt.Errorf("model: %s = %d but the file has tensors for %d layers (blk.0 … blk.%d)", key, nLayers, have, have-1)
}

// Batch is the unit of work of a forward pass: tokens of one or more
// sequences, each at its position, and which of them need logits. The
// tokens of a sequence are contiguous in the batch and continue what its
// cache holds (positions Len(), Len()+1, …). Prefill of one prompt is a
// batch of that prompt; decode of N sequences a batch of N tokens; a
// prompt chunk and other sequences' next tokens may share one batch.
type Batch struct {
	Tokens []int32
	Pos    []int32
	Seq    []int32        // per token, its index into Seqs (nil: all 0)
	Seqs   []*kvcache.Seq // the caches the tokens extend
	Logits []bool         // nil: logits for the last token only
	// OneByOne, per sequence in Seqs (nil: none), makes each of that
	// sequence's tokens attend in the order a one-token decode at its
	// position uses (speculative verification: k+1 tokens whose rows must
	// equal k+1 one-token decodes'); otherwise a run of several tokens
	// takes the batched order, as llama.cpp's prefill.
	OneByOne []bool
	// Batched, per sequence in Seqs (nil: none), makes a run of one token
	// attend in the batched order, as a run of several does: a prompt cut
	// into chunks (a one-token chunk beside running streams) attends as
	// the prompt evaluated whole, however it was cut.
	Batched []bool
	// Hidden makes Forward write, for the tokens that want output, their
	// final hidden state — after the family's final norm, before the LM
	// head: llama.cpp's t_embd — [nWanted, Dim], in place of logits (an
	// embedding model's rows for Runner.Pool).
	Hidden bool
	// Adapters, per sequence in Seqs (nil: none for any), are the LoRA
	// adapters that sequence's products apply, each at its scale.
	Adapters [][]AdapterScale
}

// AdaptersOf is sequence s's adapters.
func (b *Batch) AdaptersOf(s int) []AdapterScale {
	if s < len(b.Adapters) {
		return b.Adapters[s]
	}
	return nil
}

// DecodeOrder reports whether sequence s's tokens attend one by one.
func (b *Batch) DecodeOrder(s int) bool { return s < len(b.OneByOne) && b.OneByOne[s] }

// BatchOrder reports whether sequence s's run attends in the batched order
// even when it is one token.
func (b *Batch) BatchOrder(s int) bool { return s < len(b.Batched) && b.Batched[s] }

// Wants reports whether token i needs logits.
func (b *Batch) Wants(i int) bool {
	if b.Logits == nil {
		return i == len(b.Tokens)-1
	}
	return b.Logits[i]
}

// SeqOf is token i's index into Seqs.
func (b *Batch) SeqOf(i int) int {
	if b.Seq == nil {
		return 0
	}
	return int(b.Seq[i])
}

// Check validates a batch against the vocabulary and its sequences' caches
// and returns the number of tokens that want logits.
func (b *Batch) Check(nVocab, maxCtx int) (int, error) {
	n := len(b.Tokens)
	if n == 0 {
		return 0, fmt.Errorf("model: empty batch")
	}
	if len(b.Pos) != n || (b.Seq != nil && len(b.Seq) != n) || (b.Logits != nil && len(b.Logits) != n) {
		return 0, fmt.Errorf("model: batch has %d tokens, %d positions, %d sequence ids, %d logit flags", n, len(b.Pos), len(b.Seq), len(b.Logits))
	}
	if len(b.Seqs) == 0 {
		return 0, fmt.Errorf("model: batch names no sequence cache")
	}
	wanted, next, last := 0, 0, -1
	for i, t := range b.Tokens {
		if t < 0 || int(t) >= nVocab {
			return 0, fmt.Errorf("model: token %d at batch index %d is outside the vocabulary (%d)", t, i, nVocab)
		}
		s := b.SeqOf(i)
		if s < 0 || s >= len(b.Seqs) || b.Seqs[s] == nil {
			return 0, fmt.Errorf("model: batch index %d names sequence %d of %d", i, s, len(b.Seqs))
		}
		if s != last {
			for j := range i { // a sequence's tokens are one contiguous run
				if b.SeqOf(j) == s {
					return 0, fmt.Errorf("model: sequence %d's tokens are not contiguous in the batch (index %d)", s, i)
				}
			}
			last, next = s, b.Seqs[s].Len()
		}
		if int(b.Pos[i]) != next {
			return 0, fmt.Errorf("model: position %d at batch index %d, want %d (sequence %d continues its cache)", b.Pos[i], i, next, s)
		}
		if next >= maxCtx {
			return 0, fmt.Errorf("model: position %d exceeds the context of %d tokens", next, maxCtx)
		}
		next++
		if b.Wants(i) {
			wanted++
		}
	}
	return wanted, nil
}

// Hooks lets a caller observe intermediate values; nil fields cost nothing.
// Token indices are within the current ubatch (the whole batch unless it is
// longer than the model's ubatch size). The slices are only valid during
// the call.
type Hooks struct {
	// Embeddings receives the residual stream entering the first block,
	// x [n, dim] (token embeddings, plus learned positions for GPT-2,
	// scaled by √dim for Gemma).
	Embeddings func(x []float32)
	// Attention receives each layer's attention weights per (token, head),
	// w [pos+1] (the causal row: the token and every earlier position). It
	// is called from worker goroutines, concurrently for distinct pairs.
	Attention func(layer, tok, head int, w []float32)
	// Residual receives the residual stream after each block, x [n, dim].
	Residual func(layer int, x []float32)
	// Experts receives a mixture-of-experts layer's routing: for each
	// token, the chosen experts best first, sel [n, k], and their
	// weights w [n, k].
	Experts func(layer int, sel []int32, w []float32)
}

// Model is a loaded network: immutable weights that any number of runners
// and sequences share, concurrently too (a forward pass only reads them;
// every per-call buffer, the matrix products' included, is the runner's).
type Model interface {
	Config() *Config
	// NewRunner makes the mutable side of evaluation: activation buffers,
	// attention scratch and a thread pool.
	NewRunner(opts RunnerOptions) Runner
}

// Runner evaluates batches with a model's weights against caller-owned KV
// caches (Batch.Seqs). It is not safe for concurrent use.
type Runner interface {
	// Forward reserves cache room for b's tokens (an error wrapping
	// kvcache.ErrFull, with nothing evaluated, when the pool lacks it),
	// evaluates b, commits the tokens to their sequences, and writes logits
	// for the tokens that want them, in order, into out [nWanted, NVocab];
	// it returns nWanted.
	Forward(b *Batch, out []float32) (int, error)
	// AttentionTime is how long the last Forward spent in attention: the
	// part of a pass that grows with the positions its tokens attend to
	// (the scheduler prices prompt chunks by it).
	AttentionTime() time.Duration
	SetHooks(h *Hooks)
	// Pool turns one sequence's hidden rows (hidden [n, Dim], from Hidden
	// batches: every position for mean or no pooling, else the one row
	// the pooling takes — Config.PoolLastToken says which) into its
	// embedding or rank scores, out [PooledDim].
	Pool(hidden []float32, n int, out []float32) error
	// MaxCtx is the longest sequence the runner evaluates.
	MaxCtx() int
	Close()
}

// RunnerOptions configure a runner.
type RunnerOptions struct {
	MaxCtx  int // longest sequence in positions (0: the training context, at most 4096)
	Threads int
	Pool    *parallel.Pool // optional shared pool
	// FlashAttn runs attention on the tiled path with an F16 cache too
	// (llama.cpp's -fa; any other cache type always takes it).
	FlashAttn bool
}

// Builder makes a model of one architecture from its config and weights.
type Builder func(cfg *Config, src Source) (Model, error)

// Arch is a registered architecture: how its config differs, and its builder.
type Arch struct {
	Name  string
	Tweak func(cfg *Config) // set architecture flags (bias, norms, rope style)
	// Meta, when set, reads the family's own metadata (keys Name+".…")
	// from f into cfg: it runs after the hyperparameters every family has
	// are read, before Tweak and validation. Its error is reported with
	// the file's path.
	Meta    func(f *gguf.File, cfg *Config) error
	Build   Builder
	Experts bool // a block may be a mixture of experts (expert_count > 0); other families refuse one
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
