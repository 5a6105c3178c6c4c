package kernels

import (
	"fmt"

	"github.com/loom-inference/loom/internal/tensor"
)

// Tiled attention over a Q8_0 cache, a block of positions per call: the
// scores of a KV head's queries against a block of keys stored in columns
// (below), and the weighted sum of V rows dequantized on the fly. Both
// give, bit for bit, what the row-at-a-time forms give (RowDot's Dot on the
// key's row, Dequant then MadRows), without a call per row.

var (
	scoresQ8_0Op  = newOp("ScoresQ8_0Cols", scoresQ8_0ColsGeneric)
	madRowsQ8_0Op = newOp("MadRowsQ8_0", madRowsQ8_0Generic)
	madRowsF16Op  = newOp("MadRowsF16", madRowsF16Generic)
	q8_0Dot       = q8Order(tensor.Q8_0)
)

// FastQ8_0 reports whether ScoresQ8_0Cols and MadRowsQ8_0 run SIMD kernels
// here (otherwise the row-at-a-time path is as fast).
func FastQ8_0() bool { return len(scoresQ8_0Op.impls) > 1 && len(madRowsQ8_0Op.impls) > 1 }

// FastF16Rows reports whether MadRowsF16 runs a SIMD kernel here.
func FastF16Rows() bool { return len(madRowsF16Op.impls) > 1 }

// Q8_0 keys in columns: how a Q8_0 key cache (kvcache) stores a block of
// Q8ColSlots positions. Each 32-element group g of the key row (one ggml
// Q8_0 block) takes Q8ColGroup bytes of the block, the groups in row
// order:
//
//	[2s, 2s+2)               slot s's scale d (F16)
//	[64 + 128j + 4s, +4)     slot s's elements 4j … 4j+3 of the group (int8)
//
// so one 64-byte load holds the same four elements of 16 positions, and
// one VPDPBUSD against a query's four bytes gives ggml's integer lane j
// (mul_sum_i8_pairs_float) for all 16: scoring needs no horizontal sum
// per position. The values are ggml's quantization; only the place of
// each byte differs from a row of blocks.
const (
	Q8ColSlots = 32
	q8ColLanes = 2 * Q8ColSlots // where lane 0 starts: after the scales
)

// q8BlockBytes bounds a stack buffer (a test checks it is lQ8_0.Size).
const q8BlockBytes = 2 + 32

// Q8ColGroup is the bytes of one group (1088; the assembly's constant).
var Q8ColGroup = Q8ColSlots * lQ8_0.Size

// PutQ8Col stores row (whole Q8_0 blocks, ggml's layout) as slot s of the
// column block blk (len(row)/34 groups).
func PutQ8Col(blk []byte, s int, row []byte) {
	for g := range len(row) / lQ8_0.Size {
		b, at := row[g*lQ8_0.Size:(g+1)*lQ8_0.Size], blk[g*Q8ColGroup:(g+1)*Q8ColGroup]
		copy(at[2*s:2*s+2], b[lQ8_0.D:lQ8_0.D+2])
		for j := range 8 {
			o := q8ColLanes + 4*Q8ColSlots*j + 4*s
			copy(at[o:o+4], b[lQ8_0.QS+4*j:lQ8_0.QS+4*j+4])
		}
	}
}

// GetQ8Col reads slot s of the column block blk back into row (whole Q8_0
// blocks, ggml's layout).
func GetQ8Col(row []byte, blk []byte, s int) {
	for g := range len(row) / lQ8_0.Size {
		b, at := row[g*lQ8_0.Size:(g+1)*lQ8_0.Size], blk[g*Q8ColGroup:(g+1)*Q8ColGroup]
		copy(b[lQ8_0.D:lQ8_0.D+2], at[2*s:2*s+2])
		for j := range 8 {
			o := q8ColLanes + 4*Q8ColSlots*j + 4*s
			copy(b[lQ8_0.QS+4*j:lQ8_0.QS+4*j+4], at[o:o+4])
		}
	}
}

