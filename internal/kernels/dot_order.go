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

// portableOrders are the order references Matrix uses where this CPU has
// no SIMD kernel for a type (see best): one-token dot and, where llama.cpp
// sums batches differently, the batch dot. F16 and F32 follow the AVX-512
// build's one-token order, the recordings' machine.
var portableOrders = map[tensor.DType]struct{ dot, batch DotFunc }{
	tensor.Q8_0:   {dot: dotQ8_0Order},
	tensor.Q4_0:   {dot: dotQ4_0Order},
	tensor.Q5_0:   {dot: dotQ5_0Order},
	tensor.Q4_1:   {dot: dotQ4_1Order},
	tensor.Q5_1:   {dot: dotQ5_1Order},
	tensor.IQ4_NL: {dot: dotIQ4_NLOrder, batch: dotIQ4_NLBatchOrder},
	tensor.Q2_K:   {dot: dotQ2_KOrder},
	tensor.Q3_K:   {dot: dotQ3_KOrder},
	tensor.Q4_K:   {dot: dotQ4_KOrder},
	tensor.Q5_K:   {dot: dotQ5_KOrder},
	tensor.Q6_K:   {dot: dotQ6_KOrder},
	tensor.F16:    {dot: dotF16VecOrder},
	tensor.F32:    {dot: dotF32VecOrder},
}

func f16le(b []byte) float32 { return quant.F16ToF32(binary.LittleEndian.Uint16(b)) }

// hsum8 is ggml's hsum_float_8: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
func hsum8(l *[8]float32) float32 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

// lanes4 adds to lane k the Σ of w[e]·a[e] over e in 4k..4k+3 (32 elements).
func lanes4(s *[8]int32, w []int32, a []byte) {
	for e := range 32 {
		s[e/4] += w[e] * int32(int8(a[e]))
	}
}

// dotQx1Order: Q4_1 (bits5 false) or Q5_1 weights against Q8_1.
func dotQx1Order(n int, x, y []byte, bits5 bool) float32 {
	var acc [8]float32
	var summs float32
	bs, qo := 20, 4
	if bits5 {
		bs, qo = 24, 8
	}
	var w [32]int32
	for b := 0; b < n/32; b++ {
		blk, a := x[b*bs:b*bs+bs], y[b*36:b*36+36]
		summs = FMA32(f16le(blk[2:]), f16le(a[2:]), summs)
		var qh uint32
		if bits5 {
			qh = binary.LittleEndian.Uint32(blk[4:])
		}
		for j := range 16 {
			w[j] = int32(blk[qo+j] & 0xf)
			w[j+16] = int32(blk[qo+j] >> 4)
		}
		if bits5 {
			for e := range 32 {
				w[e] |= int32(qh>>e&1) << 4
			}
		}
		var s [8]int32
		lanes4(&s, w[:], a[4:36])
		d := f16le(blk) * f16le(a)
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc) + summs
}

func dotQ4_1Order(n int, x, y []byte) float32 { return dotQx1Order(n, x, y, false) }
func dotQ5_1Order(n int, x, y []byte) float32 { return dotQx1Order(n, x, y, true) }

// k4Lanes: the eight int32 lanes of a Q4_K (qh nil) or Q5_K super-block
// against Q8_K: sub-block 2j+h holds nibble h of ql[32j..32j+31] (plus
// bit 2j+h of qh as 16), times its scale.
func k4Lanes(ql, qh []byte, sc *[8]int32, a []byte) (s [8]int32) {
	var w [32]int32
	for j := range 4 {
		for half := range 2 {
			bit := uint(2*j + half)
			for e := range 32 {
				q := ql[32*j+e] >> (4 * half) & 0xf
				w[e] = int32(q)
				if qh != nil {
					w[e] |= int32(qh[e]>>bit&1) << 4
				}
			}
			var t [8]int32
			lanes4(&t, w[:], a[4+64*j+32*half:])
			for k := range s {
				s[k] += sc[2*j+half] * t[k]
			}
		}
	}
	return s
}

// dotQ5_KOrder: Q5_K against Q8_K (ggml_vec_dot_q5_K_q8_K, AVX2).
func dotQ5_KOrder(n int, x, y []byte) float32 {
	var acc [8]float32
	var summs float32
	for i := 0; i < n/256; i++ {
		blk, a := x[i*176:i*176+176], y[i*292:i*292+292]
		dy := math.Float32frombits(binary.LittleEndian.Uint32(a))
		d := dy * f16le(blk)
		dmin := -dy * f16le(blk[2:])
		scales, qh, ql := blk[4:16], blk[16:48], blk[48:176]
		h := int32(0)
		var sc [8]int32
		for k := range 8 {
			s, m := quant.ScaleMinK4(k, scales)
			sc[k] = int32(s)
			bs := int32(int16(binary.LittleEndian.Uint16(a[260+4*k:]))) + int32(int16(binary.LittleEndian.Uint16(a[262+4*k:])))
			h += int32(m) * bs
		}
		summs = FMA32(dmin, float32(h), summs)
		s := k4Lanes(ql, qh, &sc, a)
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc) + summs
}

