package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/sample"
)

// Request is one generation (or one evaluation, with Logits and EvalOnly),
// whoever submits it: the server, the CLI, a library caller.
type Request struct {
	Prompt string  // tokenized with BOS per the vocabulary, specials not parsed
	Tokens []int32 // the prompt as it should be evaluated (BOS included); used instead of Prompt when non-nil

	MaxTokens int // tokens to generate (0: until a stop or the context is full)
	// Sample holds the whole sampler chain's settings, logit bias
	// included (-100 or less bans a token; log-probabilities stay the
	// model's).
	Sample    sample.Params
	Stop      []string // stop strings: generation ends before the first one, which is not emitted
	IgnoreEOS bool     // keep generating past end-of-generation tokens (llama.cpp's --ignore-eos); not under a grammar
	// Grammar, when set, constrains each choice to its language; a choice
	// ends when its grammar is complete and nothing can follow.
	Grammar *grammar.Grammar

	// ReasoningBudget, when set, bounds a thinking model's reasoning
	// (llama.cpp's --reasoning-budget).
	ReasoningBudget *ReasoningBudget

	// LoRA sets the adapters this request applies (nil: every loaded
	// adapter at its default scale; a list: exactly those, by ID).
	LoRA []LoRAScale

	// Spec configures speculative decoding (Mode "": the engine's,
	// Options.Spec). The output does not depend on it.
	Spec SpecParams

	Logprobs    bool // report each token's log-probability
	TopLogprobs int  // and this many of the most likely tokens
	N           int  // choices sampled from one prompt evaluation (0: 1); choice i>0 seeds with Seed+i

	// Sequence, when set, continues a sequence kept from an earlier
	// request (a conversation's previous turn): its cache is reused as far
	// as it agrees with the prompt, and it keeps the cache when this
	// request ends. One request at a time may use a Sequence.
	Sequence *Sequence

	// Logits, when set, receives logits rows as they are computed, in the
	// scheduler's goroutine (the row is valid during the call only): with
	// AllLogits the row after every prompt position, else the row after
	// the last one (the row the first token is chosen from, computed as
	// generation computes it: only that row goes through the LM head).
	// Such a request evaluates its whole prompt: no prefix is reused.
	Logits    func(pos int, row []float32)
	AllLogits bool
	// EvalOnly evaluates the prompt and ends (FinishReason "length",
	// Detail "eval"): nothing is generated.
	EvalOnly bool
	// Embed, for an embedding model (with EvalOnly), receives the
	// prompt's pooled output when it has been evaluated, in the
	// scheduler's goroutine: one vector (the embedding, or a reranker's
	// scores), or with pooling none one per position. The vectors are the
	// callee's.
	Embed func(vecs [][]float32)
}

// ReasoningBudget bounds a thinking block as llama.cpp's reasoning budget
// sampler does: once Start has opened it (in the prompt or the reply),
// after Tokens more tokens without End, Message then End are forced, one
// token per step; the answer follows as the model continues.
type ReasoningBudget struct {
	Start, End []int32 // the block's markers as tokens (<think>, </think>)
	Tokens     int     // tokens the block may hold (0: close it at once)
	Message    []int32 // forced before End when the budget is spent (llama.cpp's --reasoning-budget-message)
}

// Finish reasons (Result.FinishReason), OpenAI's, and their details.
const (
	FinishStop      = "stop"      // Detail: DetailEOG, DetailStopString or DetailGrammar
	FinishLength    = "length"    // Detail: DetailMaxTokens, DetailContext or DetailEval
	FinishCancelled = "cancelled" // the request's context ended
	FinishError     = "error"     // Result.Err says why

	DetailEOG        = "eog"         // an end-of-generation token
	DetailStopString = "stop_string" // a stop string (not emitted, nor what followed it)
	DetailGrammar    = "grammar"     // the grammar is complete and nothing can follow
	DetailMaxTokens  = "max_tokens"  // MaxTokens were generated
	DetailContext    = "context"     // the sequence filled the context
	DetailEval       = "eval"        // an EvalOnly request evaluated its prompt
)

