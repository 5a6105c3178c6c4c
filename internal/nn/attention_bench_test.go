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
	const layers, heads, kv, hd, threads = 16, 32, 8, 64, 2
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
				rng := rand.New(rand.NewPCG(1, uint64(depth)))
				kvDim, qDim := kv*hd, heads*hd
				pool, err := kvcache.NewTypedPool(layers, kvDim, depth/kvcache.BlockSize+1, kvcache.Window{}, c.types)
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
					for l := range layers {
						for i := range k {
							k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
						}
						pool.Store(l, s.Slot(p), k, v)
					}
					vrows[p] = int32(s.Row(p))
				}
				seqs := []Seq{{Blocks: s.Blocks(), VRows: vrows}}
				seqs[0].SetOrders(1, hd, depth-1)
				q := make([]float32, qDim)
				for i := range q {
					q[i] = float32(rng.NormFloat64())
				}
				out := make([]float32, qDim)
				pos, seqOf := []int32{int32(depth - 1)}, []int32{0}
				a := NewAttention(heads, kv, hd, depth, threads)
				a.Types, a.Flash = c.types, c.flash
				pp := parallel.New(threads)
				defer pp.Close()
				b.SetBytes(int64(depth * pool.BytesPerToken())) // every layer's K and V rows
				for b.Loop() {
					for l := range layers {
						a.Forward(pp, out, q, 1, pos, seqOf, seqs, pool.K[l], pool.V[l], nil)
					}
				}
			})
		}
	}
}