// kLanes adds the eight lanes of one 256-element super-block with 16-element
// sub-blocks (Q2_K, Q3_K): lane k gathers elements 4k..4k+3 of every
// 32-element chunk c, times the scale of their sub-block (2c + k/4).
func kLanes(s *[8]int32, q *[256]int32, sc *[16]int32, a []byte) {
	for c := range 8 {
		for e := range 32 {
			s[e/4] += sc[2*c+e/16] * q[32*c+e] * int32(int8(a[32*c+e]))
		}
	}
}

// dotQ2_KOrder: Q2_K against Q8_K (ggml_vec_dot_q2_K_q8_K, AVX2): per
// super-block acc = fma(−d_y·dmin_x, mins·bsums lanes, acc), then acc =
// fma(d_y·d_x, lanes, acc); the result hsum8(acc).
func dotQ2_KOrder(n int, x, y []byte) float32 {
	var acc [8]float32
	var q [256]int32
	var sc [16]int32
	for i := 0; i < n/256; i++ {
		blk, a := x[i*84:i*84+84], y[i*292:i*292+292]
		dy := math.Float32frombits(binary.LittleEndian.Uint32(a))
		d := dy * f16le(blk[80:])
		dmin := -dy * f16le(blk[82:])
		for k := range 8 {
			var m int32
			for h := range 2 {
				m += int32(blk[2*k+h]>>4) * int32(int16(binary.LittleEndian.Uint16(a[260+4*k+2*h:])))
			}
			acc[k] = FMA32(dmin, float32(m), acc[k])
		}
		for k := range 16 {
			sc[k] = int32(blk[k] & 0xf)
		}
		for j := range 2 {
			for l := range 4 {
				for e := range 32 {
					q[128*j+32*l+e] = int32(blk[16+32*j+e]>>(2*l)) & 3
				}
			}
		}
		var s [8]int32
		kLanes(&s, &q, &sc, a[4:260])
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc)
}

// dotQ3_KOrder: Q3_K against Q8_K (ggml_vec_dot_q3_K_q8_K, AVX2): acc =
// fma(d_y·d_x, lanes, acc) per super-block; the result hsum8(acc).
func dotQ3_KOrder(n int, x, y []byte) float32 {
	var acc [8]float32
	var q [256]int32
	var sc [16]int32
	for i := 0; i < n/256; i++ {
		blk, a := x[i*110:i*110+110], y[i*292:i*292+292]
		d := math.Float32frombits(binary.LittleEndian.Uint32(a)) * f16le(blk[108:])
		hm, qs, raw := blk[0:32], blk[32:96], blk[96:108]
		for k := range 16 {
			lo := raw[k%8] >> (4 * (k / 8)) & 0xf
			hi := raw[8+k%4] >> (2 * (k / 4)) & 3
			sc[k] = int32(lo|hi<<4) - 32
		}
		for j := range 2 {
			for l := range 4 {
				for e := range 32 {
					v := int32(qs[32*j+e]>>(2*l)) & 3
					if hm[e]>>(4*j+l)&1 == 0 {
						v -= 4
					}
					q[128*j+32*l+e] = v
				}
			}
		}
		var s [8]int32
		kLanes(&s, &q, &sc, a[4:260])
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc)
}

// iq4nlLanes: the eight int32 lanes of one IQ4_NL block against Q8_0.
func iq4nlLanes(blk, a []byte) (s [8]int32) {
	var w [32]int32
	for j := range 16 {
		w[j] = int32(quant.IQ4NLValue(blk[2+j] & 0xf))
		w[j+16] = int32(quant.IQ4NLValue(blk[2+j] >> 4))
	}
	lanes4(&s, w[:], a[2:34])
	return s
}

// dotIQ4_NLOrder: one token (ggml_vec_dot_iq4_nl_q8_0, AVX2): even and odd
// blocks in two accumulators, hsum8 of their sum, then a last odd block as
// sumf = fma(d, float(Σ), sumf).
func dotIQ4_NLOrder(n int, x, y []byte) float32 {
	var acc [2][8]float32
	nb := n / 32
	b := 0
	for ; b+1 < nb; b += 2 {
		for h := range 2 {
			blk, a := x[(b+h)*18:(b+h)*18+18], y[(b+h)*34:(b+h)*34+34]
			s := iq4nlLanes(blk, a)
			d := f16le(a) * f16le(blk)
			for k := range 8 {
				acc[h][k] = FMA32(d, float32(s[k]), acc[h][k])
			}
		}
	}
	var sum [8]float32
	for k := range sum {
		sum[k] = acc[0][k] + acc[1][k]
	}
	sumf := hsum8(&sum)
	for ; b < nb; b++ {
		blk, a := x[b*18:b*18+18], y[b*34:b*34+34]
		s := iq4nlLanes(blk, a)
		var t int32
		for _, v := range s {
			t += v
		}
		sumf = FMA32(f16le(a)*f16le(blk), float32(t), sumf)
	}
	return sumf
}

