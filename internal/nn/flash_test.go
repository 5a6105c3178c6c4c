package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestTiledAttention: the tiled path (online softmax over blocks) equals
// attention computed in float64 from what the cache holds — each key and
// value row dequantized, each query as the key type's dot product sees it
// (quantized to Q8_0 for quantized keys, rounded to F16 for F16 keys) —
// for every cache type, GQA groups, causal and sliding-window masks,
// soft-capping and sinks, over prompts that cross many blocks in one
// batch, tokens of several sequences included.
func TestTiledAttention(t *testing.T) {
	f16, f32, bf16, q8, q4 := tensor.F16, tensor.F32, tensor.BF16, tensor.Q8_0, tensor.Q4_0
	for _, c := range []struct {
		name           string
		types          kvcache.Types
		heads, kv, hd  int
		window         int
		softcap, sinks bool
	}{
		{"f16 flash", kvcache.Types{K: f16, V: f16}, 4, 2, 64, 0, false, false},
		{"f32", kvcache.Types{K: f32, V: f32}, 4, 1, 64, 0, false, false},
		{"bf16", kvcache.Types{K: bf16, V: bf16}, 2, 2, 32, 0, false, false},
		{"q8_0", kvcache.Types{K: q8, V: q8}, 6, 2, 64, 0, false, false},
		{"q4_0", kvcache.Types{K: q4, V: q4}, 4, 2, 128, 0, false, false},
		{"q8_0 group of 7", kvcache.Types{K: q8, V: q8}, 14, 2, 64, 0, false, false},
		{"q4_0 group of 8", kvcache.Types{K: q4, V: f16}, 8, 1, 64, 0, false, false},
		{"f16 K, q8_0 V", kvcache.Types{K: f16, V: q8}, 4, 2, 64, 0, false, false},
		{"q8_0 K, f16 V, window", kvcache.Types{K: q8, V: f16}, 4, 2, 64, 40, false, false},
		{"q8_0 softcap sinks", kvcache.Types{K: q8, V: q8}, 4, 4, 32, 0, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			kvDim, qDim := c.kv*c.hd, c.heads*c.hd
			pool, err := kvcache.NewTypedPool(1, kvDim, 64, kvcache.Window{}, c.types)
			if err != nil {
				t.Fatal(err)
			}
			lens := []int{150, 1, 37}
			const threads = 2
			a := NewAttention(c.heads, c.kv, c.hd, 256, threads)
			a.Types, a.Window, a.Flash = c.types, c.window, true
			if c.softcap {
				a.SoftCap = 3
			}
			if c.sinks {
				a.Sinks = make([]float32, c.heads)
				for h := range a.Sinks {
					a.Sinks[h] = float32(rng.NormFloat64())
				}
			}
			// Each sequence's keys and values, stored, and read back as
			// the cache holds them.
			var seqs []Seq
			var pos, seqOf []int32
			var keys, vals [][][]float32 // [seq][position][kvDim]
			for si, n := range lens {
				s := pool.NewSeq()
				if err := s.Reserve(n); err != nil {
					t.Fatal(err)
				}
				var ks, vs [][]float32
				vrows := make([]int32, n)
				for p := range n {
					k, v := make([]float32, kvDim), make([]float32, kvDim)
					for i := range k {
						k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
					}
					pool.Store(0, s.Slot(p), k, v)
					ks, vs = append(ks, readRow(pool, s, p, true, c.types.K, kvDim)), append(vs, readRow(pool, s, p, false, c.types.V, kvDim))
					vrows[p] = int32(s.Row(p))
					pos, seqOf = append(pos, int32(p)), append(seqOf, int32(si))
				}
				keys, vals = append(keys, ks), append(vals, vs)
				seqs = append(seqs, Seq{Blocks: s.Blocks(), VRows: vrows})
			}
			n := len(pos)
			q := make([]float32, n*qDim)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			out := make([]float32, n*qDim)
			pp := parallel.New(threads)
			defer pp.Close()
			a.Forward(pp, out, q, n, pos, seqOf, seqs, pool.K[0], pool.V[0], nil)
			// diff is token tk's largest difference from float64 attention,
			// its output row [qDim] in got.
			diff := func(tk int, got []float32) float64 {
				worst := 0.0
				si, p := seqOf[tk], int(pos[tk])
				for h := range c.heads {
					kvh := h / (c.heads / c.kv)
					qh := asSeen(q[tk*qDim+h*c.hd:tk*qDim+(h+1)*c.hd], c.types.K)
					lo, hi := a.visible(p, p+1)
					w := make([]float64, p+1)
					mx := math.Inf(-1)
					for j := lo; j < hi; j++ {
						var d float64
						for e := range c.hd {
							d += float64(qh[e]) * float64(keys[si][j][kvh*c.hd+e])
						}
						d *= float64(a.Scale)
						if c.softcap {
							d = 3 * math.Tanh(d/3)
						}
						w[j] = d
						mx = max(mx, d)
					}
					sink := math.Inf(-1)
					if c.sinks {
						sink = float64(a.Sinks[h])
						mx = max(mx, sink)
					}
					sum := math.Exp(sink - mx)
					for j := lo; j < hi; j++ {
						w[j] = math.Exp(w[j] - mx)
						sum += w[j]
					}
					for e := range c.hd {
						var o float64
						for j := lo; j < hi; j++ {
							o += w[j] * float64(vals[si][j][kvh*c.hd+e])
						}
						worst = max(worst, math.Abs(float64(got[h*c.hd+e])-o/sum))
					}
				}
				return worst
			}
			worst := 0.0
			for tk := range n {
				worst = max(worst, diff(tk, out[tk*qDim:(tk+1)*qDim]))
			}
			if worst > 2e-5 || math.IsNaN(worst) {
				t.Errorf("worst difference from float64 attention over the stored rows: %g", worst)
			}
			// Flash-decoding: one token (the first sequence's last, 150
			// positions) on 8 threads, its positions split across them and
			// the partial softmaxes combined.
			defer func(b int) { flashSplitBlocks = b }(flashSplitBlocks)
			flashSplitBlocks = 1
			a8 := NewAttention(c.heads, c.kv, c.hd, 256, 8)
			a8.Types, a8.Window, a8.Flash, a8.SoftCap, a8.Sinks = a.Types, a.Window, true, a.SoftCap, a.Sinks
			p8 := parallel.New(8)
			defer p8.Close()
			tk := lens[0] - 1
			one := make([]float32, qDim)
			a8.Forward(p8, one, q[tk*qDim:(tk+1)*qDim], 1, pos[tk:tk+1], seqOf[tk:tk+1], seqs, pool.K[0], pool.V[0], nil)
			if a8.splits < 2 {
				t.Fatalf("one token with %d KV heads on 8 threads: %d splits", c.kv, a8.splits)
			}
			if w := diff(tk, one); w > 2e-5 || math.IsNaN(w) {
				t.Errorf("split into %d: worst difference from float64 attention: %g", a8.splits, w)
			}
		})
	}
}

