package kernels

import "github.com/loom-inference/loom/internal/tensor"

// Tiled attention over a Q8_0 cache, a block of positions per call: the
// scores of a KV head's queries against consecutive K rows, and the
// weighted sum of V rows dequantized on the fly. Both give, bit for bit,
// what the row-at-a-time forms give (RowDot's Dot, Dequant then MadRows),
// without a call per row.

var (
	scoresQ8_0Op  = newOp("ScoresQ8_0", scoresQ8_0Generic)
	madRowsQ8_0Op = newOp("MadRowsQ8_0", madRowsQ8_0Generic)
	madRowsF16Op  = newOp("MadRowsF16", madRowsF16Generic)
	q8_0Dot       = q8Order(tensor.Q8_0)
)

// FastQ8_0 reports whether ScoresQ8_0 and MadRowsQ8_0 run SIMD kernels
// here (otherwise the row-at-a-time path is as fast).
func FastQ8_0() bool { return len(scoresQ8_0Op.impls) > 1 && len(madRowsQ8_0Op.impls) > 1 }

// FastF16Rows reports whether MadRowsF16 runs a SIMD kernel here.
func FastF16Rows() bool { return len(madRowsF16Op.impls) > 1 }

// ScoresQ8_0 scores nq queries, converted to Q8_0 activations, against n
// Q8_0 K rows of hd elements (hd a multiple of 32):
//
//	out [nq, ostride] (n used)   qa [nq, ab]   k: row j at k[j·kstride:]
//
// out[i·ostride + j] is ggml_vec_dot_q8_0_q8_0(row j, query i) in ggml's
// AVX2 order (RowDotFor(Q8_0).Dot). next, if not empty, starts the rows
// the caller reads next (the next block's, kstride apart), which the
// kernels prefetch.
func ScoresQ8_0(out []float32, ostride int, qa []byte, ab, nq int, k []byte, kstride, n, hd int, next []byte) {
	if nq <= 0 || n <= 0 || hd <= 0 {
		return
	}
	rb := hd / 32 * lQ8_0.Size
	_ = out[(nq-1)*ostride+n-1]
	_ = qa[(nq-1)*ab+rb-1]
	_ = k[(n-1)*kstride+rb-1]
	scoresQ8_0Op.run(out, ostride, qa, ab, nq, k, kstride, n, hd, next)
}

func scoresQ8_0Generic(out []float32, ostride int, qa []byte, ab, nq int, k []byte, kstride, n, hd int, _ []byte) {
	rb := hd / 32 * lQ8_0.Size
	for i := range nq {
		for j := range n {
			out[i*ostride+j] = q8_0Dot(hd, k[j*kstride:j*kstride+rb], qa[i*ab:i*ab+rb])
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
