package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/loom-inference/loom/internal/quant"
)

func randF16s(rng *rand.Rand, n int) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = quant.F32ToF16(float32(rng.NormFloat64()))
	}
	return v
}

func randRoundedF16(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = quant.RoundF16(float32(rng.NormFloat64() * scale))
	}
	return v
}

// attnValues returns n F16 values spread over many binades (so the order
// of additions shows in the rounding), a tenth of them ±0 (−0 products
// test the lanes' signs of zero): a random window of a pool made once.
func attnValues(rng *rand.Rand, n int) []uint16 {
	attnPoolOnce.Do(func() {
		r := rand.New(rand.NewPCG(5, 6))
		attnPool = make([]uint16, 1<<21)
		for i := range attnPool {
			switch k := r.IntN(20); {
			case k == 0:
				attnPool[i] = 0
			case k == 1:
				attnPool[i] = 0x8000
			default:
				attnPool[i] = quant.F32ToF16(float32(math.Ldexp(r.NormFloat64(), r.IntN(16)-8)))
			}
		}
	})
	start := rng.IntN(len(attnPool) - n + 1)
	return slices.Clone(attnPool[start : start+n])
}

var (
	attnPool     []uint16
	attnPoolOnce sync.Once
)

func attnWeights(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i, h := range attnValues(rng, n) {
		v[i] = quant.F16ToF32(h)
	}
	return v
}

func attnSame(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s [%d]: %v (%#x), reference %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// pagedOffsets returns n row starts, stride apart, in shuffled order (a
// paged cache's rows lie anywhere), and the length they span.
func pagedOffsets(rng *rand.Rand, n, stride int) []int32 {
	off := Strides(n, stride)
	rng.Shuffle(n, func(i, j int) { off[i], off[j] = off[j], off[i] })
	return off
}

// TestAttnScores runs every ScoresF16 against the portable reference bit
// for bit: head sizes 1-300 (with and without vec_dot's float64 tail,
// tinyBLAS's 16 lanes partly filled), position counts with and without a
// partial vector, both orders, K rows in shuffled order.
func TestAttnScores(t *testing.T) {
	hds := []int{1, 2, 7, 15, 16, 17, 31, 33, 48, 63, 64, 65, 80, 96, 100, 112, 127, 128, 129, 160, 191, 192, 200, 255, 256, 257, 300}
	ns := []int{1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 64, 65}
	for _, im := range scoresF16.impls[1:] {
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			for _, hd := range hds {
				for _, n := range ns {
					stride := n + rng.IntN(9)
					kT := attnValues(rng, hd*stride+rng.IntN(3))
					off := pagedOffsets(rng, hd, stride)
					q := attnWeights(rng, hd)
					for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
						got, want := make([]float32, n), make([]float32, n)
						im.f(got, q, kT, off, o)
						scoresF16Generic(want, q, kT, off, o)
						attnSame(t, fmt.Sprintf("ScoresF16 %s hd=%d n=%d", orderName(o), hd, n), got, want)
					}
				}
			}
		})
	}
}

// TestAttnMix runs every MixF16 against the portable reference bit for
// bit: position counts 1-5000 around the 16- and 64-lane boundaries, padded
// cache lengths nkv that move vec_dot's float64 tail (and one below nk),
// head sizes 1-300, V rows in shuffled order.
func TestAttnMix(t *testing.T) {
	cases := []struct{ nks, hds []int }{
		{[]int{1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 191, 255, 256, 300},
			[]int{1, 7, 8, 15, 16, 17, 40, 64, 80, 96, 128, 136, 256, 300}},
		{[]int{1023, 1024, 1025, 4095, 5000}, []int{16, 64, 128}},
	}
	if attnQuick {
		cases = []struct{ nks, hds []int }{
			{[]int{1, 17, 63, 64, 65, 129, 255, 256, 300}, []int{1, 17, 64, 80, 128}},
			{[]int{1025, 4097}, []int{64}},
		}
	}
	for _, im := range mixF16.impls[1:] {
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 10))
			for _, c := range cases {
				for _, nk := range c.nks {
					for _, hd := range c.hds {
						// Two heads per row, the second used.
						vstride := 2 * hd
						v := attnValues(rng, nk*vstride)
						off := pagedOffsets(rng, nk, vstride)
						p := attnWeights(rng, nk)
						for _, nkv := range []int{(nk + 31) &^ 31, nk + 64 + rng.IntN(64), max(nk-5, 0)} {
							for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
								got, want := make([]float32, hd), make([]float32, hd)
								im.f(got, p, v[hd:], off, nkv, o)
								mixF16Generic(want, p, v[hd:], off, nkv, o)
								attnSame(t, fmt.Sprintf("MixF16 %s hd=%d nk=%d nkv=%d", orderName(o), hd, nk, nkv), got, want)
							}
						}
					}
				}
			}
		})
	}
}

