package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/loom-inference/loom/internal/model"
)

// Pooling kinds (ModelInfo.Pooling, Options.Pooling): how an embedding
// model turns its per-token outputs into one vector, llama.cpp's
// --pooling.
const (
	PoolingNone = "none" // no pooling: one vector per token
	PoolingMean = "mean" // the mean of every token's vector
	PoolingCLS  = "cls"  // the first token's vector
	PoolingLast = "last" // the last token's vector
	PoolingRank = "rank" // a classification head's scores over the first (or last) token: a reranker
)

var poolingNames = map[model.Pooling]string{model.PoolNone: PoolingNone, model.PoolMean: PoolingMean,
	model.PoolCLS: PoolingCLS, model.PoolLast: PoolingLast, model.PoolRank: PoolingRank}

// ErrNotEmbedding is the error of Embed and Rerank on a model that
// generates text (no pooling in its metadata and none asked for).
var ErrNotEmbedding = errors.New("engine: this is a text-generation model, not an embedding or reranking model")

// ErrNotReranker is Rerank's error on an embedding model without a
// ranking head.
var ErrNotReranker = errors.New("engine: this embedding model has no ranking head (pooling rank): it cannot rerank")

// ErrNotGenerative is Submit's error for a generation request to an
// embedding or reranking model (no LM head, or bidirectional attention).
var ErrNotGenerative = errors.New("engine: this is an embedding model: it does not generate text (use embeddings)")

// Norm is how Embed normalizes each vector (llama.cpp's
// --embd-normalize); the zero value is Euclidean, OpenAI's unit vectors.
type Norm int8

const (
	NormL2      Norm = iota // divided by its Euclidean length (llama.cpp 2)
	NormNone                // as the model computes it (llama.cpp -1)
	NormMaxAbs              // scaled so the largest magnitude is 32760 (llama.cpp 0, for int16)
	NormTaxicab             // divided by the sum of magnitudes (llama.cpp 1)
)

// EmbedOptions configure Embed.
type EmbedOptions struct {
	Norm Norm
	// Truncate cuts an input longer than the context to its first
	// positions (keeping the vocabulary's end token, if it appends one);
	// otherwise such an input is an error.
	Truncate bool
	// Dimensions, when positive, keeps the vector's first Dimensions
	// values (Matryoshka embeddings), before normalization. Above the
	// model's width it is an error.
	Dimensions int
}

// Embedding is one input's result.
type Embedding struct {
	Vector    []float32   // the pooled vector (nil with pooling none)
	PerToken  [][]float32 // pooling none: one vector per token, normalized each
	Tokens    int         // tokens evaluated
	Truncated bool        // the input was cut to fit (EmbedOptions.Truncate)
}

// Pooling is the engine's pooling ("" for a text-generation model).
func (e *Engine) Pooling() string {
	c := e.model.Config()
	if !c.Embedding() {
		return ""
	}
	return poolingNames[c.Pooling]
}

// EmbedDim is the width of one embedding (the rank head's outputs for a
// reranker; 0 for a text-generation model).
func (e *Engine) EmbedDim() int {
	c := e.model.Config()
	if !c.Embedding() {
		return 0
	}
	return c.PooledDim()
}

// EmbedTexts tokenizes each text as llama.cpp's server does (EmbedTokens)
// and embeds it.
func (e *Engine) EmbedTexts(ctx context.Context, texts []string, opts EmbedOptions) ([]Embedding, error) {
	inputs := make([][]int32, len(texts))
	for i, t := range texts {
		inputs[i] = e.EmbedTokens(t)
	}
	return e.Embed(ctx, inputs, opts)
}

// EmbedTokens is the evaluated input of one text to embed, as llama.cpp's
// server tokenizes it: the vocabulary's BOS/CLS and EOS/SEP added, and
// special-token text ("[SEP]", "<|endoftext|>") read as those tokens.
func (e *Engine) EmbedTokens(text string) []int32 { return e.vocab.Encode(text, true, true) }

