// Package engine is Loom's public Go API: load a model file, tokenize,
// evaluate logits and generate text with streaming.
package engine

import (
	"context"
	"errors"
	"fmt"
	"github.com/loom-inference/loom/grammar"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/llama2c"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families" // registers every family
	"github.com/loom-inference/loom/tokenizer"
)

// Options configure Load.
type Options struct {
	Threads int // worker threads (0: 1)
	CtxLen  int // longest sequence in positions (0: the model's context, at most 4096)
	// Parallel is the sequences evaluated together, and the KV pool is
	// sized for them when KVTokens is 0 (0: 1). An embedding model runs at
	// least 64 (its inputs leave in the step that evaluates them; the step
	// budget bounds the work) and sizes its pool by the step, not by them.
	Parallel  int
	KVTokens  int    // KV pool size in positions, shared by all sequences (0: CtxLen × Parallel)
	KVBytes   int64  // KV pool size in bytes, used when KVTokens is 0
	Tokenizer string // llama2.c tokenizer.bin for a .bin checkpoint
	// StepTokens bounds the tokens of one forward pass: every running
	// sequence's next token plus chunks of prompts (0: 256, so a step of a
	// 1B model on 2 cores stays under a second and a long prompt never
	// stalls the others for long).
	StepTokens int
	// ChunkLatency, when positive, bounds a step that holds prompt chunks
	// beside decoding sequences to about this many times a decode-only
	// step (a fitted cost model of tokens and attended positions): running
	// streams' inter-token latency stays within it while a long prompt
	// prefills, which then takes longer (0: StepTokens alone cuts chunks).
	ChunkLatency float64
	// MaxWaiting is how many requests may wait for a place among the
	// running ones before Submit fails with ErrOverloaded (0: 256).
	MaxWaiting int
	// Spec is the speculative decoding requests get by default (a
	// request's Spec.Mode overrides it; zero: off).
	Spec SpecParams
	// DraftModel is a smaller model with the same vocabulary that drafts
	// tokens for speculation mode "draft" (llama.cpp's --model-draft).
	DraftModel string
	// Quantize, for a Hugging Face folder, quantizes its weights while
	// loading to a llama-quantize mix (Q8_0, Q4_K_M, …).
	Quantize string
	// Hooks, if set, observe every forward pass from the start (SetHooks
	// changes them later).
	Hooks *Hooks
	// LoRA are adapters to load with the model (llama.cpp's --lora):
	// requests apply them at their scales unless they say otherwise
	// (Request.LoRA).
	LoRA []LoRAFile
	// Pooling, when set (none, mean, cls, last or rank: llama.cpp's
	// --pooling), overrides the model's: a text-generation model then
	// embeds with it (llama.cpp's --embedding), and "rank" reads a
	// classification head (cls.output) as a reranker.
	Pooling string
	// StateCheckpoints, for a model with recurrent layers, is how many
	// checkpoints of their state the pool keeps for prefix reuse (0:
	// 2·Parallel + 4; each costs a sequence's state: loom explain says
	// how much). llama.cpp's --ctx-checkpoints plays a like role.
	StateCheckpoints int

	// Long context (issue 32), as llama.cpp names them:
	// CacheTypeK and CacheTypeV are the KV cache's element types
	// (--cache-type-k/-v: f16, the default, bf16, f32, q8_0, q4_0).
	CacheTypeK, CacheTypeV string
	// FlashAttn runs attention tiled, with an online softmax over the
	// cache's blocks, for an F16 cache too (llama.cpp's -fa; other cache
	// types always are). Off, an F16 cache's attention is llama.cpp's
	// non-flash computation bit for bit.
	FlashAttn bool
	// Rope overrides the file's RoPE scaling (--rope-scaling,
	// --rope-scale, --rope-freq-base, --rope-freq-scale, --yarn-orig-ctx);
	// its zero value keeps the file's.
	Rope RopeOverride
	// ContextShift, when set, lets a sequence that fills its context go
	// on: the oldest positions after the first Keep are dropped and the
	// kept keys re-rotated to their new positions (--context-shift,
	// --keep); otherwise a full context ends the request.
	ContextShift bool
	Keep         int

	// WeightsInPlace reads the weights from the model file's mapping, as
	// llama.cpp's --mmap does: nothing is copied into huge pages at load
	// and the pages are shared with the page cache and other processes
	// (the matrices repacked at load for their kernels, as llama.cpp
	// repacks too, read their repacked copies either way). Otherwise the
	// matrices every token reads whole and that are not repacked at load
	// (F16, BF16, F32, the K-quants, a tied LM head) are copied into
	// memory backed by transparent huge pages where the kernel offers
	// them and the memory is available: decode streams them faster
	// (moveWeights; GGUF files and Hugging Face folders).
	WeightsInPlace bool
}