// TestAttnMulti runs every ScoresF16N and MixF16N against row-by-row
// calls of the reference, for 1-9 queries (the kernels take them four at
// a time), rows wider than they are used; and MixF16N on a causal tile's
// weights (later queries see more positions, the others' weights zero past
// their own) against MixF16 on each query's own positions.
func TestAttnMulti(t *testing.T) {
	hds, nqs, nks := []int{17, 64, 80, 128, 256}, []int{1, 2, 3, 4, 5, 9}, []int{9, 64, 200, 700}
	if attnQuick {
		hds, nqs, nks = []int{17, 64, 128}, []int{1, 3, 5}, []int{9, 300}
	}
	for i, im := range scoresF16N.impls {
		mixN := mixF16N.impls[i].f
		t.Run(im.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
				for _, hd := range hds {
					for _, nq := range nqs {
						// Scores over one 32-position block.
						const n = 32
						kT := attnValues(rng, hd*n)
						off := pagedOffsets(rng, hd, n)
						qs := hd + 3
						q := attnWeights(rng, nq*qs)
						os := n + 5
						got := make([]float32, nq*os)
						im.f(got, os, n, q, qs, hd, nq, kT, off, o, kT[hd:])
						for r := range nq {
							want := make([]float32, n)
							scoresF16Generic(want, q[r*qs:][:hd], kT, off, o)
							attnSame(t, fmt.Sprintf("ScoresF16N %s hd=%d nq=%d row %d", orderName(o), hd, nq, r), got[r*os:][:n], want)
						}
						// Mix over nk positions; query r of a causal tile
						// sees the first nk−nq+1+r.
						for _, nk := range nks {
							vstride := 2 * hd
							v := attnValues(rng, nk*vstride)
							voff := pagedOffsets(rng, nk, vstride)
							ps := nk + 1
							p := attnWeights(rng, nq*ps)
							for _, causal := range []bool{false, true} {
								if causal {
									for r := range nq {
										clear(p[r*ps+max(nk-nq+1+r, 0) : r*ps+nk])
									}
								}
								nkv := (nk + 31) &^ 31
								hs := hd + 2
								got := make([]float32, nq*hs)
								mixN(got, hs, hd, p, ps, nk, nq, v, voff, nkv, o)
								for r := range nq {
									k := nk
									if causal {
										k = max(nk-nq+1+r, 0)
									}
									want := make([]float32, hd)
									mixF16Generic(want, p[r*ps:][:k], v, voff, nkv, o)
									attnSame(t, fmt.Sprintf("MixF16N %s hd=%d nk=%d nq=%d causal=%v row %d", orderName(o), hd, nk, nq, causal, r), got[r*hs:][:hd], want)
								}
							}
						}
					}
				}
			}
		})
	}
}

// TestAttnSignedZero: a score whose every product is −0 (a zero query
// against negative keys) is +0, as the reference's sums from +0 make it,
// in every implementation and order.
func TestAttnSignedZero(t *testing.T) {
	for _, im := range scoresF16N.impls {
		t.Run(im.name, func(t *testing.T) {
			for _, hd := range []int{64, 128, 256} {
				for _, nq := range []int{1, 4} {
					const n = 32
					kT := make([]uint16, hd*n)
					for i := range kT {
						kT[i] = quant.F32ToF16(-1.5)
					}
					q := make([]float32, nq*hd) // +0: each product −0
					for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
						got := make([]float32, nq*n)
						im.f(got, n, n, q, hd, hd, nq, kT, Strides(hd, n), o, nil)
						for i, x := range got {
							if math.Float32bits(x) != 0 {
								t.Fatalf("%s hd=%d nq=%d: score %d is %v (%#x), want +0", orderName(o), hd, nq, i, x, math.Float32bits(x))
							}
						}
					}
				}
			}
		})
	}
}

// TestAttnBounds: a row offset outside K or V panics (the kernels read
// nothing outside the slice; the generic code then indexes and panics).
func TestAttnBounds(t *testing.T) {
	for i, im := range scoresF16.impls {
		mix := mixF16.impls[i].f
		t.Run(im.name, func(t *testing.T) {
			kT := make([]uint16, 64*32+16)
			v := make([]uint16, 100*64)
			for _, bad := range []int32{-1, -1 << 30, int32(len(kT)) - 31, 1 << 30} {
				off := Strides(64, 32)
				off[37] = bad
				for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
					mustPanic(t, "ScoresF16 "+orderName(o), func() { im.f(make([]float32, 32), make([]float32, 64), kT, off, o) })
				}
			}
			for _, bad := range []int32{-1, -1 << 30, int32(len(v)) - 63, 1 << 30} {
				voff := Strides(100, 64)
				voff[99] = bad
				mustPanic(t, "MixF16", func() { mix(make([]float32, 64), make([]float32, 100), v, voff, 128, OrderVecDot) })
			}
		})
	}
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: an offset out of range did not panic", what)
		}
	}()
	f()
}

