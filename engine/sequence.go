package engine

import (
	"slices"
	"sync/atomic"

	"github.com/loom-inference/loom/internal/kvcache"
)

// Sequence is a KV cache kept between requests: a conversation's turns.
// A request naming it (Request.Sequence) reuses the cache as far as it
// agrees with the request's prompt and leaves its own there when it ends,
// so each turn evaluates only what is new. The cache is pinned: the pool
// does not evict it for other requests while the Sequence holds it.
type Sequence struct {
	e    *Engine
	seq  *kvcache.Seq // nil: nothing kept (or a request is using it)
	busy atomic.Bool  // a request is using it
}

// NewSequence makes an empty Sequence.
func (e *Engine) NewSequence() *Sequence { return &Sequence{e: e} }

// Tokens are the positions the Sequence's cache holds (a copy; nil while a
// request uses it).
func (q *Sequence) Tokens() []int32 {
	q.e.mu.Lock()
	defer q.e.mu.Unlock()
	if q.seq == nil {
		return nil
	}
	return slices.Clone(q.seq.Tokens())
}

// Reset forgets the cache the Sequence holds (a request using it at the
// time keeps its own, and leaves that in the Sequence when it ends).
func (q *Sequence) Reset() {
	q.e.mu.Lock()
	defer q.e.mu.Unlock()
	if q.seq != nil {
		q.seq.Free()
		q.seq = nil
	}
}

// Close frees the cache; the Sequence may still be used again.
func (q *Sequence) Close() { q.Reset() }