// configChanges are the changes to the model's config the options ask
// for: Pooling's, then Rope's (nil: none).
func (o Options) configChanges() func(*model.Config) error {
	pool, rope := o.pooling(), o.ropeChange()
	switch {
	case pool == nil:
		return rope
	case rope == nil:
		return pool
	}
	return func(c *model.Config) error {
		if err := pool(c); err != nil {
			return err
		}
		return rope(c)
	}
}

// pooling is the config change Options.Pooling asks for (nil: none).
func (o Options) pooling() func(*model.Config) error {
	if o.Pooling == "" {
		return nil
	}
	return func(c *model.Config) error { return c.SetPooling(o.Pooling) }
}

// Engine is a loaded model with its vocabulary, a KV cache pool, the runner
// that evaluates batches and the scheduler that feeds it: every generation
// and evaluation is a Request submitted to the scheduler, which runs them
// together (continuous batching). Its methods may be called from several
// goroutines.
type Engine struct {
	path  string
	file  *gguf.File // nil for llama2.c checkpoints
	model model.Model
	vocab *tokenizer.Vocab

	tensors []TensorInfo
	ctxLen  int
	// shiftKeep: Options.ContextShift's first positions kept (-1: no
	// context shift; a full context ends the request).
	shiftKeep int

	parts  []*gguf.File    // the other parts of a split model
	folder *hfmodel.Folder // a Hugging Face folder's mapped weights
	mu     sync.Mutex      // guards runner and kv: held by the scheduler's steps
	closed sync.Once
	runner model.Runner
	kv     *kvcache.Pool
	sched  *scheduler
	spec   SpecParams // requests' default speculation
	draft  *Engine    // the draft model (Options.DraftModel), nil without
	loras  []loraAdapter

	gramOnce  sync.Once
	gramIndex *grammar.Index
	matchers  matcherPool

	weights *hugepage.Region // the weights moveWeights copied (nil: none)
}

// TensorInfo describes one stored weight tensor.
type TensorInfo struct {
	Name  string
	Type  string
	Dims  []uint64 // ggml order: Dims[0] is the row length
	Bytes uint64
}

// Tensors lists the model's weight tensors as stored (file order for GGUF,
// by name for llama2.c checkpoints).
func (e *Engine) Tensors() []TensorInfo { return e.tensors }

// Load opens a GGUF file, or a llama2.c checkpoint (.bin) with opts.Tokenizer.
func Load(path string, opts Options) (*Engine, error) {
	if strings.EqualFold(filepath.Ext(path), ".bin") {
		return loadLlama2C(path, opts)
	}
	if hfmodel.IsFolder(path) {
		return loadFolder(path, opts)
	}
	if opts.Quantize != "" {
		return nil, fmt.Errorf("%s: quantizing while loading is for Hugging Face folders; quantize a GGUF file with loom quantize", path)
	}
	parts, err := openParts(path)
	if err != nil {
		return nil, err
	}
	closeAll := func() {
		for _, p := range parts {
			p.Close()
		}
	}
	f := parts[0]
	vocab, err := tokenizer.FromGGUF(f)
	if err != nil {
		closeAll()
		return nil, err
	}
	m, err := model.LoadGGUFWith(f, model.SplitSource(parts), opts.configChanges())
	if err != nil {
		closeAll()
		return nil, err
	}
	if vocab.Len() != m.Config().NVocab {
		closeAll()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens, token_embd.weight %d rows", path, vocab.Len(), m.Config().NVocab)
	}
	e := &Engine{path: path, file: f, model: m, vocab: vocab, parts: parts[1:]}
	for _, p := range parts {
		for _, t := range p.Tensors {
			e.tensors = append(e.tensors, TensorInfo{t.Name, t.Type.String(), t.Dims, t.Size})
		}
	}
	e.moveWeights(opts, func(b []byte) bool {
		return slices.ContainsFunc(parts, func(p *gguf.File) bool { return p.Holds(b) })
	})
	if err := e.start(opts); err != nil {
		e.freeWeights()
		closeAll()
		return nil, err
	}
	return e, nil
}