// ScoresQ8_0Cols scores nq queries, converted to Q8_0 activations, against
// slots [s0, s1) of a column block of keys of hd elements (hd a multiple
// of 32; k starts at the key's group that begins the head, its hd/32
// groups consecutive):
//
//	out [nq, ostride] (s1−s0 used)   qa [nq, ab]
//
// out[i·ostride + s−s0] is ggml_vec_dot_q8_0_q8_0(key at slot s, query
// i) in ggml's AVX2 order (RowDotFor(Q8_0).Dot on the key's row). next, if
// not empty, starts the head's groups in the block the caller reads next,
// which the kernels prefetch.
func ScoresQ8_0Cols(out []float32, ostride int, qa []byte, ab, nq int, k []byte, s0, s1, hd int, next []byte) {
	if nq <= 0 || s1 <= s0 || hd <= 0 {
		return
	}
	if s0 < 0 || s1 > Q8ColSlots || hd%32 != 0 {
		panic(fmt.Sprintf("ScoresQ8_0Cols: slots [%d, %d) of %d, head width %d", s0, s1, Q8ColSlots, hd))
	}
	nb := hd / 32
	_ = out[(nq-1)*ostride+s1-s0-1]
	_ = qa[(nq-1)*ab+nb*lQ8_0.Size-1]
	_ = k[nb*Q8ColGroup-1]
	scoresQ8_0Op.run(out, ostride, qa, ab, nq, k, s0, s1, hd, next)
}

// scoresQ8_0ColsGeneric is the order reference: each key's row read back
// and scored by ggml's dot.
func scoresQ8_0ColsGeneric(out []float32, ostride int, qa []byte, ab, nq int, k []byte, s0, s1, hd int, _ []byte) {
	rb := hd / 32 * lQ8_0.Size
	var small [16 * q8BlockBytes]byte
	row := small[:]
	if rb > len(row) {
		row = make([]byte, rb)
	}
	row = row[:rb]
	for s := s0; s < s1; s++ {
		GetQ8Col(row, k, s)
		for i := range nq {
			out[i*ostride+s-s0] = q8_0Dot(hd, row, qa[i*ab:i*ab+rb])
		}
	}
}

// MadRowsQ8_0 is MadRows over nj Q8_0 rows of hd elements (a multiple of
// 32), row j at v[2·off[j]:], dequantized exactly as Dequant does:
//
//	acc [nq, as] (hd used)   w [nq, ws] (nj used)   off [nj]
//
// An offset whose row would leave v panics. next, if it holds nj offsets,
// are the rows the caller reads next, which the kernels prefetch.
func MadRowsQ8_0(acc []float32, as int, w []float32, ws int, v []byte, off []int32, nq, nj, hd int, next []int32) {
	if nq <= 0 || nj <= 0 || hd <= 0 {
		return
	}
	_ = acc[(nq-1)*as+hd-1]
	_ = w[(nq-1)*ws+nj-1]
	madRowsQ8_0Op.run(acc, as, w, ws, v, off[:nj], nq, nj, hd, next)
}

// madRowsQ8_0Generic is the order reference: madRowsGeneric's operations
// (MadF32's reference) on each dequantized value.
func madRowsQ8_0Generic(acc []float32, as int, w []float32, ws int, v []byte, off []int32, nq, nj, hd int, _ []int32) {
	rb := hd / 32 * lQ8_0.Size
	for q := range nq {
		a := acc[q*as : q*as+hd]
		for j := range nj {
			row := v[2*int(off[j]) : 2*int(off[j])+rb]
			x := w[q*ws+j]
			for e := range a {
				blk := row[e/32*lQ8_0.Size:]
				a[e] += float32(int8(blk[lQ8_0.QS+e%32])) * f16le(blk[lQ8_0.D:]) * x
			}
		}
	}
}

// MadRowsF16 is MadRows over nj F16 rows of hd elements, row j at
// v[2·off[j]:], converted exactly as F16ToF32s does; next as
// MadRowsQ8_0's.
func MadRowsF16(acc []float32, as int, w []float32, ws int, v []byte, off []int32, nq, nj, hd int, next []int32) {
	if nq <= 0 || nj <= 0 || hd <= 0 {
		return
	}
	_ = acc[(nq-1)*as+hd-1]
	_ = w[(nq-1)*ws+nj-1]
	madRowsF16Op.run(acc, as, w, ws, v, off[:nj], nq, nj, hd, next)
}

// madRowsF16Generic is the order reference: madRowsGeneric's operations
// on each converted value.
func madRowsF16Generic(acc []float32, as int, w []float32, ws int, v []byte, off []int32, nq, nj, hd int, _ []int32) {
	for q := range nq {
		a := acc[q*as : q*as+hd]
		for j := range nj {
			row := v[2*int(off[j]) : 2*int(off[j])+2*hd]
			x := w[q*ws+j]
			for e := range a {
				a[e] += f16le(row[2*e:]) * x
			}
		}
	}
}
