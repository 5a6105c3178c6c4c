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
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/llama2c"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families" // registers every family
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/tokenizer"
)

// Options configure Load.
type Options struct {
	Threads   int    // worker threads (0: 1)
	CtxLen    int    // longest sequence in positions (0: the model's context, at most 4096)
	Parallel  int    // sequences the KV pool is sized for when KVTokens is 0 (0: 1)
	KVTokens  int    // KV pool size in positions, shared by all sequences (0: CtxLen × Parallel)
	KVBytes   int64  // KV pool size in bytes, used when KVTokens is 0
	Tokenizer string // llama2.c tokenizer.bin for a .bin checkpoint
	// ChatTemplate overrides the file's chat template: a built-in name
	// (chatml, llama2, llama3, gemma, mistral, phi3) or a .jinja file.
	ChatTemplate string
	// Quantize, for a Hugging Face folder, quantizes its weights while
	// loading to a llama-quantize mix (Q8_0, Q4_K_M, …).
	Quantize string
	// Hooks, if set, observe every forward pass from the start (SetHooks
	// changes them later).
	Hooks *Hooks
}

// Engine is a loaded model with its vocabulary, a KV cache pool and the
// runner that evaluates batches. Its methods may be called from several
// goroutines: evaluation is serialized.
type Engine struct {
	Path  string
	File  *gguf.File // nil for llama2.c checkpoints
	model model.Model
	Vocab *tokenizer.Vocab

	tensors []TensorInfo
	ctxLen  int

	parts  []*gguf.File    // the other parts of a split model
	folder *hfmodel.Folder // a Hugging Face folder's mapped weights
	mu     sync.Mutex      // guards runner and kv
	runner model.Runner
	kv     *kvcache.Pool
	chat   *ChatTemplate

	gramOnce  sync.Once
	gramIndex *grammar.Index
	matchers  matcherPool
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
	m, err := model.LoadGGUFFrom(f, model.SplitSource(parts))
	if err != nil {
		closeAll()
		return nil, err
	}
	if vocab.Len() != m.Config().NVocab {
		closeAll()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens, token_embd.weight %d rows", path, vocab.Len(), m.Config().NVocab)
	}
	e := &Engine{Path: path, File: f, model: m, Vocab: vocab, parts: parts[1:]}
	for _, p := range parts {
		for _, t := range p.Tensors {
			e.tensors = append(e.tensors, TensorInfo{t.Name, t.Type.String(), t.Dims, t.Size})
		}
	}
	if err := e.start(opts); err != nil {
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
	m, err := a.Build(cfg, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	e := &Engine{Path: path, model: m, Vocab: vocab}
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
	case opts.CtxLen < 0 || opts.KVTokens < 0 || opts.KVBytes < 0 || opts.Parallel < 0 || opts.Threads < 0:
		return fmt.Errorf("engine: negative option (ctx %d, kv %d, parallel %d, threads %d)", opts.CtxLen, opts.KVTokens, opts.Parallel, opts.Threads)
	case opts.CtxLen > 1<<20:
		return fmt.Errorf("engine: context of %d tokens is over the limit of %d", opts.CtxLen, 1<<20)
	}
	e.ctxLen = opts.CtxLen
	if e.ctxLen == 0 {
		e.ctxLen = c.DefaultCtx()
	}
	if c.LearnedPos && e.ctxLen > c.CtxLen {
		return fmt.Errorf("engine: context of %d tokens is longer than the %d positions this model learned (GPT-2 has no position beyond its table)", e.ctxLen, c.CtxLen)
	}
	kvTokens := opts.KVTokens
	if kvTokens == 0 && opts.KVBytes > 0 {
		per := int64(2 * c.NLayers * c.KVDim() * 2)
		if opts.KVBytes/per > 1<<26 {
			return fmt.Errorf("engine: a KV cache of %d bytes is over the limit of %d positions", opts.KVBytes, 1<<26)
		}
		kvTokens = int(opts.KVBytes / per)
		if kvTokens < e.ctxLen {
			return &KVTooSmallError{Positions: kvTokens, CtxLen: e.ctxLen, BytesPerPosition: per}
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
		return &KVTooSmallError{Positions: kvTokens, CtxLen: e.ctxLen, BytesPerPosition: int64(2 * c.NLayers * c.KVDim() * 2)}
	}
	blocks := kvcache.BlocksFor(kvTokens)
	kv, err := kvcache.NewPool(c.NLayers, c.KVDim(), blocks)
	if err != nil {
		return err
	}
	if err := e.loadChatTemplate(opts.ChatTemplate); err != nil {
		return err
	}
	e.kv = kv
	e.runner = e.model.NewRunner(model.RunnerOptions{MaxCtx: e.ctxLen, Threads: opts.Threads})
	e.runner.SetHooks(opts.Hooks.internal())
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

// Close releases the runner and the mapped file.
func (e *Engine) Close() error {
	e.runner.Close()
	for _, p := range e.parts {
		p.Close()
	}
	if e.folder != nil {
		e.folder.Close()
	}
	if e.File != nil {
		return e.File.Close()
	}
	return nil
}

// CtxLen is the longest sequence the engine evaluates.
func (e *Engine) CtxLen() int { return e.ctxLen }

// CacheInfo describes the KV cache.
type CacheInfo struct {
	DType         string // element type of K and V
	BytesPerToken int    // K and V of every layer for one position
	Positions     int    // longest sequence
	BlockSize     int    // positions per block
	Blocks        int    // blocks in the pool (shared by all sequences)
	Used          int    // blocks held by sequences
	Cached        int    // blocks held by none, kept for prefix reuse
	Bytes         int64  // memory of the pool's K and V arrays
}

// Cache describes the KV cache and its current use.
func (e *Engine) Cache() CacheInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return CacheInfo{DType: "f16", BytesPerToken: e.kv.BytesPerToken(), Positions: e.ctxLen,
		BlockSize: kvcache.BlockSize, Blocks: e.kv.NBlocks, Used: e.kv.Used(), Cached: e.kv.Cached(), Bytes: e.kv.Bytes()}
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

// Session is one sequence evaluated on the engine: its KV cache lives in the
// engine's pool, so a session can grow a conversation turn by turn and
// reuse everything already computed.
type Session struct {
	e   *Engine
	seq *kvcache.Seq
	b   model.Batch
}

// NewSession starts an empty sequence.
func (e *Engine) NewSession() *Session {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := &Session{e: e, seq: e.kv.NewSeq()}
	s.b.Seqs = []*kvcache.Seq{s.seq}
	return s
}

// Len is the number of positions the session holds.
func (s *Session) Len() int { return s.seq.Len() }

// Tokens are the tokens the session holds (read-only).
func (s *Session) Tokens() []int32 { return s.seq.Tokens() }

// Truncate drops positions from n on.
func (s *Session) Truncate(n int) {
	s.e.mu.Lock()
	s.seq.Truncate(n)
	s.e.mu.Unlock()
}

// Close returns the session's cache blocks to the pool.
func (s *Session) Close() {
	s.e.mu.Lock()
	s.seq.Free()
	s.e.mu.Unlock()
}

// Eval appends ids to the session in one batch and writes logits into out:
// for every token ([len(ids)][n_vocab]) when all, else for the last one.
func (s *Session) Eval(ids []int32, all bool, out []float32) error {
	if len(ids) == 0 {
		return errors.New("engine: no tokens to evaluate")
	}
	if n := s.seq.Len() + len(ids); n > s.e.ctxLen {
		return fmt.Errorf("engine: %d positions exceed the context of %d", n, s.e.ctxLen)
	}
	b := &s.b
	b.Tokens = ids
	b.Pos = b.Pos[:0]
	for i := range ids {
		b.Pos = append(b.Pos, int32(s.seq.Len()+i))
	}
	b.Logits = nil
	if all {
		b.Logits = make([]bool, len(ids))
		for i := range b.Logits {
			b.Logits[i] = true
		}
	}
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	_, err := s.e.runner.Forward(b, out)
	return err
}

// Tokenize encodes text (BOS/EOS as the vocabulary asks when addSpecial).
func (e *Engine) Tokenize(text string, addSpecial, parseSpecial bool) []int32 {
	return e.Vocab.Encode(text, addSpecial, parseSpecial)
}

// Logits evaluates ids from an empty cache in one batch and returns the
// logits after every position ([len(ids)][n_vocab]).
func (e *Engine) Logits(ids []int32) ([][]float32, error) {
	if len(ids) == 0 {
		return nil, errors.New("engine: no tokens to evaluate")
	}
	nv := e.model.Config().NVocab
	s := e.NewSession()
	defer s.Close()
	flat := make([]float32, len(ids)*nv)
	if err := s.Eval(ids, true, flat); err != nil {
		return nil, err
	}
	out := make([][]float32, len(ids))
	for i := range out {
		out[i] = flat[i*nv : (i+1)*nv]
	}
	return out, nil
}

// NextLogits evaluates ids from an empty cache in one batch and returns the
// logits after the last position only, computed as generation computes
// them: only that row goes through the LM head (a one-token product, which
// llama.cpp too runs on a different kernel than a many-row one, so the
// numbers may differ from Logits' last row in the last bits).
func (e *Engine) NextLogits(ids []int32) ([]float32, error) {
	if len(ids) == 0 {
		return nil, errors.New("engine: no tokens to evaluate")
	}
	s := e.NewSession()
	defer s.Close()
	out := make([]float32, e.model.Config().NVocab)
	if err := s.Eval(ids, false, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Request is one generation.
type Request struct {
	Prompt    string  // tokenized with BOS per the vocabulary, specials not parsed
	Tokens    []int32 // used instead of Prompt when non-nil
	MaxTokens int     // tokens to generate (0: until EOG or the context is full)
	Sample    sample.Params
	IgnoreEOS bool     // keep generating past end-of-generation tokens (llama.cpp's --ignore-eos)
	Stop      []string // stop strings: generation ends before the first, which is not emitted
	// OnToken, when set, sees each generated id before its text is emitted.
	OnToken func(id int32)
	// Grammar, when set, constrains the output to its language; generation
	// ends when the grammar is complete and nothing else can follow.
	Grammar *grammar.Grammar
}

// Stats describes a finished generation.
type Stats struct {
	PromptTokens int
	Prefill      time.Duration
	Generated    int
	Decode       time.Duration
	StopReason   string // "eog", "grammar" (complete), "stop" (a stop string), "length", "context", "cancelled"
	// Masks holds the time of each grammar mask computed (one per token
	// at a temperature; only where the model's choice was refused when
	// greedy), nil without a grammar.
	Masks []time.Duration
}

// PrefillTokS is prompt tokens per second.
func (s Stats) PrefillTokS() float64 { return rate(s.PromptTokens, s.Prefill) }

// DecodeTokS is generated tokens per second (tokens after the first, which
// comes from the prefill's logits).
func (s Stats) DecodeTokS() float64 { return rate(s.Generated-1, s.Decode) }

func rate(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Generate runs the prompt and streams the continuation's text to onText.
// It stops at an end-of-generation token, after MaxTokens, when the context
// is full, or when ctx is cancelled (not an error: StopReason says so).
func (e *Engine) Generate(ctx context.Context, req Request, onText func(string) error) (Stats, error) {
	var st Stats
	ids := req.Tokens
	if ids == nil {
		ids = e.Tokenize(req.Prompt, true, false)
	}
	if len(ids) == 0 {
		if e.Vocab.BOS < 0 {
			return st, errors.New("engine: empty prompt and the vocabulary has no BOS token")
		}
		ids = []int32{e.Vocab.BOS}
	}
	ctxLen := e.ctxLen
	if len(ids) >= ctxLen {
		return st, fmt.Errorf("engine: prompt of %d tokens does not fit the context of %d", len(ids), ctxLen)
	}
	st.PromptTokens = len(ids)
	nv := e.model.Config().NVocab
	logits := make([]float32, nv)
	sess := e.NewSession()
	defer sess.Close()

	t0 := time.Now()
	if err := sess.Eval(ids, false, logits); err != nil {
		return st, err
	}
	st.Prefill = time.Since(t0)

	err := e.decode(ctx, sess, logits, ids, req, onText, &st)
	return st, err
}

// decode samples from logits (the session's next-token logits), then
// generates token by token in the session until a stop; history is the
// sequence so far.
func (e *Engine) decode(ctx context.Context, sess *Session, logits []float32, history []int32, req Request, onText func(string) error, st *Stats) error {
	history = slices.Clone(history)
	sampler := sample.New(req.Sample)
	stream := e.Vocab.NewStream(len(history) == 1 && history[0] == e.Vocab.BOS)
	stop := stopFilter{stops: req.Stop}
	one := make([]int32, 1)
	cons := e.newConstraint(req.Grammar)
	defer func() {
		if cons != nil {
			st.Masks = cons.masks
			cons.release()
		}
	}()
	t1 := time.Now()
	defer func() { st.Decode = time.Since(t1) }()
	for {
		if err := ctx.Err(); err != nil {
			st.StopReason = "cancelled"
			break
		}
		var tok int32
		if cons != nil {
			var err error
			if tok, err = cons.sample(sampler, logits, history); err != nil {
				return err
			}
		} else {
			tok = sampler.Sample(logits, history)
		}
		if e.Vocab.IsEOG(tok) && (!req.IgnoreEOS || cons != nil) {
			st.StopReason = "eog"
			break
		}
		if cons != nil {
			if err := cons.accept(tok); err != nil {
				return err
			}
		}
		st.Generated++
		history = append(history, tok)
		if req.OnToken != nil {
			req.OnToken(tok)
		}
		text, stopped := stop.add(stream.Add(tok))
		if text != "" {
			if err := onText(text); err != nil {
				return err
			}
		}
		if stopped {
			st.StopReason = "stop"
			return nil
		}
		if cons != nil && cons.final() {
			st.StopReason = "grammar"
			break
		}
		if req.MaxTokens > 0 && st.Generated >= req.MaxTokens {
			st.StopReason = "length"
			break
		}
		if len(history) >= e.ctxLen {
			st.StopReason = "context"
			break
		}
		one[0] = tok
		if err := sess.Eval(one, false, logits); err != nil {
			return err
		}
	}
	t, _ := stop.add(stream.Flush())
	if t += stop.flush(); t != "" {
		return onText(t)
	}
	return nil
}
