package kernels

import (
	"encoding/binary"
	"math"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// DotFunc is Σ x[i]·y[i] over n elements: x weights of a tensor type, y
// activations in that type's quant.Ops.ActType layout.
type DotFunc func(n int, x, y []byte) float32

// Dot4Func computes four dot products of one weight row x with the
// activation rows y, y+ystride, y+2·ystride, y+3·ystride into out[0:4],
// each bit-identical to the implementation's DotFunc: prefill shares the
// weight unpacking across tokens.
type Dot4Func func(n int, x, y []byte, ystride int, out []float32)

// Impl is one registered implementation of a type's dot product.
type Impl struct {
	Name string
	Dot  DotFunc
	// Scaled: the activation row (Q8_0 blocks) is followed by a tail of
	// float32 per block, d_a, then 8·d_a·Σa (see actTail), computed once
	// per matrix product instead of once per weight row.
	Scaled bool
	// Default marks the implementation Matrix picks (see best).
	Default bool
	// Dot4, when set, serves batches of four tokens (prefill).
	Dot4 Dot4Func
}

// impls lists the fast implementations per type that this CPU supports, in
// registration order; the generic reference (internal/quant) is always
// available in addition.
var impls = map[tensor.DType][]Impl{}

func register(t tensor.DType, name string, f DotFunc) {
	impls[t] = append(impls[t], Impl{Name: name, Dot: f, Default: true})
}

func registerX4(t tensor.DType, name string, d4 Dot4Func, f DotFunc) {
	impls[t] = append(impls[t], Impl{Name: name, Dot: f, Default: true, Dot4: d4})
}

func registerScaled(t tensor.DType, name string, f DotFunc) {
	impls[t] = append(impls[t], Impl{Name: name, Dot: f, Scaled: true})
}

// Impls returns every implementation of t's dot product usable here, the
// generic reference first; tests run each against the reference.
func Impls(t tensor.DType) []Impl {
	out := []Impl{{Name: "generic", Dot: genericDot(t)}}
	return append(out, impls[t]...)
}

func genericDot(t tensor.DType) DotFunc {
	o, err := quant.For(t)
	if err != nil {
		return nil
	}
	return o.Dot
}

// best is the implementation Matrix uses: the last registered with
// Default set, else the last registered. Fidelity decides the default: the
// AVX2 kernels reproduce ggml's own summation order (llama.cpp's numbers),
// while the VNNI kernels, faster by about a third, reorder the sums across
// four accumulators, which flips greedy near-ties in the reference tests
// (TinyStories-656K Q4_0, a 0.039 logit gap). They stay registered, tested
// and benchmarked, ready for a repacked layout that restores the order.
func best(t tensor.DType) Impl {
	l := impls[t]
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].Default {
			return l[i]
		}
	}
	if len(l) > 0 {
		return l[len(l)-1]
	}
	return Impl{Name: "generic", Dot: genericDot(t)}
}

// actTailBytes is the size of the scale tail for a Q8_0 row of n elements.
func actTailBytes(n int) int { return 8 * (n / 32) }

// actTail fills the tail after a quantized Q8_0 row: d_a per block as
// float32, then 8·d_a·Σa per block (the offset term of Q4_0's products).
func actTail(row []byte, n int) {
	nb := n / 32
	tail := row[nb*34:]
	for b := range nb {
		blk := row[b*34 : b*34+34]
		d := quant.F16ToF32(uint16(blk[0]) | uint16(blk[1])<<8)
		s := 0
		for _, q := range blk[2:] {
			s += int(int8(q))
		}
		putF32(tail[4*b:], d)
		putF32(tail[4*nb+4*b:], 8*d*float32(s))
	}
}

func putF32(b []byte, f float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(f)) }
