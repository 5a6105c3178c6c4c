package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/tensor"
)

// q8Rows returns n Q8_0 rows of hd elements, stride bytes apart: random
// values at random scales, some rows all zero (a zero scale).
func q8Rows(rng *rand.Rand, n, hd, stride int) []byte {
	rb := hd / 32 * lQ8_0.Size
	out := make([]byte, (n-1)*stride+rb+rng.IntN(3))
	x := make([]float32, hd)
	for j := range n {
		sc := math.Ldexp(1, rng.IntN(12)-6)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * sc)
			if j%7 == 3 {
				x[i] = 0
			}
		}
		if err := QuantizeRow(tensor.Q8_0, out[j*stride:j*stride+rb], x); err != nil {
			panic(err)
		}
	}
	return out
}

// TestScoresQ8_0: every implementation equals the order reference (and
// the row-at-a-time RowDot kernel) bit for bit: head widths with one to
// nine blocks, query counts around the four-query groups, row counts.
func TestScoresQ8_0(t *testing.T) {
	rd, err := RowDotFor(tensor.Q8_0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, im := range scoresQ8_0Op.impls {
		for _, hd := range []int{32, 64, 96, 128, 256, 288} {
			rb := hd / 32 * lQ8_0.Size
			for _, nq := range []int{1, 2, 3, 4, 5, 7, 8, 9} {
				for _, n := range []int{1, 2, 17, 32, 33} {
					kstride := rb + rng.IntN(40)
					k := q8Rows(rng, n, hd, kstride)
					ab := rb + rng.IntN(5)
					qa := q8Rows(rng, nq, hd, ab)
					os := n + 3
					got := make([]float32, nq*os)
					im.f(got, os, qa, ab, nq, k, kstride, n, hd, k)
					for i := range nq {
						for j := range n {
							want := q8_0Dot(hd, k[j*kstride:j*kstride+rb], qa[i*ab:i*ab+rb])
							row := rd.Dot(hd, k[j*kstride:j*kstride+rb], qa[i*ab:i*ab+rb])
							g := got[i*os+j]
							if math.Float32bits(g) != math.Float32bits(want) || math.Float32bits(row) != math.Float32bits(want) {
								t.Fatalf("%s hd=%d nq=%d n=%d query %d row %d: %g, reference %g, RowDot %g", im.name, hd, nq, n, i, j, g, want, row)
							}
						}
					}
				}
			}
		}
	}
}

// TestMadRowsQ8_0: every implementation equals MadRows of the same
// instruction set over the rows dequantized (the generic: the reference's
// operations), rows in shuffled order, head widths with a 32-column tail.
func TestMadRowsQ8_0(t *testing.T) {
	rows := map[string]func(acc []float32, as int, w []float32, ws int, v []float32, vs int, nq, nj, hd int){}
	for _, im := range madRowsOp.impls {
		rows[im.name] = im.f
	}
	rows["avx512vnni"] = rows["avx512"]
	rng := rand.New(rand.NewPCG(5, 6))
	for _, im := range madRowsQ8_0Op.impls {
		ref, ok := rows[im.name]
		if !ok {
			t.Fatalf("MadRowsQ8_0 %s: no MadRows to compare with", im.name)
		}
		for _, hd := range []int{32, 64, 96, 128, 160} {
			rb := hd / 32 * lQ8_0.Size
			for _, nq := range []int{1, 3, 4, 5, 8} {
				for _, nj := range []int{1, 2, 31, 32} {
					stride := 2 * (rb/2 + 1 + rng.IntN(8)) // even: offsets count 16-bit words
					v := q8Rows(rng, nj, hd, stride)
					off := make([]int32, nj)
					for j, p := range rng.Perm(nj) {
						off[j] = int32(p * stride / 2)
					}
					as, ws := hd+3, nj+5
					acc := make([]float32, nq*as)
					w := make([]float32, nq*ws)
					for i := range acc {
						acc[i] = float32(rng.NormFloat64())
					}
					for i := range w {
						if w[i] = float32(rng.Float64()); rng.IntN(6) == 0 {
							w[i] = 0
						}
					}
					vf := make([]float32, nj*hd)
					for j := range nj {
						dequantQ8_0Op.impls[0].f(vf[j*hd:(j+1)*hd], v[2*int(off[j]):2*int(off[j])+rb])
					}
					want := append([]float32(nil), acc...)
					if im.name == "generic" {
						madRowsGeneric(want, as, w, ws, vf, hd, nq, nj, hd)
					} else {
						ref(want, as, w, ws, vf, hd, nq, nj, hd)
					}
					got := append([]float32(nil), acc...)
					im.f(got, as, w, ws, v, off, nq, nj, hd, off)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s hd=%d nq=%d nj=%d [%d]: %g, reference %g", im.name, hd, nq, nj, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestMadRowsQ8_0Bounds: a row offset that leaves V panics, in every
// implementation (the kernels read nothing outside it).
func TestMadRowsQ8_0Bounds(t *testing.T) {
	for _, im := range madRowsQ8_0Op.impls {
		for _, hd := range []int{64, 96} {
			rb := hd / 32 * lQ8_0.Size
			v := make([]byte, 10*rb)
			for _, bad := range []int32{-1, -1 << 30, int32(len(v)/2 - rb/2 + 1), 1 << 30} {
				off := make([]int32, 8)
				for j := range off {
					off[j] = int32(j * rb / 2)
				}
				off[5] = bad
				for _, nq := range []int{1, 4} {
					mustPanic(t, fmt.Sprintf("MadRowsQ8_0 %s hd=%d nq=%d offset %d", im.name, hd, nq, bad), func() {
						im.f(make([]float32, nq*hd), hd, make([]float32, nq*8), 8, v, off, nq, 8, hd, nil)
					})
				}
			}
		}
	}
}

// BenchmarkAttnQ8_0 scores four queries against nk Q8_0 K rows of one
// 64-wide head in a cache row of eight heads (llama-3.2-1b's), 32 rows a
// call as tiled attention does, and mixes as many V rows: the K and V
// sides of one KV head's decode step at depth nk.
func BenchmarkAttnQ8_0(b *testing.B) {
	const hd, heads, nq, B = 64, 8, 4, 32
	rb := hd / 32 * lQ8_0.Size
	stride := heads * rb
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nk := range []int{512, 4096} {
		k := q8Rows(rng, nk, hd, stride)
		v := q8Rows(rng, nk, hd, stride)
		qa := q8Rows(rng, nq, hd, rb)
		out := make([]float32, nq*B)
		off := make([]int32, nk)
		for j := range off {
			off[j] = int32(j * stride / 2)
		}
		w := make([]float32, nq*B)
		for i := range w {
			w[i] = float32(rng.Float64())
		}
		acc := make([]float32, nq*hd)
		b.Run(fmt.Sprintf("scores/nk%d", nk), func(b *testing.B) {
			b.SetBytes(int64(nk * rb))
			for b.Loop() {
				for j := 0; j < nk; j += B {
					ScoresQ8_0(out, B, qa, rb, nq, k[j*stride:], stride, B, hd, k[min(j+B, nk-B)*stride:])
				}
			}
		})
		b.Run(fmt.Sprintf("mix/nk%d", nk), func(b *testing.B) {
			b.SetBytes(int64(nk * rb))
			for b.Loop() {
				for j := 0; j < nk; j += B {
					MadRowsQ8_0(acc, hd, w, B, v, off[j:j+B], nq, B, hd, off[min(j+B, nk-B):])
				}
			}
		})
	}
}

// TestMadRowsF16: every implementation equals MadRows of the same
// instruction set over the rows converted, rows in shuffled order, head
// widths with a column tail; an offset that leaves V panics.
func TestMadRowsF16(t *testing.T) {
	rows := map[string]func(acc []float32, as int, w []float32, ws int, v []float32, vs int, nq, nj, hd int){}
	for _, im := range madRowsOp.impls {
		rows[im.name] = im.f
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, im := range madRowsF16Op.impls {
		ref, ok := rows[im.name]
		if !ok {
			t.Fatalf("MadRowsF16 %s: no MadRows to compare with", im.name)
		}
		for _, hd := range []int{16, 64, 80, 128, 200} {
			for _, nq := range []int{1, 3, 4, 5, 8} {
				for _, nj := range []int{1, 2, 31, 32} {
					stride := hd + 1 + rng.IntN(8) // in F16 words
					v16 := attnValues(rng, nj*stride)
					v := make([]byte, 2*len(v16))
					for i, x := range v16 {
						v[2*i], v[2*i+1] = byte(x), byte(x>>8)
					}
					off := make([]int32, nj)
					for j, p := range rng.Perm(nj) {
						off[j] = int32(p * stride)
					}
					as, ws := hd+3, nj+5
					acc := make([]float32, nq*as)
					w := make([]float32, nq*ws)
					for i := range acc {
						acc[i] = float32(rng.NormFloat64())
					}
					for i := range w {
						if w[i] = float32(rng.Float64()); rng.IntN(6) == 0 {
							w[i] = 0
						}
					}
					vf := make([]float32, nj*hd)
					for j := range nj {
						f16ToF32sGeneric(vf[j*hd:(j+1)*hd], v[2*int(off[j]):])
					}
					want := append([]float32(nil), acc...)
					if im.name == "generic" {
						madRowsGeneric(want, as, w, ws, vf, hd, nq, nj, hd)
					} else {
						ref(want, as, w, ws, vf, hd, nq, nj, hd)
					}
					got := append([]float32(nil), acc...)
					im.f(got, as, w, ws, v, off, nq, nj, hd, off)
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s hd=%d nq=%d nj=%d [%d]: %g, reference %g", im.name, hd, nq, nj, i, got[i], want[i])
						}
					}
				}
			}
		}
		for _, hd := range []int{64, 80} {
			v := make([]byte, 2*10*hd)
			for _, bad := range []int32{-1, -1 << 30, int32(len(v)/2 - hd + 1), 1 << 30} {
				off := make([]int32, 8)
				for j := range off {
					off[j] = int32(j * hd)
				}
				off[5] = bad
				for _, nq := range []int{1, 4} {
					mustPanic(t, fmt.Sprintf("MadRowsF16 %s hd=%d nq=%d offset %d", im.name, hd, nq, bad), func() {
						im.f(make([]float32, nq*hd), hd, make([]float32, nq*8), 8, v, off, nq, 8, hd, nil)
					})
				}
			}
		}
	}
}
