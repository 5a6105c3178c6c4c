package kernels

import (
	"encoding/binary"
	"math"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Portable references in the order of ggml's AVX2 vec_dot kernels for the
// types whose SIMD kernels follow it (Q4_1, Q5_1, Q5_K): eight float lanes,
// each accumulating fma(d, float(int32 lane sum), acc) per block, the lane
// holding elements 4k..4k+3 of every 32; the scalar min term summed with a
// fused multiply-add (GCC contracts ggml's `summs += a*b`); the result
// hsum8(acc) + summs. quant's generic dots (one float sum per block) are
// the mathematical reference; these pin llama.cpp's rounding.

func f16le(b []byte) float32 { return quant.F16ToF32(binary.LittleEndian.Uint16(b)) }

// The activation layouts the orders read.
var (
	lQ8_0 = quant.LayoutOf(tensor.Q8_0)
	lQ8_1 = quant.LayoutOf(tensor.Q8_1)
	lQ8_K = quant.LayoutOf(tensor.Q8_K)
)

// hsum8 is ggml's hsum_float_8: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
func hsum8(l *[8]float32) float32 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

// lanes4 is the eight int32 lanes of a decoded 32-element block against
// 8-bit activations aq: lane k sums q[e]·a[e] over e in 4k..4k+3.
func lanes4(k *quant.Block32, aq []byte) (s [8]int32) {
	aq = aq[:32]
	for e, a := range aq {
		s[e/4] += k.Q[e] * int32(int8(a))
	}
	return s
}

// fmaLanes is acc = fma(d, float(s), acc) per lane.
func fmaLanes(acc *[8]float32, d float32, s *[8]int32) {
	for k := range acc {
		acc[k] = FMA32(d, float32(s[k]), acc[k])
	}
}

// q8Order is ggml's AVX2 order for a 32-element block type without a min
// against Q8_0 (Q4_0, Q5_0, Q8_0): acc = fma(d_x·d_y, lanes, acc) per
// block, the result hsum8(acc).
func q8Order(t tensor.DType) DotFunc {
	l, dec := quant.LayoutOf(t), quant.Decode32(t)
	return func(n int, x, y []byte) float32 {
		var acc [8]float32
		var k quant.Block32
		for b := range l.Blocks(n) {
			k = dec(l.Block(x, b))
			a := lQ8_0.Block(y, b)
			s := lanes4(&k, a[lQ8_0.QS:])
			fmaLanes(&acc, k.D*f16le(a[lQ8_0.D:]), &s)
		}
		return hsum8(&acc)
	}
}

// qx1Order: Q4_1 or Q5_1 weights against Q8_1 (see the top of the file).
func qx1Order(t tensor.DType) DotFunc {
	l, dec := quant.LayoutOf(t), quant.Decode32(t)
	return func(n int, x, y []byte) float32 {
		var acc [8]float32
		var summs float32
		var k quant.Block32
		for b := range l.Blocks(n) {
			k = dec(l.Block(x, b))
			a := lQ8_1.Block(y, b)
			summs = FMA32(k.M, f16le(a[lQ8_1.M:]), summs)
			s := lanes4(&k, a[lQ8_1.QS:])
			fmaLanes(&acc, k.D*f16le(a[lQ8_1.D:]), &s)
		}
		return hsum8(&acc) + summs
	}
}

// kLanes: the eight int32 lanes of one decoded super-block against Q8_K
// quants aq: lane k gathers elements 4k..4k+3 of every 32-element chunk,
// times the scale of their sub-block. The sums are exact, so grouping
// them by sub-block first (ggml's Q4_K/Q5_K) gives the same lanes.
func kLanes(k *quant.BlockK, aq []byte) (s [8]int32) {
	aq = aq[:256]
	for e, a := range aq {
		s[e%32/4] += k.Sc[e/k.Sub] * k.Q[e] * int32(int8(a))
	}
	return s
}

// kMins says where a K-quant's AVX2 kernel sums its min term.
type kMins int

const (
	minsNone   kMins = iota // Q3_K, Q6_K: no min
	minsLanes               // Q2_K: into the eight lanes, before the quants
	minsPairs               // Q4_K: four lanes of sub-block pairs, added after hsum8
	minsScalar              // Q5_K: one scalar fma per super-block, added after hsum8
)

// kOrder is the AVX2 order of the K-quants (ggml_vec_dot_q*_K_q8_K): per
// super-block acc = fma(d_y·d_x, lanes, acc), the result hsum8(acc), and
// the min term (−d_y·dmin·Σ m·bsums) where mins says.
func kOrder(t tensor.DType, mins kMins) DotFunc {
	l, dec := quant.LayoutOf(t), quant.DecodeK(t)
	return func(n int, x, y []byte) float32 {
		var acc [8]float32
		var accM [4]float32
		var summs float32
		var k quant.BlockK
		for i := range l.Blocks(n) {
			k = dec(l.Block(x, i))
			a := lQ8_K.Block(y, i)
			dy := quant.Q8KScale(a)
			dmin := -dy * k.Dmin
			switch mins {
			case minsLanes: // lane j: sub-blocks 2j and 2j+1 (16 elements each)
				for j := range acc {
					m := k.Mn[2*j]*quant.Q8KBsum(a, 2*j) + k.Mn[2*j+1]*quant.Q8KBsum(a, 2*j+1)
					acc[j] = FMA32(dmin, float32(m), acc[j])
				}
			case minsPairs:
				for j := range accM {
					p := k.Mn[2*j]*quant.Q8KSubSum(a, 2*j, k.Sub) + k.Mn[2*j+1]*quant.Q8KSubSum(a, 2*j+1, k.Sub)
					accM[j] = FMA32(dmin, float32(p), accM[j])
				}
			case minsScalar:
				var h int32
				for s := range 8 {
					h += k.Mn[s] * quant.Q8KSubSum(a, s, k.Sub)
				}
				summs = FMA32(dmin, float32(h), summs)
			}
			s := kLanes(&k, a[lQ8_K.QS:])
			fmaLanes(&acc, dy*k.D, &s)
		}
		switch mins {
		case minsPairs:
			return hsum8(&acc) + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
		case minsScalar:
			return hsum8(&acc) + summs
		}
		return hsum8(&acc)
	}
}

// pairOrder is the AVX2 one-token order of the codebook types against
// Q8_0 (ggml_vec_dot_iq4_nl_q8_0, ggml_vec_dot_mxfp4_q8_0): even and odd
// blocks in two accumulators, acc = fma(d_x·d_y, lanes, acc), hsum8 of
// their sum, then a last odd block as sumf = fma(d, float(Σ), sumf).
func pairOrder(t tensor.DType) DotFunc {
	l, dec := quant.LayoutOf(t), quant.Decode32(t)
	return func(n int, x, y []byte) float32 {
		var acc [2][8]float32
		var k quant.Block32
		nb := l.Blocks(n)
		b := 0
		for ; b+1 < nb; b += 2 {
			for h := range 2 {
				a := lQ8_0.Block(y, b+h)
				k = dec(l.Block(x, b+h))
				s := lanes4(&k, a[lQ8_0.QS:])
				fmaLanes(&acc[h], f16le(a[lQ8_0.D:])*k.D, &s)
			}
		}
		var sum [8]float32
		for j := range sum {
			sum[j] = acc[0][j] + acc[1][j]
		}
		sumf := hsum8(&sum)
		for ; b < nb; b++ {
			a := lQ8_0.Block(y, b)
			k = dec(l.Block(x, b))
			s := lanes4(&k, a[lQ8_0.QS:])
			var t int32
			for _, v := range s {
				t += v
			}
			sumf = FMA32(f16le(a[lQ8_0.D:])*k.D, float32(t), sumf)
		}
		return sumf
	}
}

// dotIQ4_NLBatchOrder: two or more tokens (llamafile's tinyBLAS_Q0_AVX):
// one accumulator, acc = fma(d_w·d_a, lanes, acc) per block, then hsum8.
func dotIQ4_NLBatchOrder(n int, x, y []byte) float32 {
	var acc [8]float32
	var k quant.Block32
	for b := range lIQ4_NL.Blocks(n) {
		a := lQ8_0.Block(y, b)
		k = decIQ4_NL(lIQ4_NL.Block(x, b))
		s := lanes4(&k, a[lQ8_0.QS:])
		fmaLanes(&acc, k.D*f16le(a[lQ8_0.D:]), &s)
	}
	return hsum8(&acc)
}

var (
	lIQ4_NL   = quant.LayoutOf(tensor.IQ4_NL)
	decIQ4_NL = quant.Decode32(tensor.IQ4_NL)
)

// dotF16VecOrder: one token against F16 weights (ggml_vec_dot_f16,
// AVX-512): 64 lanes folded by halves, then the elements past the last
// multiple of 64 added in float64. y holds F16-rounded activations as
// float32, so every product is exact and only the additions round.
func dotF16VecOrder(n int, x, y []byte) float32 {
	var acc [64]float32
	np := n &^ 63
	for e := 0; e < np; e++ {
		acc[e&63] += quant.F16ToF32(binary.LittleEndian.Uint16(x[2*e:])) * f32le(y[4*e:])
	}
	return f16VecTail(laneSum(acc[:]), x, y, np, n)
}

// f16VecTail finishes ggml_vec_dot_f16 from the folded lanes s: elements
// np..n-1 added one by one in float64.
func f16VecTail(s float32, x, y []byte, np, n int) float32 {
	if np == n {
		return s
	}
	sum := float64(s)
	for e := np; e < n; e++ {
		sum += float64(quant.F16ToF32(binary.LittleEndian.Uint16(x[2*e:])) * f32le(y[4*e:]))
	}
	return float32(sum)
}

// f16VecTailNarrow is f16VecTail on an activation row narrowed to F16
// (Impl.Narrow): the same values, so the same sum.
func f16VecTailNarrow(s float32, x, y []byte, np, n int) float32 {
	if np == n {
		return s
	}
	sum := float64(s)
	for e := np; e < n; e++ {
		sum += float64(quant.F16ToF32(binary.LittleEndian.Uint16(x[2*e:])) * quant.F16ToF32(binary.LittleEndian.Uint16(y[2*e:])))
	}
	return float32(sum)
}

// dotF32VecOrder: one token against F32 weights (ggml_vec_dot_f32,
// AVX-512): 64 lanes of fused multiply-adds folded by halves, then the
// elements past the last multiple of 64 (f32VecTail).
func dotF32VecOrder(n int, x, y []byte) float32 {
	var acc [64]float32
	np := n &^ 63
	for e := 0; e < np; e++ {
		acc[e&63] = FMA32(f32le(x[4*e:]), f32le(y[4*e:]), acc[e&63])
	}
	return f32VecTail(laneSum(acc[:]), x, y, np, n)
}

// f32VecTail finishes ggml_vec_dot_f32 from the folded lanes s: elements
// np..n-1 as s = fma(x, y, s) (GCC contracts ggml's `sumf += x[i]*y[i]`).
func f32VecTail(s float32, x, y []byte, np, n int) float32 {
	for e := np; e < n; e++ {
		s = FMA32(f32le(x[4*e:]), f32le(y[4*e:]), s)
	}
	return s
}

func f32le(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
