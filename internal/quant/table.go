package quant

import (
	"fmt"
	"slices"

	"github.com/loom-inference/loom/internal/tensor"
)

// Ops are the scalar reference operations of one weight type.
type Ops struct {
	// Dequant writes len(y) values from the blocks in x (len(y) a multiple of the block size).
	Dequant func(y []float32, x []byte)
	// VecDot is the type activations are converted to before a dot product
	// with this weight type: ggml's vec_dot_type. Quantized weights use 8-bit
	// activations (Q8_0/Q8_1/Q8_K) like llama.cpp, so the integer dot products
	// match its numbers and 8-bit SIMD products become possible; float weights
	// use activations of their own type.
	VecDot tensor.DType
	// Dot returns Σ x[i]·y[i] over n elements; x holds weights of this type,
	// y activations as ActType.
	Dot func(n int, x, y []byte) float32
	// ActType is how activations are stored for Dot: VecDot itself, except
	// for F16/BF16 weights, whose activations are rounded to VecDot but kept
	// as float32 so each is converted once per matrix product, not per row.
	ActType tensor.DType
	// QuantizeAct converts float32 activations to ActType.
	QuantizeAct func(y []byte, x []float32)
}

var ops = map[tensor.DType]Ops{
	tensor.F32:    {dequantF32, tensor.F32, dotF32, tensor.F32, quantizeF32},
	tensor.F16:    {dequantF16, tensor.F16, dotF16F32, tensor.F32, roundF16F32},
	tensor.BF16:   {dequantBF16, tensor.BF16, dotBF16F32, tensor.F32, roundBF16F32},
	tensor.Q4_0:   legacy(tensor.Q4_0, tensor.Q8_0),
	tensor.Q4_1:   legacy(tensor.Q4_1, tensor.Q8_1),
	tensor.Q5_0:   legacy(tensor.Q5_0, tensor.Q8_0),
	tensor.Q5_1:   legacy(tensor.Q5_1, tensor.Q8_1),
	tensor.Q8_0:   legacy(tensor.Q8_0, tensor.Q8_0),
	tensor.IQ4_NL: legacy(tensor.IQ4_NL, tensor.Q8_0),
	tensor.MXFP4:  legacy(tensor.MXFP4, tensor.Q8_0),
	tensor.Q2_K:   kquant(tensor.Q2_K),
	tensor.Q3_K:   kquant(tensor.Q3_K),
	tensor.Q4_K:   kquant(tensor.Q4_K),
	tensor.Q5_K:   kquant(tensor.Q5_K),
	tensor.Q6_K:   kquant(tensor.Q6_K),
}

// legacy is the row of a 32-element block type against 8-bit activations
// of type act (Q8_1 for the types with a min, whose dot needs Σa).
func legacy(t, act tensor.DType) Ops { return quantized(dequant32(t), act, dot32(t, act)) }

// kquant is the row of a K-quant type: Q8_K activations.
func kquant(t tensor.DType) Ops { return quantized(dequantK(t), tensor.Q8_K, dotK(t)) }

// quantized is the row of a quantized weight type: activations are stored
// as the vec_dot type itself, quantized by its activation quantizer.
func quantized(dequant func(y []float32, x []byte), vecDot tensor.DType, dot func(n int, x, y []byte) float32) Ops {
	return Ops{Dequant: dequant, VecDot: vecDot, Dot: dot, ActType: vecDot, QuantizeAct: quantizers[vecDot]}
}

// quantizers convert float32 activations to a vec_dot type.
var quantizers = map[tensor.DType]func(y []byte, x []float32){
	tensor.F32:  quantizeF32,
	tensor.F16:  quantizeF16,
	tensor.BF16: quantizeBF16,
	tensor.Q8_0: quantizeQ8_0,
	tensor.Q8_1: quantizeQ8_1,
	tensor.Q8_K: quantizeQ8K,
}

// For returns the reference operations of t, or an error naming the type.
func For(t tensor.DType) (Ops, error) {
	o, ok := ops[t]
	if !ok {
		return Ops{}, fmt.Errorf("tensor type %s is not supported for computation", t)
	}
	return o, nil
}

// Supported reports whether Loom can compute with weights of type t.
func Supported(t tensor.DType) bool { _, ok := ops[t]; return ok }

// Dequantize converts n values of type t to float32.
func Dequantize(t tensor.DType, y []float32, x []byte) error {
	o, err := For(t)
	if err != nil {
		return err
	}
	need, err := tensor.RowBytes(t, uint64(len(y)))
	if err != nil {
		return err
	}
	if uint64(len(x)) < need {
		return fmt.Errorf("quant: %d bytes of %s hold fewer than %d values", len(x), t, len(y))
	}
	o.Dequant(y, x)
	return nil
}

// Types lists the weight types Loom computes with, in type-id order.
func Types() []tensor.DType {
	out := make([]tensor.DType, 0, len(ops))
	for t := range ops {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
