// Package kvcache stores the keys and values of past positions, per layer,
// in F16 (llama.cpp's default cache type, which the references use).
package kvcache

import (
	"fmt"

	"github.com/loom-inference/loom/internal/quant"
)

// Cache is a single sequence's contiguous cache. K is stored transposed,
// position-minor ([KVDim][CtxLen] per layer: for each KV head and
// dimension, all positions in a row), so the scores of one query against
// many positions are contiguous vector loads; V is position-major
// ([CtxLen][KVDim]), the order the weighted sum reads it.
type Cache struct {
	NLayers, KVDim, CtxLen int
	K, V                   [][]uint16 // [layer][KVDim·CtxLen] and [layer][CtxLen·KVDim], F16 bits
	Len                    int        // positions filled
}

// New allocates a cache for ctxLen positions.
func New(nLayers, kvDim, ctxLen int) *Cache {
	c := &Cache{NLayers: nLayers, KVDim: kvDim, CtxLen: ctxLen}
	for range nLayers {
		c.K = append(c.K, make([]uint16, ctxLen*kvDim))
		c.V = append(c.V, make([]uint16, ctxLen*kvDim))
	}
	return c
}

// BytesPerToken is the cache memory one position takes over all layers.
func (c *Cache) BytesPerToken() int { return 2 * c.NLayers * c.KVDim * 2 }

// Check returns an error if positions [start, start+n) do not fit.
func (c *Cache) Check(start, n int) error {
	if start < 0 || n < 0 || start+n > c.CtxLen {
		return fmt.Errorf("kvcache: positions %d..%d exceed the context of %d tokens", start, start+n-1, c.CtxLen)
	}
	return nil
}

// Append stores k and v ([n, KVDim] each) of layer l at positions
// start..start+n-1, converted to F16.
func (c *Cache) Append(l, start int, k, v []float32, f32ToF16s func(dst []uint16, src []float32)) {
	n := len(k) / c.KVDim
	f32ToF16s(c.V[l][start*c.KVDim:(start+n)*c.KVDim], v)
	kl := c.K[l]
	for t := range n {
		row := k[t*c.KVDim : (t+1)*c.KVDim]
		for i, x := range row {
			kl[i*c.CtxLen+start+t] = quant.F32ToF16(x)
		}
	}
}

// Reset empties the cache.
func (c *Cache) Reset() { c.Len = 0 }

// Truncate drops positions from n on.
func (c *Cache) Truncate(n int) {
	if n < c.Len {
		c.Len = max(n, 0)
	}
}