// readRow is position p's key (or value) as the cache holds it, [kvDim].
func readRow(pool *kvcache.Pool, s *kvcache.Seq, p int, key bool, t tensor.DType, kvDim int) []float32 {
	out := make([]float32, kvDim)
	at := s.Slot(p)
	if key && kvcache.Transposed(t) {
		for e := range out {
			out[e] = quant.F16ToF32(pool.K[0][at.K+e*kvcache.BlockSize])
		}
		return out
	}
	if key && kvcache.Columns(t) {
		pool.Key(0, at, out)
		return out
	}
	arr, start := pool.V[0], at.V
	if key {
		arr, start = pool.K[0], at.K
	}
	n := kvcache.HeadWords(t, kvDim)
	if err := quant.Dequantize(t, out, kvcache.Bytes(arr[start:start+n])); err != nil {
		panic(err)
	}
	return out
}

// asSeen is a query as the key type's dot product sees it: rounded to F16
// for F16 keys, through Q8_0 for quantized ones, BF16-rounded for BF16.
func asSeen(q []float32, k tensor.DType) []float32 {
	out := make([]float32, len(q))
	switch k {
	case tensor.F16:
		for i, x := range q {
			out[i] = quant.RoundF16(x)
		}
	case tensor.F32:
		copy(out, q)
	case tensor.BF16:
		for i, x := range q {
			out[i] = quant.BF16ToF32(quant.F32ToBF16(x))
		}
	default:
		b := make([]byte, len(q)/32*34)
		if err := kernels.QuantizeRow(tensor.Q8_0, b, q); err != nil { // ggml's from_float, as the kernel
			panic(err)
		}
		if err := quant.Dequantize(tensor.Q8_0, out, b); err != nil {
			panic(err)
		}
	}
	return out
}