// Embed computes one embedding per input (token ids as they should be
// evaluated, special tokens included). Every input is one request to the
// scheduler: they run together, and with whatever else the engine runs,
// many inputs per forward pass under the step's token budget. The result
// is in input order; the first failure is returned (the others are
// cancelled).
func (e *Engine) Embed(ctx context.Context, inputs [][]int32, opts EmbedOptions) ([]Embedding, error) {
	c := e.model.Config()
	if !c.Embedding() {
		return nil, ErrNotEmbedding
	}
	if len(inputs) == 0 {
		return nil, errors.New("engine: no inputs to embed")
	}
	width := c.PooledDim()
	if opts.Dimensions < 0 || opts.Dimensions > width {
		return nil, fmt.Errorf("engine: %d dimensions asked of a model whose embeddings have %d", opts.Dimensions, width)
	}
	if opts.Norm < NormL2 || opts.Norm > NormTaxicab {
		return nil, fmt.Errorf("engine: unknown normalization %d", opts.Norm)
	}
	out := make([]Embedding, len(inputs))
	reqs := make([]Request, len(inputs))
	for i, in := range inputs {
		toks, cut, err := e.fitInput(in, opts.Truncate)
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		out[i].Tokens, out[i].Truncated = len(toks), cut
		reqs[i] = Request{Tokens: toks, EvalOnly: true}
		o := &out[i]
		reqs[i].Embed = func(vecs [][]float32) {
			if c.Pooling == model.PoolNone {
				o.PerToken = vecs
				for _, v := range vecs {
					normalize(v, opts.Norm)
				}
				return
			}
			v := vecs[0]
			if opts.Dimensions > 0 {
				v = v[:opts.Dimensions:opts.Dimensions]
			}
			normalize(v, opts.Norm)
			o.Vector = v
		}
	}
	if err := e.runAll(ctx, reqs); err != nil {
		return nil, err
	}
	return out, nil
}

// fitInput checks one input against the context, cutting it when asked.
func (e *Engine) fitInput(in []int32, truncate bool) ([]int32, bool, error) {
	if len(in) == 0 {
		return nil, false, errors.New("engine: empty input (no tokens)")
	}
	if len(in) <= e.ctxLen {
		return in, false, nil
	}
	if !truncate {
		return nil, false, fmt.Errorf("engine: input of %d tokens is longer than the context of %d (ask to truncate it)", len(in), e.ctxLen)
	}
	cut := slices.Clone(in[:e.ctxLen])
	if v := e.vocab; v.AddEOS && v.EOS >= 0 && in[len(in)-1] == v.EOS {
		cut[len(cut)-1] = v.EOS
	}
	return cut, true, nil
}

