package engine

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/loom-inference/loom/grammar"
	"github.com/loom-inference/loom/tokenizer"
)

// Grammar-constrained sampling: before the sampler runs, every token whose
// bytes cannot continue the grammar from the current state gets -inf, so
// all samplers and penalties work on what is left; the chosen token then
// advances the grammar. End-of-generation tokens are allowed only where
// the grammar may end, and generation stops once nothing else can follow.

// ErrGrammarDeadEnd is returned when no token of the vocabulary can
// continue the grammar (the grammar needs text no token spells): by
// Submit when no token can begin it, as a result's Err when the grammar
// reaches such a state later. Either way the request is at fault.
var ErrGrammarDeadEnd = errors.New("engine: no token of the vocabulary can continue the grammar (it needs a character this vocabulary cannot spell)")

// grammarIndex returns the vocabulary's byte trie for grammar masks,
// built on first use.
func (e *Engine) grammarIndex() *grammar.Index {
	e.gramOnce.Do(func() { e.gramIndex = newGrammarIndex(e.vocab) })
	return e.gramIndex
}

// newGrammarIndex indexes v's tokens by the text they stand for. Control
// tokens (other than end-of-generation) are never produced under a
// grammar.
func newGrammarIndex(v *tokenizer.Vocab) *grammar.Index {
	pieces := make([][]byte, len(v.Tokens))
	var eog []int32
	for id := range v.Tokens {
		if v.IsEOG(int32(id)) {
			eog = append(eog, int32(id))
			continue
		}
		switch v.Types[id] {
		case tokenizer.Control, tokenizer.Unknown, tokenizer.Unused:
			continue
		}
		pieces[id] = v.Piece(int32(id), false)
	}
	return grammar.NewIndex(pieces, eog)
}

// matcherPool keeps finished matchers per grammar text: a matcher reused
// for the same grammar keeps its automaton and masks, so repeated
// requests with one schema skip the cold walks. A matcher that failed on
// a limit, or whose caches are large, is not kept, and the pool's
// estimated bytes are bounded (least recently returned grammars go
// first).
type matcherPool struct {
	mu    sync.Mutex
	free  map[string][]pooledMatcher
	order []string // least recently returned first
	bytes int      // estimated bytes held by the pooled matchers
}

type pooledMatcher struct {
	m     *grammar.Matcher
	bytes int
}

const (
	poolGrammars, poolPerGrammar = 32, 4
	// poolMatcherBytes: a matcher whose caches are estimated above this
	// is dropped rather than pooled (grammars keep tables up to an eighth
	// of MaxMemory, 32 MiB by default, between calls).
	poolMatcherBytes = 16 << 20
	poolBytes        = 128 << 20 // estimated bytes of all pooled matchers
)

func (p *matcherPool) get(g *grammar.Grammar) *grammar.Matcher {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.free[g.Text()]; len(l) > 0 {
		pm := l[len(l)-1]
		l[len(l)-1] = pooledMatcher{}
		p.free[g.Text()] = l[:len(l)-1]
		p.bytes -= pm.bytes
		pm.m.Reset()
		return pm.m
	}
	return g.NewMatcher()
}

// put returns m to the pool, unless
// it hit a limit (Err) or holds more than poolMatcherBytes.
func (p *matcherPool) put(m *grammar.Matcher) {
	if m == nil || m.Err() != nil {
		return
	}
	b := m.Mem()
	if b > poolMatcherBytes {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.free == nil {
		p.free = map[string][]pooledMatcher{}
	}
	k := m.Grammar().Text()
	if len(p.free[k]) >= poolPerGrammar {
		return
	}
	p.free[k] = append(p.free[k], pooledMatcher{m, b})
	p.bytes += b
	for i, o := range p.order {
		if o == k {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
	p.order = append(p.order, k)
	for len(p.order) > 0 && (len(p.order) > poolGrammars || p.bytes > poolBytes) {
		for _, pm := range p.free[p.order[0]] {
			p.bytes -= pm.bytes
		}
		delete(p.free, p.order[0])
		p.order = p.order[1:]
	}
}

// pooled reports the matchers and estimated bytes the pool holds.
func (p *matcherPool) pooled() (matchers, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.free {
		matchers += len(l)
	}
	return matchers, p.bytes
}

// constraint follows one sequence through a grammar.
type constraint struct {
	e     *Engine
	ix    *grammar.Index
	m     *grammar.Matcher
	masks []time.Duration // time of each mask computed
}

func (e *Engine) newConstraint(g *grammar.Grammar) *constraint {
	if g == nil {
		return nil
	}
	return &constraint{e: e, ix: e.grammarIndex(), m: e.matchers.get(g)}
}

// apply sets the logits of tokens the grammar refuses to -inf.
func (c *constraint) apply(logits []float32) error {
	t0 := time.Now()
	defer func() { c.masks = append(c.masks, time.Since(t0)) }()
	mask := c.m.Mask(c.ix)
	ninf := float32(math.Inf(-1))
	any := false
	for w := 0; w*64 < len(logits); w++ {
		var bits uint64
		if w < len(mask) {
			bits = mask[w]
		}
		if bits != 0 {
			any = true
		}
		if bits == ^uint64(0) {
			continue
		}
		end := min(w*64+64, len(logits))
		for i := w * 64; i < end; i++ {
			if bits&(1<<(i&63)) == 0 {
				logits[i] = ninf
			}
		}
	}
	if !any {
		return c.deadEnd()
	}
	return nil
}

// Allows reports whether the grammar accepts tok next (sample.Constraint).
func (c *constraint) Allows(tok int32) bool { return c.m.Allows(c.ix, tok) }

// Mask sets the logits of refused tokens to -Inf (sample.Constraint).
func (c *constraint) Mask(logits []float32) error { return c.apply(logits) }

// check reports whether some token (end of generation included, where
// the grammar may end) can come next: nil, or ErrGrammarDeadEnd, or the
// grammar's limit error (errors.Is grammar.ErrLimit) when the mask ran out
// of its budget.
func (c *constraint) check() error {
	for _, w := range c.m.Mask(c.ix) {
		if w != 0 {
			return nil
		}
	}
	return c.deadEnd()
}

// deadEnd is why the mask is empty.
func (c *constraint) deadEnd() error {
	if err := c.m.Err(); err != nil {
		return err
	}
	return ErrGrammarDeadEnd
}

// accept advances over the chosen token.
func (c *constraint) accept(tok int32) error { return c.m.AcceptToken(c.ix, tok) }

// final reports whether only the end can follow.
func (c *constraint) final() bool { return c.m.Final() }

func (c *constraint) release() {
	if c != nil {
		c.e.matchers.put(c.m)
	}
}
