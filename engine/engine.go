// Package engine is Loom's public Go API: load a model file, tokenize,
// evaluate logits and generate text with streaming.
package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/llama2c"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/llama" // registers llama, qwen2, qwen3
	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/tokenizer"
)

// Options configure Load.
type Options struct {
	Threads   int    // worker threads (0: 1)
	CtxLen    int    // KV cache positions (0: the model's context, at most 4096)
	Tokenizer string // llama2.c tokenizer.bin for a .bin checkpoint
}

// Engine is a loaded model with its vocabulary.
type Engine struct {
	Path  string
	File  *gguf.File // nil for llama2.c checkpoints
	Model model.Model
	Vocab *tokenizer.Vocab

	tensors []TensorInfo
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
	mopts := model.Options{Threads: opts.Threads, CtxLen: opts.CtxLen}
	if strings.EqualFold(filepath.Ext(path), ".bin") {
		return loadLlama2C(path, opts, mopts)
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	vocab, err := tokenizer.FromGGUF(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	m, err := model.LoadGGUF(f, mopts)
	if err != nil {
		f.Close()
		return nil, err
	}
	if vocab.Len() != m.Config().NVocab {
		m.Close()
		f.Close()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens, token_embd.weight %d rows", path, vocab.Len(), m.Config().NVocab)
	}
	e := &Engine{Path: path, File: f, Model: m, Vocab: vocab}
	for _, t := range f.Tensors {
		e.tensors = append(e.tensors, TensorInfo{t.Name, t.Type.String(), t.Dims, t.Size})
	}
	return e, nil
}

func loadLlama2C(path string, opts Options, mopts model.Options) (*Engine, error) {
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
	m, err := a.Build(cfg, src, mopts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	e := &Engine{Path: path, Model: m, Vocab: vocab}
	for _, name := range slices.Sorted(maps.Keys(src)) {
		t := src[name]
		e.tensors = append(e.tensors, TensorInfo{name, t.Type.String(), t.Dims, uint64(len(t.Data))})
	}
	return e, nil
}

// Close releases the model and the mapped file.
func (e *Engine) Close() error {
	e.Model.Close()
	if e.File != nil {
		return e.File.Close()
	}
	return nil
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
	nv := e.Model.Config().NVocab
	e.Model.Truncate(0)
	b := promptBatch(ids)
	b.Logits = make([]bool, len(ids))
	for i := range ids {
		b.Logits[i] = true
	}
	flat := make([]float32, len(ids)*nv)
	if _, err := e.Model.Forward(b, flat); err != nil {
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
	e.Model.Truncate(0)
	out := make([]float32, e.Model.Config().NVocab)
	if _, err := e.Model.Forward(promptBatch(ids), out); err != nil {
		return nil, err
	}
	return out, nil
}

// promptBatch holds ids at positions 0, 1, … (logits for the last only).
func promptBatch(ids []int32) *model.Batch {
	b := &model.Batch{Tokens: ids, Pos: make([]int32, len(ids))}
	for i := range ids {
		b.Pos[i] = int32(i)
	}
	return b
}

// Request is one generation.
type Request struct {
	Prompt    string  // tokenized with BOS per the vocabulary, specials not parsed
	Tokens    []int32 // used instead of Prompt when non-nil
	MaxTokens int     // tokens to generate (0: until EOG or the context is full)
	Sample    sample.Params
	IgnoreEOS bool // keep generating past end-of-generation tokens (llama.cpp's --ignore-eos)
	// OnToken, when set, sees each generated id before its text is emitted.
	OnToken func(id int32)
}

// Stats describes a finished generation.
type Stats struct {
	PromptTokens int
	Prefill      time.Duration
	Generated    int
	Decode       time.Duration
	StopReason   string // "eog", "length", "context", "cancelled"
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
	ctxLen := e.ctxLen()
	if len(ids) >= ctxLen {
		return st, fmt.Errorf("engine: prompt of %d tokens does not fit the context of %d", len(ids), ctxLen)
	}
	st.PromptTokens = len(ids)
	nv := e.Model.Config().NVocab
	logits := make([]float32, nv)
	e.Model.Truncate(0)

	t0 := time.Now()
	if _, err := e.Model.Forward(promptBatch(ids), logits); err != nil {
		return st, err
	}
	st.Prefill = time.Since(t0)

	history := append([]int32(nil), ids...)
	sampler := sample.New(req.Sample)
	stream := e.Vocab.NewStream(len(ids) == 1 && ids[0] == e.Vocab.BOS)
	one := &model.Batch{Tokens: make([]int32, 1), Pos: make([]int32, 1)}
	t1 := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			st.StopReason = "cancelled"
			break
		}
		tok := sampler.Sample(logits, history)
		if e.Vocab.IsEOG(tok) && !req.IgnoreEOS {
			st.StopReason = "eog"
			break
		}
		st.Generated++
		history = append(history, tok)
		if req.OnToken != nil {
			req.OnToken(tok)
		}
		if s := stream.Add(tok); s != "" {
			if err := onText(s); err != nil {
				return st, err
			}
		}
		if req.MaxTokens > 0 && st.Generated >= req.MaxTokens {
			st.StopReason = "length"
			break
		}
		if len(history) >= ctxLen {
			st.StopReason = "context"
			break
		}
		one.Tokens[0], one.Pos[0] = tok, int32(len(history)-1)
		if _, err := e.Model.Forward(one, logits); err != nil {
			return st, err
		}
	}
	if s := stream.Flush(); s != "" {
		if err := onText(s); err != nil {
			return st, err
		}
	}
	st.Decode = time.Since(t1)
	return st, nil
}

func (e *Engine) ctxLen() int {
	if c, ok := e.Model.(interface{ CtxLen() int }); ok {
		return c.CtxLen()
	}
	return e.Model.Config().CtxLen
}
