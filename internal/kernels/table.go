package kernels

import (
	"fmt"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// The type table: one row per tensor type Loom computes with, holding
// everything the kernels know about it. Sizes come from gguf's type table
// and block layouts from internal/quant (quant.LayoutOf); the plain
// references (dequantization, dot product, activation type and quantizer)
// from quant.For. Adding a type means a layout, a decoder and those
// references in quant, one row here, and its test vectors; TestTypeTable
// fails if a type quant supports has no row, or no order reference.
type typeRow struct {
	t   tensor.DType
	ref quant.Ops // the plain references
	// order is ggml's one-token summation order on the recordings'
	// machine (its AVX2 kernels for quantized types, AVX-512 for F16, BF16
	// and F32)
	// in portable Go, and batch the order llama.cpp uses for two or more
	// tokens where that differs (IQ4_NL, through llamafile's tinyBLAS).
	// They serve where this CPU has no SIMD kernel, so results stay
	// llama.cpp's bit for bit, only slower. noOrder says why a type has
	// no order reference (its plain reference is then the fallback).
	order, batch DotFunc
	noOrder      string
	// repack: llama.cpp repacks this type itself on this CPU kind, and
	// its products then sum in that layout's order.
	repack *repackOrder

	// What this CPU runs, registered by the SIMD files' init functions.
	simd   []Impl        // dot kernels, fastest last
	packed *packedFormat // the 16-row packed layout, nil without kernels
	gemm   *floatGemm    // float types: the GEMM for several tokens
}

// DotFunc is Σ x[i]·y[i] over n elements: x weights of a tensor type, y
// activations in that type's quant.Ops.ActType layout.
type DotFunc func(n int, x, y []byte) float32

// Dot4Func computes four dot products of one weight row x with the
// activation rows y, y+ystride, y+2·ystride, y+3·ystride into out[0:4],
// each bit-identical to the implementation's DotFunc: prefill shares the
// weight unpacking across tokens.
type Dot4Func func(n int, x, y []byte, ystride int, out []float32)

// Rows4Func computes one activation row y against four weight rows into
// out[0:4], each bit-identical to the implementation's DotFunc: decode
// reads four rows far apart at once, four sequential streams (rowsDo). y
// is in the ActType layout, or narrowed by the implementation's Narrow.
type Rows4Func func(n int, x0, x1, x2, x3, y []byte, out []float32)

// Impl is one implementation of a type's dot product.
type Impl struct {
	Name string
	Dot  DotFunc
	// Dot4, when set, serves batches of four tokens (prefill).
	Dot4 Dot4Func
	// Rows4, when set, serves one-token products four rows at a time.
	Rows4 Rows4Func
	// Narrow, when set, is the activation row Rows4 reads: it converts
	// one row of n elements in the ActType layout into dst[:2n], 16 bits
	// an element, exactly (F16 and BF16 activations hold values rounded
	// to those types). A product converts its row once and every worker
	// reads the copy: half the bytes in L1 beside the weight streams.
	Narrow func(dst, y []byte, n int)
	// Batch, when set, replaces Dot (and Dot4) for products of two or more
	// tokens: llama.cpp sums those in another order (llamafile's tinyBLAS)
	// for some types.
	Batch DotFunc
}

// repackOrder is a type llama.cpp repacks (its "aarch64" CPU buffer, used
// on AVX2/AVX-512 too, for mul_mat and mul_mat_id: expert matrices too):
// rowMultiple is its condition on the row count, ref the portable
// reference of its order, format this CPU's packed kernels in that order
// (nil without them), rows this CPU's kernels in that order on plain rows
// (nil without them).
type repackOrder struct {
	rowMultiple int
	ref         DotFunc
	format      *packedFormat
	rows        *Impl
}

// rowImpl is the row-at-a-time implementation of the order for type t:
// this CPU's kernels, else the portable reference.
func (ro *repackOrder) rowImpl(t tensor.DType) Impl {
	if ro.rows != nil {
		return *ro.rows
	}
	return Impl{Name: "generic " + t.String() + " repack order", Dot: ro.ref}
}

var table = buildTable(
	typeRow{t: tensor.F32, order: dotF32VecOrder, gemm: &floatGemm{name: "generic"}},
	typeRow{t: tensor.F16, order: dotF16VecOrder, gemm: &floatGemm{name: "generic"}},
	typeRow{t: tensor.BF16, order: dotBF16VecOrder, gemm: &floatGemm{name: "generic"}},
	typeRow{t: tensor.Q4_0, order: q8Order(tensor.Q4_0), repack: &repackOrder{rowMultiple: 8, ref: repackedOrder(tensor.Q4_0)}},
	typeRow{t: tensor.Q4_1, order: qx1Order(tensor.Q4_1)},
	typeRow{t: tensor.Q5_0, order: q8Order(tensor.Q5_0)},
	typeRow{t: tensor.Q5_1, order: qx1Order(tensor.Q5_1)},
	typeRow{t: tensor.Q8_0, order: q8Order(tensor.Q8_0)},
	typeRow{t: tensor.IQ4_NL, order: pairOrder(tensor.IQ4_NL), batch: dotIQ4_NLBatchOrder},
	typeRow{t: tensor.MXFP4, order: pairOrder(tensor.MXFP4), repack: &repackOrder{rowMultiple: 8, ref: repackedOrder(tensor.MXFP4)}},
	typeRow{t: tensor.Q2_K, order: kOrder(tensor.Q2_K, minsLanes)},
	typeRow{t: tensor.Q3_K, order: kOrder(tensor.Q3_K, minsNone)},
	typeRow{t: tensor.Q4_K, order: kOrder(tensor.Q4_K, minsPairs)},
	typeRow{t: tensor.Q5_K, order: kOrder(tensor.Q5_K, minsScalar)},
	typeRow{t: tensor.Q6_K, order: kOrder(tensor.Q6_K, minsNone)},
)

func buildTable(rows ...typeRow) map[tensor.DType]*typeRow {
	out := make(map[tensor.DType]*typeRow, len(rows))
	for i := range rows {
		r := &rows[i]
		ops, err := quant.For(r.t)
		if err != nil {
			panic(err) // a row for a type quant cannot compute: a programming error
		}
		r.ref = ops
		out[r.t] = r
	}
	return out
}

// rowOf returns t's row, or an error naming the type.
func rowOf(t tensor.DType) (*typeRow, error) {
	r, ok := table[t]
	if !ok {
		return nil, fmt.Errorf("tensor type %s has no kernels", t)
	}
	return r, nil
}

// Registration: the SIMD files' init functions add what this CPU runs.

func registerDot(t tensor.DType, impl Impl) { table[t].simd = append(table[t].simd, impl) }

func register(t tensor.DType, name string, f DotFunc) { registerDot(t, Impl{Name: name, Dot: f}) }

func registerBatch(t tensor.DType, name string, f, batch DotFunc) {
	registerDot(t, Impl{Name: name, Dot: f, Batch: batch})
}

func registerX4(t tensor.DType, name string, d4 Dot4Func, f DotFunc) {
	registerDot(t, Impl{Name: name, Dot: f, Dot4: d4})
}

// registerPacked gives t a packed layout: its vec_dot order, or (repack)
// the order of llama.cpp's own repacking of t.
func registerPacked(t tensor.DType, f *packedFormat, repack bool) {
	if repack {
		table[t].repack.format = f
		return
	}
	table[t].packed = f
}

func registerGemm(t tensor.DType, g *floatGemm) { table[t].gemm = g }

// registerRepackRows gives t's repack order kernels on plain rows (Dot4
// for prefill, Rows4 for one token), each bit-identical to its reference.
func registerRepackRows(t tensor.DType, impl Impl) { table[t].repack.rows = &impl }

// Impls returns every implementation of t's dot product usable here, the
// plain reference first; tests run each against the references.
func Impls(t tensor.DType) []Impl {
	r, err := rowOf(t)
	if err != nil {
		return nil
	}
	return append([]Impl{{Name: "generic", Dot: r.ref.Dot}}, r.simd...)
}

// genericDot is t's plain reference dot product (nil for a type without
// a row).
func genericDot(t tensor.DType) DotFunc {
	r, err := rowOf(t)
	if err != nil {
		return nil
	}
	return r.ref.Dot
}

// best is the row-at-a-time implementation of t: the last registered SIMD
// kernel (init order puts the fastest last), which reproduces ggml's
// order; without one (other CPUs, -tags purego) the portable order
// reference; quant's plain dot is the last resort.
func (r *typeRow) best() Impl {
	if len(r.simd) > 0 {
		return r.simd[len(r.simd)-1]
	}
	if r.order != nil {
		return Impl{Name: "generic ggml order", Dot: r.order, Batch: r.batch}
	}
	return Impl{Name: "generic", Dot: r.ref.Dot}
}
