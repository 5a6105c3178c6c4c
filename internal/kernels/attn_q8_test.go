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

// q8ColBlock returns a column block of Q8_0 keys of hd elements (every
// slot written, PutQ8Col) and the same keys as rows of ggml blocks.
func q8ColBlock(rng *rand.Rand, hd int) (cols, rows []byte) {
	rb := hd / 32 * lQ8_0.Size
	rows = q8Rows(rng, Q8ColSlots, hd, rb)
	cols = make([]byte, hd/32*Q8ColGroup+rng.IntN(3))
	for s := range Q8ColSlots {
		PutQ8Col(cols, s, rows[s*rb:(s+1)*rb])
	}
	return cols, rows
}

// TestQ8Cols: the column layout's constants are the assembly's, and a
// slot read back is the row stored.
func TestQ8Cols(t *testing.T) {
	if Q8ColGroup != 1088 || q8BlockBytes != lQ8_0.Size {
		t.Fatalf("Q8ColGroup %d, q8BlockBytes %d: the assembly assumes 1088 and %d", Q8ColGroup, q8BlockBytes, lQ8_0.Size)
	}
	rng := rand.New(rand.NewPCG(1, 9))
	for _, hd := range []int{32, 64, 128} {
		cols, rows := q8ColBlock(rng, hd)
		rb := hd / 32 * lQ8_0.Size
		got := make([]byte, rb)
		for s := range Q8ColSlots {
			GetQ8Col(got, cols, s)
			if string(got) != string(rows[s*rb:(s+1)*rb]) {
				t.Fatalf("hd=%d slot %d: read back %x, stored %x", hd, s, got, rows[s*rb:(s+1)*rb])
			}
		}
	}
}