// TestAttnOrders pins the two summation orders on sums whose float32
// results depend on the order: 1 + s + s with s = 2⁻²⁴ is 1 when s meets 1
// alone (each addition rounds the half-ulp tie to even) and 1 + 2⁻²³ when
// the two s are added first or in float64.
func TestAttnOrders(t *testing.T) {
	s := quant.F32ToF16(float32(math.Ldexp(1, -24)))
	one := float32(1)
	up := float32(1 + math.Ldexp(1, -23))
	for _, c := range []struct {
		hd     int
		small  []int // elements holding s (element 0 holds 1)
		o      AttnOrder
		want   float32
		reason string
	}{
		{64, []int{16, 48}, OrderGemm, one, "16 lanes: 16 and 48 join lane 0 one at a time"},
		{64, []int{16, 48}, OrderVecDot, up, "64 lanes: 16 and 48 meet at the 32-fold, then join 1"},
		{64, []int{1, 17}, OrderGemm, up, "16 lanes: 1 and 17 share lane 1"},
		{48, []int{16, 32}, OrderGemm, one, "16 lanes: 16 and 32 join lane 0 one at a time"},
		{48, []int{16, 32}, OrderVecDot, up, "no 64-element vector: a float64 sum"},
	} {
		q := make([]float32, c.hd)
		kT := make([]uint16, c.hd)
		for e := range q {
			q[e] = 1
		}
		kT[0] = quant.F32ToF16(1)
		for _, e := range c.small {
			kT[e] = s
		}
		out := make([]float32, 1)
		ScoresF16(out, q, kT, Strides(c.hd, 1), c.o)
		if out[0] != c.want {
			t.Errorf("hd %d, s at %v, order %d: %v, want %v (%s)", c.hd, c.small, c.o, out[0], c.want, c.reason)
		}
		// The same sums as attention-weighted values (p·V over positions).
		MixF16(out, q, kT, Strides(c.hd, 1), c.hd, c.o)
		if out[0] != c.want {
			t.Errorf("MixF16 hd %d, s at %v, order %d: %v, want %v (%s)", c.hd, c.small, c.o, out[0], c.want, c.reason)
		}
	}
	if OrderFor(1, 64) != OrderVecDot || OrderFor(2, 64) != OrderGemm || OrderFor(2, 8) != OrderVecDot {
		t.Error("OrderFor: tinyBLAS takes n ≥ 2 and k a multiple of 16")
	}
}

// BenchmarkScoresF16 scores nk positions of a paged K cache (blocks of 32
// positions, element e of a block's positions at e·32, two KV heads per
// row) block by block, as nn.Attention does, for one query (ScoresF16) or
// four (ScoresF16N; ns/op covers all four).
func BenchmarkScoresF16(b *testing.B) {
	const B = 32
	rng := rand.New(rand.NewPCG(1, 2))
	for _, hd := range []int{64, 128} {
		for _, nk := range []int{512, 4096, 16384} {
			k := randF16s(rng, nk*2*hd)
			koff := Strides(hd, B)
			for _, nq := range []int{1, 4} {
				q := randRoundedF16(rng, nq*hd, 1)
				out := make([]float32, nq*nk)
				for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
					b.Run(fmt.Sprintf("hd%d/nk%d/%s/nq%d", hd, nk, orderName(o), nq), func(b *testing.B) {
						defer cpuPerOp(b)()
						for b.Loop() {
							for i := 0; i < nk; i += B {
								if nq == 1 {
									ScoresF16(out[i:i+B], q, k[i*2*hd:], koff, o)
								} else {
									ScoresF16N(out[i:], nk, B, q, hd, hd, nq, k[i*2*hd:], koff, o)
								}
							}
						}
					})
				}
			}
		}
	}
}

// BenchmarkMixF16 mixes nk V rows (two KV heads per row, the first used)
// into hd outputs for one query (MixF16) or four (MixF16N; ns/op covers
// all four).
func BenchmarkMixF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, hd := range []int{64, 128} {
		for _, nk := range []int{512, 4096, 16384} {
			v := randF16s(rng, nk*2*hd)
			voff := Strides(nk, 2*hd)
			for _, nq := range []int{1, 4} {
				p := randRoundedF16(rng, nq*nk, 0.01)
				out := make([]float32, nq*hd)
				for _, o := range []AttnOrder{OrderVecDot, OrderGemm} {
					b.Run(fmt.Sprintf("hd%d/nk%d/%s/nq%d", hd, nk, orderName(o), nq), func(b *testing.B) {
						defer cpuPerOp(b)()
						for b.Loop() {
							if nq == 1 {
								MixF16(out, p, v, voff, nk, o)
							} else {
								MixF16N(out, hd, hd, p, nk, nk, nq, v, voff, nk, o)
							}
						}
					})
				}
			}
		}
	}
}

// cpuPerOp locks the benchmark's thread and returns the function that
// reports its CPU time per op ("cpu-ns/op"; Linux), the measure to compare
// when other processes share the machine.
func cpuPerOp(b *testing.B) func() {
	runtime.LockOSThread()
	t0 := threadCPU()
	return func() {
		if t0 > 0 && b.N > 0 {
			b.ReportMetric(float64(threadCPU()-t0)/float64(b.N), "cpu-ns/op")
		}
		runtime.UnlockOSThread()
	}
}

func orderName(o AttnOrder) string {
	if o == OrderGemm {
		return "gemm"
	}
	return "vecdot"
}