// Result describes a finished request.
type Result struct {
	PromptTokens int           // prompt length
	CachedTokens int           // prompt positions reused (prefix cache or the Sequence)
	Computed     int           // prompt positions evaluated (recomputation after preemption included)
	Generated    int           // tokens generated
	TTFT         time.Duration // submit → first token
	Duration     time.Duration // submit → finish
	// Prefill is the wall time from admission to the first token (the
	// prompt's evaluation); Decode from the first token to the finish.
	// DecodeEval is the part of Decode spent in forward passes that
	// evaluated this sequence's tokens (not choosing them, nor waiting):
	// llama-bench's text-generation time.
	Prefill, Decode, DecodeEval time.Duration
	FinishReason                string // FinishStop, FinishLength, FinishCancelled or FinishError
	Detail                      string // what stopped it (Detail* constants)
	Preempted                   int    // times the request lost its cache to others and was recomputed
	ContextShifts               int    // times a full context dropped its oldest positions (Options.ContextShift)
	// Drafted and Accepted count speculative decoding's proposed tokens
	// and those taken (each taken token saved a forward pass).
	Drafted, Accepted int
	Err               error // why, when FinishReason is "error"
	// Masks holds the time of each grammar mask computed (one per token
	// at a temperature; only where the model's choice was refused when
	// greedy), nil without a grammar.
	Masks []time.Duration
}

// PrefillTokS is prompt tokens evaluated per second.
func (r Result) PrefillTokS() float64 { return rate(r.Computed, r.Prefill) }

// DecodeTokS is generated tokens per second (tokens after the first, which
// comes from the prompt's logits).
func (r Result) DecodeTokS() float64 { return rate(r.Generated-1, r.Decode) }

func rate(n int, d time.Duration) float64 {
	if n <= 0 || d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// validate checks what Submit can check before queuing; tokens is the
// prompt (req.Tokens, or req.Prompt tokenized).
func (r *Request) validate(tokens []int32, nVocab, ctxLen int) error {
	if len(tokens) == 0 {
		return errors.New("engine: empty prompt")
	}
	if len(tokens) >= ctxLen && !r.EvalOnly || len(tokens) > ctxLen {
		return fmt.Errorf("engine: prompt of %d tokens does not fit the context of %d", len(tokens), ctxLen)
	}
	for i, t := range tokens {
		if t < 0 || int(t) >= nVocab {
			return fmt.Errorf("engine: prompt token %d at index %d is outside the vocabulary (%d)", t, i, nVocab)
		}
	}
	if b := r.ReasoningBudget; b != nil {
		if b.Tokens < 0 || len(b.Start) == 0 || len(b.End) == 0 {
			return errors.New("engine: a reasoning budget needs its start and end markers and a budget of 0 or more tokens")
		}
		for _, t := range slices.Concat(b.Start, b.End, b.Message) {
			if t < 0 || int(t) >= nVocab {
				return fmt.Errorf("engine: reasoning budget token %d is outside the vocabulary (%d)", t, nVocab)
			}
		}
	}
	if r.MaxTokens < 0 || r.N < 0 || r.TopLogprobs < 0 {
		return errors.New("engine: negative max tokens, choices or top logprobs")
	}
	for id := range r.Sample.LogitBias {
		if id < 0 || int(id) >= nVocab {
			return fmt.Errorf("engine: logit bias for token %d outside the vocabulary (%d)", id, nVocab)
		}
	}
	if r.Sequence != nil && r.N > 1 {
		return errors.New("engine: a request continuing a Sequence has one choice")
	}
	if r.EvalOnly && r.N > 1 {
		return errors.New("engine: an evaluation (EvalOnly) has no choices")
	}
	if r.Embed != nil && (!r.EvalOnly || r.Logits != nil || r.Sequence != nil) {
		return errors.New("engine: an embedding request (Embed) is an evaluation (EvalOnly) without logits or a Sequence")
	}
	return nil
}

// validateKind checks the request against what the model does: an
// embedding model only embeds, a text-generation model never does.
func (r *Request) validateKind(embedding bool) error {
	switch {
	case embedding && r.Embed == nil:
		return ErrNotGenerative
	case !embedding && r.Embed != nil:
		return ErrNotEmbedding
	}
	return nil
}
