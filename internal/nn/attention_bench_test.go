package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// BenchmarkDecodeAttention is one decoding token's attention over every
// layer of a cache at depth D, in llama-3.2-1b's shape (16 layers, 32
// query heads, 8 KV heads of 64), on 2 threads: the part of a decode step
// that grows with the context. GB/s is the cache bytes read (every layer's
// K and V rows up to D) per second; "exact" is the F16 cache's default
// path, "tiled" the online-softmax one (-fa, and every quantized cache).
func BenchmarkDecodeAttention(b *testing.B) {
	f16, q8 := tensor.F16, tensor.Q8_0
	for _, c := range []struct {
		name  string
		types kvcache.Types
		flash bool
	}{
		{"f16/exact", kvcache.Types{K: f16, V: f16}, false},
		{"f16/tiled", kvcache.Types{K: f16, V: f16}, true},
		{"q8_0/tiled", kvcache.Types{K: q8, V: q8}, true},
	} {
		for _, depth := range []int{128, 512, 1024, 4096, 16384} {
			b.Run(fmt.Sprintf("%s/d%d", c.name, depth), func(b *testing.B) {
				benchAttention(b, attnShape{layers: 16, heads: 32, kv: 8, hd: 64}, c.types, c.flash, depth, 1)
			})
		}
	}
}

// BenchmarkChunkAttention is a prompt chunk's attention, n tokens after
// depth D cached positions, over every layer of qwen2.5-0.5b's shape (24
// layers, 14 query heads, 2 KV heads of 64), on 2 threads: what a chunk
// beside running streams adds to their step (Options.ChunkLatency).
func BenchmarkChunkAttention(b *testing.B) {
	f16 := kvcache.Types{K: tensor.F16, V: tensor.F16}
	for _, flash := range []bool{false, true} {
		for _, n := range []int{1, 2, 4, 8} {
			for _, depth := range []int{4096, 16384} {
				name := map[bool]string{false: "exact", true: "tiled"}[flash]
				b.Run(fmt.Sprintf("%s/n%d/d%d", name, n, depth), func(b *testing.B) {
					benchAttention(b, attnShape{layers: 24, heads: 14, kv: 2, hd: 64}, f16, flash, depth, n)
				})
			}
		}
	}
}

type attnShape struct{ layers, heads, kv, hd int }

// benchAttention times n tokens at positions depth−n … depth−1 of one
// sequence attending over every layer of a cache filled with random rows.
func benchAttention(b *testing.B, sh attnShape, types kvcache.Types, flash bool, depth, n int) {
	const threads = 2
	rng := rand.New(rand.NewPCG(1, uint64(depth)))
	kvDim, qDim := sh.kv*sh.hd, sh.heads*sh.hd
	pool, err := kvcache.NewTypedPool(sh.layers, kvDim, depth/kvcache.BlockSize+1, kvcache.Window{}, types)
	if err != nil {
		b.Fatal(err)
	}
	s := pool.NewSeq()
	if err := s.Reserve(depth); err != nil {
		b.Fatal(err)
	}
	k, v := make([]float32, kvDim), make([]float32, kvDim)
	vrows := make([]int32, depth)
	for p := range depth {
		for l := range sh.layers {
			for i := range k {
				k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			pool.Store(l, s.Slot(p), k, v)
		}
		vrows[p] = int32(s.Row(p))
	}
	seqs := []Seq{{Blocks: s.Blocks(), VRows: vrows}}
	seqs[0].SetOrders(n, sh.hd, depth-1)
	q := make([]float32, n*qDim)
	for i := range q {
		q[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, n*qDim)
	pos, seqOf := make([]int32, n), make([]int32, n)
	for i := range pos {
		pos[i] = int32(depth - n + i)
	}
	a := NewAttention(sh.heads, sh.kv, sh.hd, depth, threads)
	a.Types, a.Flash = types, flash
	pp := parallel.New(threads)
	defer pp.Close()
	b.SetBytes(int64(depth * pool.BytesPerToken())) // every layer's K and V rows
	for b.Loop() {
		for l := range sh.layers {
			a.Forward(pp, out, q, n, pos, seqOf, seqs, pool.K[l], pool.V[l], nil)
		}
	}
}