// TestScoresQ8_0Cols: every implementation equals ggml's dot on each
// key's row (the order reference, and the row-at-a-time RowDot kernel)
// bit for bit: head widths of one to nine groups, query counts around the
// four-query groups, slot ranges within and across the block's halves.
func TestScoresQ8_0Cols(t *testing.T) {
	rd, err := RowDotFor(tensor.Q8_0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ranges := [][2]int{{0, 32}, {0, 1}, {0, 16}, {16, 32}, {5, 9}, {3, 30}, {15, 17}, {31, 32}, {20, 23}}
	for _, im := range scoresQ8_0Op.impls {
		for _, hd := range []int{32, 64, 96, 128, 256, 288} {
			rb := hd / 32 * lQ8_0.Size
			cols, rows := q8ColBlock(rng, hd)
			for _, nq := range []int{1, 2, 3, 4, 5, 7, 8, 9} {
				ab := rb + rng.IntN(5)
				qa := q8Rows(rng, nq, hd, ab)
				for _, r := range ranges {
					s0, s1 := r[0], r[1]
					os := s1 - s0 + 3
					got := make([]float32, nq*os)
					for i := range got {
						got[i] = -7 // must stay where no score belongs
					}
					im.f(got, os, qa, ab, nq, cols, s0, s1, hd, cols)
					for i := range nq {
						for j := range os {
							g := got[i*os+j]
							if j >= s1-s0 {
								if g != -7 {
									t.Fatalf("%s hd=%d nq=%d [%d,%d): query %d wrote past its slots (%d: %g)", im.name, hd, nq, s0, s1, i, j, g)
								}
								continue
							}
							key := rows[(s0+j)*rb : (s0+j+1)*rb]
							want := q8_0Dot(hd, key, qa[i*ab:i*ab+rb])
							row := rd.Dot(hd, key, qa[i*ab:i*ab+rb])
							if math.Float32bits(g) != math.Float32bits(want) || math.Float32bits(row) != math.Float32bits(want) {
								t.Fatalf("%s hd=%d nq=%d [%d,%d) query %d slot %d: %g, reference %g, RowDot %g", im.name, hd, nq, s0, s1, i, s0+j, g, want, row)
							}
						}
					}
				}
			}
		}
	}
}

// TestScoresQ8_0ColsExtremes: keys and queries at ±127 and keys at −128
// (which ggml's quantizer never writes, but a column block may hold),
// against ggml's dot computed in exact integers.
func TestScoresQ8_0ColsExtremes(t *testing.T) {
	const hd = 64
	rb := hd / 32 * lQ8_0.Size
	rows := make([]byte, Q8ColSlots*rb)
	for s := range Q8ColSlots {
		for g := range hd / 32 {
			b := rows[s*rb+g*lQ8_0.Size:]
			b[0], b[1] = 0x00, 0x3c // d = 1
			for e := range 32 {
				v := []int8{127, -127, -128, 0}[(s+e+g)%4]
				b[lQ8_0.QS+e] = byte(v)
			}
		}
	}
	cols := make([]byte, hd/32*Q8ColGroup)
	for s := range Q8ColSlots {
		PutQ8Col(cols, s, rows[s*rb:(s+1)*rb])
	}
	qa := make([]byte, 4*rb)
	for i := range 4 {
		for g := range hd / 32 {
			b := qa[i*rb+g*lQ8_0.Size:]
			b[0], b[1] = 0x00, 0x3c
			for e := range 32 {
				b[lQ8_0.QS+e] = byte([]int8{-127, 127}[(e+i)%2])
			}
		}
	}
	for _, im := range scoresQ8_0Op.impls {
		got := make([]float32, 4*Q8ColSlots)
		im.f(got, Q8ColSlots, qa, rb, 4, cols, 0, Q8ColSlots, hd, nil)
		for i := range 4 {
			for s := range Q8ColSlots {
				want := 0
				for e := range hd {
					want += int(int8(rows[s*rb+e/32*lQ8_0.Size+lQ8_0.QS+e%32])) * int(int8(qa[i*rb+e/32*lQ8_0.Size+lQ8_0.QS+e%32]))
				}
				if got[i*Q8ColSlots+s] != float32(want) {
					t.Fatalf("%s query %d slot %d: %g, exact %d", im.name, i, s, got[i*Q8ColSlots+s], want)
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
	rows["avx2"] = rows["generic"] // no SIMD MadRows on AVX2
	rng := rand.New(rand.NewPCG(5, 6))
	for _, im := range madRowsQ8_0Op.impls {
		ref, ok := rows[im.name]
		if !ok {
			t.Fatalf("MadRowsQ8_0 %s: no MadRows to compare with", im.name)
		}
		for _, hd := range []int{32, 64, 96, 128, 160} {
			rb := hd / 32 * lQ8_0.Size
			for _, nq := range []int{1, 3, 4, 5, 7, 8} {
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
				for _, nq := range []int{1, 3, 4} {
					mustPanic(t, fmt.Sprintf("MadRowsQ8_0 %s hd=%d nq=%d offset %d", im.name, hd, nq, bad), func() {
						im.f(make([]float32, nq*hd), hd, make([]float32, nq*8), 8, v, off, nq, 8, hd, nil)
					})
				}
			}
		}
	}
}

// BenchmarkAttnQ8_0 scores four queries against nk Q8_0 keys of one
// 64-wide head in column blocks of eight heads (llama-3.2-1b's), a block
// a call as tiled attention does, and mixes as many V rows (a cache row
// of eight heads): the K and V sides of one KV head's decode step at
// depth nk.
func BenchmarkAttnQ8_0(b *testing.B) {
	const hd, heads, nq, B = 64, 8, 4, 32
	rb := hd / 32 * lQ8_0.Size
	stride := heads * rb
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nk := range []int{512, 4096} {
		k := make([]byte, nk/B*heads*hd/32*Q8ColGroup)
		for blk := range nk / B {
			cols, _ := q8ColBlock(rng, hd)
			copy(k[blk*heads*hd/32*Q8ColGroup:], cols[:hd/32*Q8ColGroup])
		}
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
				bb := heads * hd / 32 * Q8ColGroup // a block's bytes
				for j := 0; j < nk; j += B {
					ScoresQ8_0Cols(out, B, qa, rb, nq, k[j/B*bb:], 0, B, hd, k[min(j+B, nk-B)/B*bb:])
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
			for _, nq := range []int{1, 3, 4, 5, 7, 8} {
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
				for _, nq := range []int{1, 3, 4} {
					mustPanic(t, fmt.Sprintf("MadRowsF16 %s hd=%d nq=%d offset %d", im.name, hd, nq, bad), func() {
						im.f(make([]float32, nq*hd), hd, make([]float32, nq*8), 8, v, off, nq, 8, hd, nil)
					})
				}
			}
		}
	}
}
