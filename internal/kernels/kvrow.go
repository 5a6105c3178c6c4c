package kernels

import (
	"fmt"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// RowDot is how attention multiplies a query by a KV cache row stored in
// a type other than the transposed F16 layout (kvcache's row types), as
// ggml's flash attention does: the query is converted once to the row
// type's vec_dot type (q_to_vec_dot), then each row's score is that type's
// dot product (kq_vec_dot), in ggml's order; values are dequantized rows.
type RowDot struct {
	Type tensor.DType
	// Quantize converts a query [n] to the activation layout Dot takes
	// (ActBytes(n) bytes).
	Quantize func(y []byte, x []float32)
	// Dot is Σ row[i]·q[i] over n elements of one stored row; Dot4, when
	// set, four queries against one row (bit-identical to Dot each).
	Dot  DotFunc
	Dot4 Dot4Func
	// Dequant writes a stored row's n values.
	Dequant func(y []float32, x []byte)
	act     tensor.DType
}

// RowDotFor returns type t's row product: the fastest kernel here that
// keeps ggml's order.
func RowDotFor(t tensor.DType) (RowDot, error) {
	r, err := rowOf(t)
	if err != nil {
		return RowDot{}, fmt.Errorf("KV cache type %s: %w", t, err)
	}
	best := r.best()
	q, ok := actQuant[r.ref.VecDot]
	if !ok {
		return RowDot{}, fmt.Errorf("KV cache type %s: no activation quantizer for %s", t, r.ref.VecDot)
	}
	rd := RowDot{Type: t, Quantize: q.run, Dot: best.Dot, Dot4: best.Dot4, Dequant: r.ref.Dequant, act: r.ref.ActType}
	if t == tensor.Q8_0 {
		rd.Dequant = dequantQ8_0Op.run
	}
	return rd, nil
}

// ActBytes is the size of a converted query of n elements.
func (r RowDot) ActBytes(n int) int {
	b, err := tensor.RowBytes(r.act, uint64(n))
	if err != nil {
		panic(err) // n is a head width checked against the type's block when the cache was made
	}
	return int(b)
}

// QuantizeRow stores x as a row of type t the way ggml's CPU backend
// converts an F32 tensor into t (its from_float): Q8_0 as the activation
// quantizer (round to nearest even), Q4_0 by the reference quantizer, BF16
// rounded to nearest even, F16 and F32 as values. len(x) is a multiple of
// t's block.
func QuantizeRow(t tensor.DType, y []byte, x []float32) error {
	if t == tensor.Q8_0 {
		actQuant[tensor.Q8_0].run(y, x)
		return nil
	}
	return quant.Quantize(t, y, x)
}

// dequantQ8_0Op dequantizes Q8_0 rows (the quantized V cache's common
// type): y = d·q, one product per element, so every implementation gives
// the reference's bits.
var dequantQ8_0Op = newOp("DequantQ8_0", func(y []float32, x []byte) {
	if err := quant.Dequantize(tensor.Q8_0, y, x); err != nil {
		panic(err) // a cache row: whole blocks
	}
})