// dotIQ4_NLBatchOrder: two or more tokens (llamafile's tinyBLAS_Q0_AVX):
// one accumulator, acc = fma(d_w·d_a, lanes, acc) per block, then hsum8.
func dotIQ4_NLBatchOrder(n int, x, y []byte) float32 {
	var acc [8]float32
	for b := 0; b < n/32; b++ {
		blk, a := x[b*18:b*18+18], y[b*34:b*34+34]
		s := iq4nlLanes(blk, a)
		d := f16le(blk) * f16le(a)
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc)
}

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

// q8Order is ggml's AVX2 order for a 32-element block type against Q8_0:
// acc = fma(d_x·d_y, lanes, acc) per block, the result hsum8(acc). w
// writes the block's 32 signed weights (without the scale).
func q8Order(n int, x, y []byte, bs int, w func(blk []byte) [32]int32) float32 {
	var acc [8]float32
	for b := 0; b < n/32; b++ {
		blk, a := x[b*bs:b*bs+bs], y[b*34:b*34+34]
		q := w(blk) // by value: a pointer through a func value would escape
		var s [8]int32
		lanes4(&s, q[:], a[2:34])
		d := f16le(blk) * f16le(a)
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc)
}

func dotQ8_0Order(n int, x, y []byte) float32 {
	return q8Order(n, x, y, 34, func(blk []byte) (q [32]int32) {
		for e := range 32 {
			q[e] = int32(int8(blk[2+e]))
		}
		return q
	})
}

func dotQ4_0Order(n int, x, y []byte) float32 {
	return q8Order(n, x, y, 18, func(blk []byte) (q [32]int32) {
		for j := range 16 {
			q[j] = int32(blk[2+j]&0xf) - 8
			q[j+16] = int32(blk[2+j]>>4) - 8
		}
		return q
	})
}

func dotQ5_0Order(n int, x, y []byte) float32 {
	return q8Order(n, x, y, 22, func(blk []byte) (q [32]int32) {
		qh := binary.LittleEndian.Uint32(blk[2:])
		for j := range 16 {
			q[j] = int32(blk[6+j]&0xf|byte(qh>>j&1)<<4) - 16
			q[j+16] = int32(blk[6+j]>>4|byte(qh>>(j+16)&1)<<4) - 16
		}
		return q
	})
}

// dotQ4_KOrder: Q4_K against Q8_K (ggml's AVX2 kernel): the min term in
// four lanes, acc_m = fma(−d_y·dmin_x, mins·bsum pairs, acc_m); acc =
// fma(d_y·d_x, lanes, acc); the result hsum8(acc) + ((m0+m2) + (m1+m3)).
func dotQ4_KOrder(n int, x, y []byte) float32 {
	var acc [8]float32
	var accM [4]float32
	for i := 0; i < n/256; i++ {
		blk, a := x[i*144:i*144+144], y[i*292:i*292+292]
		dy := math.Float32frombits(binary.LittleEndian.Uint32(a))
		d := dy * f16le(blk)
		dmin := -dy * f16le(blk[2:])
		scales, ql := blk[4:16], blk[16:144]
		var sc, mn [8]int32
		for k := range 8 {
			s, m := quant.ScaleMinK4(k, scales)
			sc[k], mn[k] = int32(s), int32(m)
		}
		bsum := func(k int) int32 {
			return int32(int16(binary.LittleEndian.Uint16(a[260+4*k:]))) + int32(int16(binary.LittleEndian.Uint16(a[262+4*k:])))
		}
		for i := range accM {
			p := mn[2*i]*bsum(2*i) + mn[2*i+1]*bsum(2*i+1)
			accM[i] = FMA32(dmin, float32(p), accM[i])
		}
		s := k4Lanes(ql, nil, &sc, a)
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc) + ((accM[0] + accM[2]) + (accM[1] + accM[3]))
}

// dotQ6_KOrder: Q6_K against Q8_K (ggml's AVX2 kernel): acc = fma(d_y·d_x,
// lanes, acc) per super-block, 16-element sub-blocks with int8 scales.
func dotQ6_KOrder(n int, x, y []byte) float32 {
	var acc [8]float32
	var q [256]int32
	var sc [16]int32
	for i := 0; i < n/256; i++ {
		blk, a := x[i*210:i*210+210], y[i*292:i*292+292]
		d := math.Float32frombits(binary.LittleEndian.Uint32(a)) * f16le(blk[208:])
		ql, qh := blk[0:128], blk[128:192]
		for k := range 16 {
			sc[k] = int32(int8(blk[192+k]))
		}
		for j := range 2 {
			for e := range 32 {
				h := qh[32*j+e]
				q[128*j+e] = int32(ql[64*j+e]&0xf|(h&3)<<4) - 32
				q[128*j+32+e] = int32(ql[64*j+32+e]&0xf|(h>>2&3)<<4) - 32
				q[128*j+64+e] = int32(ql[64*j+e]>>4|(h>>4&3)<<4) - 32
				q[128*j+96+e] = int32(ql[64*j+32+e]>>4|(h>>6&3)<<4) - 32
			}
		}
		var s [8]int32
		kLanes(&s, &q, &sc, a[4:260])
		for k := range acc {
			acc[k] = FMA32(d, float32(s[k]), acc[k])
		}
	}
	return hsum8(&acc)
}
