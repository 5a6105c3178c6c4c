package quant

import (
	"fmt"

	"github.com/loom-inference/loom/internal/tensor"
)

// Layout is how one block of a quantized type is stored (ggml-common.h):
// elements and bytes per block, read from gguf's type table, and where
// each field starts, in bytes from the block's start; -1 where the type
// has no such field. This file is the one place block layouts are
// written down: the decoders, quantizers, order references and packed
// formats read their offsets from here, and TestNoLayoutLiterals fails on
// a block size written as a number anywhere else in quant or kernels.
type Layout struct {
	Elems, Size int
	D           int // the f16 block scale (f32 for Q8_K, the E8M0 exponent byte for MXFP4)
	M           int // f16: the min (Q4_1, Q5_1), dmin (K-quants), or s = d·Σq (Q8_1)
	QH          int // high bits: Q5_0/Q5_1's u32 of fifth bits, Q5_K's and Q6_K's qh, Q3_K's hmask
	QS          int // the quants (low bits)
	Scales      int // K-quants: the packed sub-block scales
	Bsums       int // Q8_K: int16 sums of each 16 quants
}

func layout(t tensor.DType, d, m, qh, qs, scales, bsums int) Layout {
	tr := t.Traits()
	return Layout{Elems: tr.BlockSize, Size: tr.TypeSize, D: d, M: m, QH: qh, QS: qs, Scales: scales, Bsums: bsums}
}

// The block types. Field order within a block is ggml's struct order.
var (
	//                                   D    M    QH   QS   Scales Bsums
	lQ4_0   = layout(tensor.Q4_0 /*  */, 0, -1, -1, 2, -1, -1)
	lQ4_1   = layout(tensor.Q4_1 /*  */, 0, 2, -1, 4, -1, -1)
	lQ5_0   = layout(tensor.Q5_0 /*  */, 0, -1, 2, 6, -1, -1)
	lQ5_1   = layout(tensor.Q5_1 /*  */, 0, 2, 4, 8, -1, -1)
	lQ8_0   = layout(tensor.Q8_0 /*  */, 0, -1, -1, 2, -1, -1)
	lQ8_1   = layout(tensor.Q8_1 /*  */, 0, 2, -1, 4, -1, -1)
	lIQ4_NL = layout(tensor.IQ4_NL /**/, 0, -1, -1, 2, -1, -1)
	lMXFP4  = layout(tensor.MXFP4 /* */, 0, -1, -1, 1, -1, -1)
	lQ2_K   = layout(tensor.Q2_K /*  */, 80, 82, -1, 16, 0, -1)
	lQ3_K   = layout(tensor.Q3_K /*  */, 108, -1, 0, 32, 96, -1)
	lQ4_K   = layout(tensor.Q4_K /*  */, 0, 2, -1, 16, 4, -1)
	lQ5_K   = layout(tensor.Q5_K /*  */, 0, 2, 16, 48, 4, -1)
	lQ6_K   = layout(tensor.Q6_K /*  */, 208, -1, 128, 0, 192, -1)
	lQ8_K   = layout(tensor.Q8_K /*  */, 0, -1, -1, 4, -1, 260)
)

var layouts = map[tensor.DType]*Layout{
	tensor.Q4_0: &lQ4_0, tensor.Q4_1: &lQ4_1, tensor.Q5_0: &lQ5_0, tensor.Q5_1: &lQ5_1,
	tensor.Q8_0: &lQ8_0, tensor.Q8_1: &lQ8_1, tensor.IQ4_NL: &lIQ4_NL, tensor.MXFP4: &lMXFP4,
	tensor.Q2_K: &lQ2_K, tensor.Q3_K: &lQ3_K, tensor.Q4_K: &lQ4_K, tensor.Q5_K: &lQ5_K,
	tensor.Q6_K: &lQ6_K, tensor.Q8_K: &lQ8_K,
}

// LayoutOf returns the block layout of a quantized type; it panics on a
// type without one (float types), which is a programming error.
func LayoutOf(t tensor.DType) Layout {
	l, ok := layouts[t]
	if !ok {
		panic(fmt.Sprintf("quant: no block layout for %s", t))
	}
	return *l
}

// Block returns block i of a row of blocks: b[i·Size : (i+1)·Size].
func (l *Layout) Block(b []byte, i int) []byte { return b[i*l.Size : (i+1)*l.Size] }

// Blocks is the number of whole blocks in n elements.
func (l *Layout) Blocks(n int) int { return n / l.Elems }