var splitName = regexp.MustCompile(`-(\d{5})-of-(\d{5})\.gguf$`)

// openParts opens a GGUF file, or every part of a split one (any part's
// name brings all of them; the first part holds the metadata).
func openParts(path string) ([]*gguf.File, error) {
	m := splitName.FindStringSubmatch(path)
	if m == nil {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		return []*gguf.File{f}, nil
	}
	n, _ := strconv.Atoi(m[2])
	if n < 1 || n > 1000 {
		return nil, fmt.Errorf("%s: a split of %d parts", path, n)
	}
	stem := strings.TrimSuffix(path, m[0])
	var parts []*gguf.File
	for i := 1; i <= n; i++ {
		f, err := gguf.Open(fmt.Sprintf("%s-%05d-of-%05d.gguf", stem, i, n))
		if err != nil {
			for _, p := range parts {
				p.Close()
			}
			return nil, fmt.Errorf("split model part %d of %d: %w", i, n, err)
		}
		parts = append(parts, f)
	}
	if c, err := parts[0].Uint("split.count"); err == nil && int(c) != n {
		for _, p := range parts {
			p.Close()
		}
		return nil, fmt.Errorf("%s: split.count says %d parts, the names %d", path, c, n)
	}
	return parts, nil
}

func loadLlama2C(path string, opts Options) (*Engine, error) {
	if opts.Tokenizer == "" {
		return nil, fmt.Errorf("%s: a llama2.c checkpoint needs its tokenizer.bin (--tokenizer)", path)
	}
	cfg, src, err := llama2c.Load(path)
	if err != nil {
		return nil, err
	}
	vocab, err := tokenizer.FromLlama2C(opts.Tokenizer, cfg.NVocab)
	if err != nil {
		return nil, err
	}
	// llama2.c stories are delimited by BOS: its run.c stops there.
	vocab.EOT = vocab.BOS
	a, err := model.Lookup(cfg.Arch)
	if err != nil {
		return nil, err
	}
	if set := opts.configChanges(); set != nil {
		if err := set(cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	m, err := a.Build(cfg, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	e := &Engine{path: path, model: m, vocab: vocab}
	for _, name := range slices.Sorted(maps.Keys(src)) {
		t := src[name]
		e.tensors = append(e.tensors, TensorInfo{name, t.Type.String(), t.Dims, uint64(len(t.Data))})
	}
	if err := e.start(opts); err != nil {
		return nil, err
	}
	return e, nil
}

// start makes the runner and the KV pool.
func (e *Engine) start(opts Options) error {
	c := e.model.Config()
	switch {
	case opts.CtxLen < 0 || opts.KVTokens < 0 || opts.KVBytes < 0 || opts.Parallel < 0 || opts.Threads < 0 || opts.StepTokens < 0 || opts.MaxWaiting < 0 || opts.StateCheckpoints < 0:
		return fmt.Errorf("engine: negative option (ctx %d, kv %d, kv bytes %d, parallel %d, threads %d, step tokens %d, waiting %d, state checkpoints %d)", opts.CtxLen, opts.KVTokens, opts.KVBytes, opts.Parallel, opts.Threads, opts.StepTokens, opts.MaxWaiting, opts.StateCheckpoints)
	case opts.StateCheckpoints > 1<<16:
		return fmt.Errorf("engine: %d state checkpoints is over the limit of %d", opts.StateCheckpoints, 1<<16)
	case opts.CtxLen > 1<<20:
		return fmt.Errorf("engine: context of %d tokens is over the limit of %d", opts.CtxLen, 1<<20)
	case opts.StepTokens > 1<<20 || opts.MaxWaiting > 1<<20 || opts.Parallel > 4096:
		return fmt.Errorf("engine: step of %d tokens, %d waiting or %d parallel sequences is over the limit (%d, %d, %d)", opts.StepTokens, opts.MaxWaiting, opts.Parallel, 1<<20, 1<<20, 4096)
	}
	e.ctxLen = opts.CtxLen
	if e.ctxLen == 0 {
		e.ctxLen = c.DefaultCtx()
	}
	if c.LearnedPos && e.ctxLen > c.CtxLen {
		return fmt.Errorf("engine: context of %d tokens is longer than the %d positions this model learned (GPT-2 has no position beyond its table)", e.ctxLen, c.CtxLen)
	}
	types, err := cacheTypes(c, opts)
	if err != nil {
		return err
	}
	perPosition := int64(c.NLayers) * int64(kvcache.HeadWords(types.K, c.KVDim())+kvcache.HeadWords(types.V, c.KVDim())) * 2
	kvTokens := opts.KVTokens
	if kvTokens == 0 && opts.KVBytes > 0 {
		per := perPosition
		if opts.KVBytes/per > 1<<26 {
			return fmt.Errorf("engine: a KV cache of %d bytes is over the limit of %d positions", opts.KVBytes, 1<<26)
		}
		kvTokens = int(opts.KVBytes / per)
		if kvTokens < e.ctxLen {
			return &KVTooSmallError{Positions: kvTokens, CtxLen: e.ctxLen, BytesPerPosition: per}
		}
	}
	if c.Embedding() {
		// An embedding request leaves when its prompt is evaluated: many
		// run together (each step fills its token budget with inputs),
		// and the cache holds a step's worth of them twice over, or two
		// whole sequences.
		opts.Parallel = max(opts.Parallel, embedParallel)
		if opts.StepTokens == 0 {
			opts.StepTokens = embedStepTokens
		}
		if kvTokens == 0 {
			kvTokens = 2 * kvcache.BlocksFor(max(e.ctxLen, opts.StepTokens)) * kvcache.BlockSize
		}
	}
	if kvTokens == 0 {
		// Every sequence whole, in whole blocks: a sequence of ctxLen
		// positions takes BlocksFor(ctxLen) blocks, so Parallel of them
		// never preempt one another.
		kvTokens = kvcache.BlocksFor(e.ctxLen) * kvcache.BlockSize * max(opts.Parallel, 1)
	}
	if kvTokens > 1<<26 {
		return fmt.Errorf("engine: a KV cache of %d positions is over the limit of %d", kvTokens, 1<<26)
	}
	if kvTokens < e.ctxLen {
		// A sequence may grow to ctxLen positions; a pool that cannot hold
		// one would fail every request that reaches its size.
		return &KVTooSmallError{Positions: kvTokens, CtxLen: e.ctxLen, BytesPerPosition: perPosition}
	}
	blocks := kvcache.BlocksFor(kvTokens)
	kv, err := kvcache.NewTypedPool(c.NLayers, c.KVDim(), blocks, window(c, blocks, opts), types)
	if err != nil {
		return err
	}
	if c.Hybrid() {
		if err := kv.SetState(kvcache.State{Elems: c.StateElems, Slots: stateSlots(opts)}); err != nil {
			return err
		}
	}
	if err := e.loadLoRA(opts.LoRA); err != nil {
		e.closeLoRA()
		return err
	}
	e.kv = kv
	kv.Private = c.NonCausal // a bidirectional model's blocks fit only their own sequence
	e.runner = e.model.NewRunner(model.RunnerOptions{MaxCtx: e.ctxLen, Threads: opts.Threads, FlashAttn: opts.FlashAttn})
	if e.shiftKeep = -1; opts.ContextShift {
		if err := e.canShift(opts.Keep); err != nil {
			e.runner.Close()
			return err
		}
		e.shiftKeep = opts.Keep
	}
	e.runner.SetHooks(opts.Hooks.internal())
	if opts.DraftModel != "" {
		if err := e.loadDraft(opts.DraftModel, opts); err != nil {
			e.runner.Close()
			return err
		}
	}
	spec, err := opts.Spec.resolve(SpecParams{}, e.draft != nil)
	if err != nil {
		e.runner.Close()
		if e.draft != nil {
			e.draft.Close()
		}
		return err
	}
	e.spec = spec
	so := schedOptions{maxRunning: max(opts.Parallel, 1), stepTokens: opts.StepTokens, maxWaiting: opts.MaxWaiting, chunkLatency: opts.ChunkLatency}
	if so.stepTokens == 0 {
		so.stepTokens = defaultStepTokens
	}
	so.stepTokens = max(so.stepTokens, 2)
	// Running sequences decode at most maxRunning−1 tokens beside a
	// prefilling one, which needs 2 of the budget to move (plan keeps a
	// prompt's runs at two tokens or more): no prompt can starve.
	so.maxRunning = min(so.maxRunning, so.stepTokens-1)
	if so.maxWaiting == 0 {
		so.maxWaiting = 256
	}
	e.sched = newScheduler(e, so)
	return nil
}

// KVTooSmallError is Load's error for a KV cache (Options.KVTokens or
// KVBytes) smaller than one sequence of the context: the pool must hold at
// least one full context, or a request reaching that length could never
// finish.
type KVTooSmallError struct {
	Positions        int   // what the options give
	CtxLen           int   // the longest sequence
	BytesPerPosition int64 // K and V of every layer for one position
}

func (e *KVTooSmallError) Error() string {
	return fmt.Sprintf("engine: a KV cache of %d positions cannot hold one sequence of the %d-position context: it needs at least %d positions (%.1f MiB)",
		e.Positions, e.CtxLen, e.CtxLen, float64(int64(e.CtxLen)*e.BytesPerPosition)/(1<<20))
}

// Close ends every request (FinishCancelled, Err ErrClosed) and releases
// the runner and the mapped file; later calls do nothing. Nothing read
// from the engine may be used after it: the vocabulary's strings may live
// in the mapped file.
func (e *Engine) Close() error {
	var err error
	e.closed.Do(func() {
		e.sched.close()
		e.runner.Close()
		e.closeLoRA()
		if e.draft != nil {
			e.draft.Close()
		}
		for _, p := range e.parts {
			p.Close()
		}
		if e.folder != nil {
			e.folder.Close()
		}
		e.freeWeights()
		if e.file != nil {
			err = e.file.Close()
		}
	})
	return err
}

// Path is the file or folder the model was loaded from.
func (e *Engine) Path() string { return e.path }

// Vocab is the model's vocabulary (shared: read-only).
func (e *Engine) Vocab() *tokenizer.Vocab { return e.vocab }

// Metadata returns a string value of the model file's metadata (a GGUF
// key), false when absent or the model is not a GGUF file.
func (e *Engine) Metadata(key string) (string, bool) {
	if e.file == nil {
		return "", false
	}
	return e.file.String(key)
}

// CtxLen is the longest sequence the engine evaluates.
func (e *Engine) CtxLen() int { return e.ctxLen }

// Parallel is how many sequences the scheduler evaluates together
// (Options.Parallel).
func (e *Engine) Parallel() int { return e.sched.opts.maxRunning }

// defaultStepTokens is the tokens of one forward pass unless
// Options.StepTokens says.
const defaultStepTokens = 256

// An embedding model's defaults for Options.Parallel and StepTokens: up to
// 64 inputs per forward pass, of up to 512 tokens together (one ubatch).
const (
	embedParallel   = 64
	embedStepTokens = 512
)

// CacheInfo describes the KV cache.
type CacheInfo struct {
	DType         string // element type of K and V (f16, q8_0, …), or "K/V" (q8_0/f16) when they differ
	BytesPerToken int    // K and V of every layer that keeps every position, for one position
	// WindowBytes is what the sliding-window layers take per sequence when
	// the pool keeps only their window (0: they keep every position too,
	// counted in BytesPerToken): the window, a slack of 96 positions and a step's
	// tokens, in whole blocks.
	WindowBytes int64
	Window      int   // the sliding layers' window (0: none kept apart)
	Positions   int   // longest sequence
	BlockSize   int   // positions per block
	Blocks      int   // blocks in the pool (shared by all sequences)
	Used        int   // blocks held by sequences
	Cached      int   // blocks held by none, kept for prefix reuse
	Bytes       int64 // memory of the pool's K and V arrays and recurrent states
	// A hybrid model's recurrent layers: one slot holds a sequence's state
	// in every one of them (StateBytes); the pool has StateSlots, of which
	// StateFree are free or hold an evictable checkpoint, and
	// Checkpoints hold the state after a cached block (prefix reuse).
	StateBytes                         int64
	StateSlots, StateFree, Checkpoints int
}

// usage is the share of the cache's bytes held by sequences: their
// blocks' share of the K/V arrays, and their live states (a free slot or
// an evictable checkpoint is not held, as a cached block is not).
func (ci CacheInfo) usage() float64 {
	if ci.Blocks == 0 || ci.Bytes <= 0 {
		return 0
	}
	states := ci.StateBytes * int64(ci.StateSlots)
	kv := max(ci.Bytes-states, 0)
	held := float64(kv)*float64(ci.Used)/float64(ci.Blocks) + float64(ci.StateBytes)*float64(ci.StateSlots-ci.StateFree)
	return min(held/float64(kv+states), 1)
}

// Cache describes the KV cache and its current use.
func (e *Engine) Cache() CacheInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	ci := CacheInfo{DType: typeNames(e.kv.Types), BytesPerToken: e.kv.BytesPerToken(), Positions: e.ctxLen,
		WindowBytes: e.kv.WindowBytes(e.sched.opts.stepTokens), Window: e.kv.WindowSize(),
		BlockSize: kvcache.BlockSize, Blocks: e.kv.NBlocks, Used: e.kv.Used(), Cached: e.kv.Cached(), Bytes: e.kv.Bytes()}
	if e.kv.Recurrent() {
		ci.StateBytes, ci.Checkpoints = e.kv.StateBytes(), e.kv.Checkpoints()
		ci.StateSlots, ci.StateFree = e.kv.StateSlots()
	}
	return ci
}

// DropCached forgets every cached block no sequence holds (the prefix
// cache starts empty).
func (e *Engine) DropCached() {
	e.mu.Lock()
	e.kv.DropCached()
	e.mu.Unlock()
}

// SetHooks installs observers of the forward pass (nil removes them).
func (e *Engine) SetHooks(h *Hooks) {
	e.mu.Lock()
	e.runner.SetHooks(h.internal())
	e.mu.Unlock()
}

// Tokenize encodes text (BOS/EOS as the vocabulary asks when addSpecial).
func (e *Engine) Tokenize(text string, addSpecial, parseSpecial bool) []int32 {
	return e.vocab.Encode(text, addSpecial, parseSpecial)
}

// Logits evaluates ids from an empty cache and returns the logits after
// every position ([len(ids)][n_vocab]).
func (e *Engine) Logits(ctx context.Context, ids []int32) ([][]float32, error) {
	nv := e.model.Config().NVocab
	out := make([][]float32, len(ids))
	flat := make([]float32, len(ids)*nv)
	err := e.evaluate(ctx, ids, true, func(pos int, row []float32) {
		out[pos] = flat[pos*nv : (pos+1)*nv]
		copy(out[pos], row)
	})
	return out, err
}

// NextLogits evaluates ids from an empty cache and returns the logits
// after the last position only, computed as generation computes them:
// only that row goes through the LM head (a one-token product, which
// llama.cpp too runs on a different kernel than a many-row one, so the
// numbers may differ from Logits' last row in the last bits).
func (e *Engine) NextLogits(ctx context.Context, ids []int32) ([]float32, error) {
	out := make([]float32, e.model.Config().NVocab)
	err := e.evaluate(ctx, ids, false, func(_ int, row []float32) { copy(out, row) })
	return out, err
}

// evaluate runs ids through the scheduler as an EvalOnly request.
func (e *Engine) evaluate(ctx context.Context, ids []int32, all bool, rows func(int, []float32)) error {
	if len(ids) == 0 {
		return errors.New("engine: no tokens to evaluate")
	}
	st, err := e.Submit(ctx, Request{Tokens: ids, EvalOnly: true, Logits: rows, AllLogits: all})
	if err != nil {
		return err
	}
	r := st[0].Result()
	switch r.FinishReason {
	case FinishError:
		return r.Err
	case FinishCancelled:
		if r.Err != nil {
			return r.Err
		}
		return ctx.Err()
	}
	return nil
}

// Generate runs one request and streams its text to onText (its first
// choice's: for N > 1 use Submit). It ends at a stop, at MaxTokens, when
// the context is full, or when ctx is cancelled (not an error: the
// result's FinishReason says so); an error from onText cancels it and is
// returned.
func (e *Engine) Generate(ctx context.Context, req Request, onText func(string) error) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	streams, err := e.Submit(ctx, req)
	if err != nil {
		return Result{}, err
	}
	st := streams[0]
	for ev := range st.Events() {
		if ev.Text == "" {
			continue
		}
		if err := onText(ev.Text); err != nil {
			cancel()
			r := st.Result()
			return r, err
		}
	}
	r := st.Result()
	if r.FinishReason == FinishError || r.Err != nil {
		return r, r.Err
	}
	return r, nil
}

// stateSlots sizes a hybrid model's recurrent state slots: a live state
// for every running sequence and as many again being checkpointed in a
// step, two spare (forks), and StateCheckpoints (default 2·Parallel + 4)
// checkpoints for prefix reuse.
func stateSlots(opts Options) int {
	p := max(opts.Parallel, 1)
	ck := opts.StateCheckpoints
	if ck == 0 {
		ck = 2*p + 4
	}
	return 2*p + 2 + ck
}

// window sizes the sliding-window layers' own slots (kvcache.Window): a
// sliding layer keeps, per running sequence, its window, kvcache.Slack
// and the largest run the scheduler reserves at once (a prompt chunk of
// StepTokens), and half a sequence's more for prefix reuse; when that is
// not well below the pool's blocks, every layer keeps every position.
func window(c *model.Config, blocks int, opts Options) kvcache.Window {
	var noKV []bool // layers reading another layer's cache, and recurrent ones, store nothing
	if c.KVShared > 0 || c.Hybrid() {
		noKV = make([]bool, c.NLayers)
		for l := range noKV {
			noKV[l] = c.KVLayer(l) != l || c.Recurrent(l)
		}
	}
	if c.SlidingWindow <= 0 || c.NonCausal { // a bidirectional model's window looks ahead too: keep every position
		return kvcache.Window{NoKV: noKV}
	}
	w := kvcache.Window{Layers: make([]bool, c.NLayers), Size: c.SlidingWindow, NoKV: noKV}
	for l := range w.Layers {
		w.Layers[l] = c.Sliding(l)
	}
	step := opts.StepTokens
	if step == 0 {
		step = defaultStepTokens
	}
	per := kvcache.BlocksFor(c.SlidingWindow+kvcache.Slack+max(step, 2)) + 2
	w.Slots = max(opts.Parallel, 1)*per + per/2
	if w.Slots > blocks*3/4 {
		return kvcache.Window{NoKV: noKV}
	}
	return w
}