// runAll submits every request, waits for all of them, and returns the
// first error (cancelling the rest).
func (e *Engine) runAll(ctx context.Context, reqs []Request) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var streams []*Stream
	for _, r := range reqs {
		st, err := e.submitWait(ctx, r)
		if err != nil {
			cancel()
			for _, s := range streams {
				s.Result()
			}
			return err
		}
		streams = append(streams, st[0])
	}
	var first error
	for _, s := range streams {
		r := s.Result()
		var err error
		switch r.FinishReason {
		case FinishError:
			err = r.Err
		case FinishCancelled:
			err = r.Err
			if err == nil {
				err = ctx.Err()
			}
		}
		if err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// submitWait is Submit that, when the waiting queue is full, waits for a
// place instead of failing: one call may bring more inputs than the queue
// holds.
func (e *Engine) submitWait(ctx context.Context, r Request) ([]*Stream, error) {
	for {
		st, err := e.Submit(ctx, r)
		if !errors.Is(err, ErrOverloaded) {
			return st, err
		}
		if err := e.sched.waitRoom(ctx); err != nil {
			return nil, err
		}
	}
}

// normalize scales v in place as n says.
func normalize(v []float32, n Norm) {
	var s float64
	switch n {
	case NormNone:
		return
	case NormMaxAbs:
		for _, x := range v {
			s = max(s, math.Abs(float64(x)))
		}
		s /= 32760
	case NormTaxicab:
		for _, x := range v {
			s += math.Abs(float64(x))
		}
	default:
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		s = math.Sqrt(s)
	}
	if s > 0 {
		inv := float32(1 / s)
		for i := range v {
			v[i] *= inv
		}
	}
}

// RerankOptions configure Rerank.
type RerankOptions struct {
	// Truncate cuts a document so the pair fits the context; otherwise a
	// pair longer than the context is an error.
	Truncate bool
}

// Ranked is one document's score.
type Ranked struct {
	Index  int     // the document's place in the request
	Score  float32 // the ranking head's first output (llama.cpp's relevance score)
	Tokens int     // tokens evaluated for the (query, document) pair
}

// Rerank scores each document's relevance to query with a reranking
// model (pooling rank): one request per (query, document) pair, formatted
// as llama.cpp's server formats it (RerankTokens), all run together
// through the scheduler. Scores are in document order.
func (e *Engine) Rerank(ctx context.Context, query string, docs []string, opts RerankOptions) ([]Ranked, error) {
	c := e.model.Config()
	switch {
	case !c.Embedding():
		return nil, ErrNotEmbedding
	case c.Pooling != model.PoolRank:
		return nil, ErrNotReranker
	case len(docs) == 0:
		return nil, errors.New("engine: no documents to rerank")
	}
	out := make([]Ranked, len(docs))
	reqs := make([]Request, len(docs))
	for i, d := range docs {
		toks, err := e.fitPair(query, d, opts.Truncate)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out[i] = Ranked{Index: i, Tokens: len(toks)}
		o := &out[i]
		reqs[i] = Request{Tokens: toks, EvalOnly: true, Embed: func(v [][]float32) { o.Score = v[0][0] }}
	}
	if err := e.runAll(ctx, reqs); err != nil {
		return nil, err
	}
	return out, nil
}

// fitPair is the pair's input, the document cut (when truncate) until it
// fits the context: its tokens cut by the excess, detokenized and the
// pair formatted again (the template's text tokenizes as a whole).
func (e *Engine) fitPair(query, doc string, truncate bool) ([]int32, error) {
	toks := e.RerankTokens(query, doc)
	if len(toks) <= e.ctxLen {
		return toks, nil
	}
	if !truncate {
		return nil, fmt.Errorf("engine: query and document take %d tokens, longer than the context of %d (ask to truncate)", len(toks), e.ctxLen)
	}
	dt := e.vocab.Encode(doc, false, false)
	keep := len(dt)
	for range 16 {
		keep -= len(toks) - e.ctxLen
		if keep <= 0 {
			break
		}
		if toks = e.RerankTokens(query, e.vocab.Decode(dt[:keep])); len(toks) <= e.ctxLen {
			return toks, nil
		}
	}
	return nil, fmt.Errorf("engine: the query alone does not fit the context of %d tokens", e.ctxLen)
}

// RerankTokens is the evaluated input of a (query, document) pair, as
// llama.cpp's server builds it (format_prompt_rerank): the model's rerank
// template (tokenizer.chat_template.rerank, "{query}" and "{document}"
// replaced, special tokens parsed, nothing added), or else BOS, the
// query, EOS, SEP, the document, EOS — each special token where the
// vocabulary adds it.
func (e *Engine) RerankTokens(query, doc string) []int32 {
	if tmpl, ok := e.Metadata("tokenizer.chat_template.rerank"); ok {
		p := strings.ReplaceAll(tmpl, "{query}", query)
		p = strings.ReplaceAll(p, "{document}", doc)
		return e.vocab.Encode(p, false, true)
	}
	return e.rerankPair(query, e.vocab.Encode(doc, false, false))
}

// rerankPair joins the query's tokens and a document's as
// format_prompt_rerank does without a template.
func (e *Engine) rerankPair(query string, doc []int32) []int32 {
	v := e.vocab
	q := v.Encode(query, false, false)
	bos, eos, sep, addBOS, addEOS, addSEP := v.PairSpecials()
	var out []int32
	if addBOS && bos >= 0 {
		out = append(out, bos)
	}
	out = append(out, q...)
	if addEOS && eos >= 0 {
		out = append(out, eos)
	}
	if addSEP && sep >= 0 {
		out = append(out, sep)
	}
	out = append(out, doc...)
	if addEOS && eos >= 0 {
		out = append(out, eos)
	}
	return out
}
