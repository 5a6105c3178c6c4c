package engine

import (
	"slices"
	"time"

	"github.com/loom-inference/loom/sample"
	"github.com/loom-inference/loom/tokenizer"
)

// generation is one sequence's state between forward passes, the only
// place the rules of generating live: the sampler chain (bias, grammar,
// penalties, cut-offs, draw), log-probabilities, the detokenizer and its
// stop filter, and the limits that end it. The scheduler feeds it the
// logits row after the sequence's last token and delivers what it returns.
type generation struct {
	req     *Request // shared by a request's choices; read-only
	vocab   *tokenizer.Vocab
	ctxLen  int
	shift   bool // a full context shifts (the scheduler's shiftContext) instead of ending
	sampler *sample.Sampler
	cons    *constraint // nil without a grammar; also sampler.C
	text    *tokenizer.Stream
	stop    stopFilter
	tokens  []int32 // prompt + generated
	nPrompt int
	raw     []float32 // the logits before the chain, when Logprobs asks for the chosen token's
	res     Result
	think   *thinkBudget // nil without Request.ReasoningBudget
}

// thinkBudget is a reasoning budget's state (ReasoningBudget).
type thinkBudget struct {
	b      *ReasoningBudget
	inside bool    // in a thinking block
	done   bool    // the block closed: nothing more to count
	count  int     // tokens thought in it
	force  []int32 // what is still forced
}

// advance notes that tokens (prompt and generated so far) end with a new
// token, and says what to force next.
func (t *thinkBudget) advance(tokens []int32, generated bool) {
	switch {
	case t.done:
	case !t.inside:
		t.inside = hasSuffix(tokens, t.b.Start)
	case hasSuffix(tokens, t.b.End):
		t.inside, t.done, t.force = false, true, nil
	case generated:
		t.count++
	}
	if t.inside && t.force == nil && t.count >= t.b.Tokens {
		t.force = append(append([]int32{}, t.b.Message...), t.b.End...)
	}
}

func hasSuffix(s, suf []int32) bool {
	return len(suf) > 0 && len(s) >= len(suf) && slices.Equal(s[len(s)-len(suf):], suf)
}

// finish is why a generation ended.
type finish struct {
	reason, detail string
	flush          bool // release the text held back (all but a stop string's end)
}

func newGeneration(e *Engine, req *Request, tokens []int32, choice int) *generation {
	p := req.Sample
	if choice > 0 {
		p.Seed += uint64(choice)
	}
	g := &generation{req: req, vocab: e.vocab, ctxLen: e.ctxLen, shift: e.shiftKeep >= 0, sampler: sample.New(p),
		tokens: tokens, nPrompt: len(tokens),
		text: e.vocab.NewStream(len(tokens) == 1 && tokens[0] == e.vocab.BOS),
		stop: stopFilter{stops: req.Stop}, cons: e.newConstraint(req.Grammar)}
	if g.cons != nil {
		g.sampler.C = g.cons
	}
	if b := req.ReasoningBudget; b != nil && len(b.Start) > 0 && len(b.End) > 0 {
		g.think = &thinkBudget{b: b}
		g.think.advance(tokens, false) // a prompt that opens the block
	}
	g.res.PromptTokens = len(tokens)
	return g
}

// next chooses the token after g.tokens from lg, the logits row after the
// last one (which the chain changes), and returns the event to deliver
// (ev.ID < 0: none) and, when the generation has ended, why.
func (g *generation) next(lg []float32) (ev TokenEvent, fin *finish, err error) {
	ev.ID = -1
	req := g.req
	var lse float64
	if req.Logprobs || req.TopLogprobs > 0 {
		lse = sample.LogSumExp(lg)
		if req.TopLogprobs > 0 {
			for _, t := range sample.TopK(lg, req.TopLogprobs) {
				ev.Top = append(ev.Top, TokenLogprob{t.ID, float32(float64(t.Logit) - lse)})
			}
		}
		if req.Logprobs {
			g.raw = append(g.raw[:0], lg...)
		}
	}
	var tok int32
	if t := g.think; t != nil && len(t.force) > 0 { // the reasoning budget is spent: close the block
		tok, t.force = t.force[0], t.force[1:]
	} else if tok, err = g.sampler.Next(lg, g.tokens); err != nil {
		return ev, nil, err
	}
	if g.vocab.IsEOG(tok) && (!req.IgnoreEOS || g.cons != nil) {
		return ev, &finish{FinishStop, DetailEOG, true}, nil
	}
	if g.cons != nil {
		if err := g.cons.accept(tok); err != nil {
			return ev, nil, err
		}
	}
	ev.ID = tok
	if req.Logprobs {
		ev.Logprob = float32(float64(g.raw[tok]) - lse)
	}
	g.tokens = append(g.tokens, tok)
	g.res.Generated++
	if g.think != nil {
		g.think.advance(g.tokens, true)
	}
	text, stopped := g.stop.add(g.text.Add(tok))
	ev.Text, ev.At = text, time.Now()
	switch {
	case stopped:
		return ev, &finish{FinishStop, DetailStopString, false}, nil
	case g.cons != nil && g.cons.final():
		return ev, &finish{FinishStop, DetailGrammar, true}, nil
	case req.MaxTokens > 0 && g.res.Generated >= req.MaxTokens:
		return ev, &finish{FinishLength, DetailMaxTokens, true}, nil
	case len(g.tokens) >= g.ctxLen && !g.shift:
		return ev, &finish{FinishLength, DetailContext, true}, nil
	}
	return ev, nil, nil
}

// flush is the text held back at the end (by the detokenizer or the stop
// filter).
func (g *generation) flush() string {
	t, _ := g.stop.add(g.text.Flush())
	return t + g.stop.flush()
}

// release returns the grammar matcher to its pool and keeps its timings.
func (g *generation) release() {
	if g.cons != nil {
		g.res.Masks = g.cons.masks
		g.cons.release()
		g.cons, g.sampler.C = nil, nil
	}
}
