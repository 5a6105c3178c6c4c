package kernels

import (
	"fmt"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Vector operations. Each has a portable reference, registered first as
// "generic", and the SIMD implementations this CPU has, registered by the
// init functions of the *_amd64.go files; the last registered runs. The
// exported functions call the selected one; tests range over every
// registered implementation and check it against the reference.

// vecOp is one operation and its implementations.
type vecOp[F any] struct {
	name  string
	impls []named[F] // the portable reference first
	run   F
}

type named[F any] struct {
	name string
	f    F
}

func newOp[F any](name string, generic F) *vecOp[F] {
	return &vecOp[F]{name: name, impls: []named[F]{{"generic", generic}}, run: generic}
}

// register adds an implementation and selects it.
func (o *vecOp[F]) register(name string, f F) {
	o.impls = append(o.impls, named[F]{name, f})
	o.run = f
}

// use selects the implementation called name (tests and benchmarks) and
// returns a function that restores the previous selection.
func (o *vecOp[F]) use(name string) (restore func(), err error) {
	for _, im := range o.impls {
		if im.name == name {
			prev := o.run
			o.run = im.f
			return func() { o.run = prev }, nil
		}
	}
	return nil, fmt.Errorf("%s: no implementation %q", o.name, name)
}

var (
	scaleMul  = newOp("ScaleMul", scaleMulGeneric)
	sumSq     = newOp("SumSquares", sumSquaresGeneric)
	addTo     = newOp("AddTo", addToGeneric)
	siLUMul   = newOp("SiLUMul", siLUMulGeneric)
	expSum    = newOp("ExpSum", expSumGeneric)
	ropeNorm  = newOp("RopeNorm", ropeNormGeneric)
	ropeNeoX  = newOp("RopeNeoX", ropeNeoXGeneric)
	f32ToF16s = newOp("F32ToF16s", f32ToF16sGeneric)
	roundF16s = newOp("RoundF16s", roundF16sGeneric)
	scaleMax  = newOp("ScaleMax", scaleMaxGeneric)
	scaleRF16 = newOp("ScaleRoundF16", scaleRoundF16Generic)
	f16ToF32s = newOp("F16ToF32s", f16ToF32sGeneric)
	scoresF16 = newOp("ScoresF16", scoresF16Generic)
	mixF16    = newOp("MixF16", mixF16Generic)
)

// actQuant converts float32 activations for a vec_dot type (quant.Ops:
// VecDot, stored as ActType), per vec_dot type: quant's reference
// quantizer first, SIMD versions (same bytes) after.
var actQuant = map[tensor.DType]*vecOp[func(y []byte, x []float32)]{}

func init() {
	for _, t := range quant.Types() {
		o, _ := quant.For(t)
		if actQuant[o.VecDot] == nil {
			actQuant[o.VecDot] = newOp("activations for "+o.VecDot.String(), o.QuantizeAct)
		}
	}
}

// ScaleMul computes out[i] = x[i]·s·w[i] (see elementwise.go).
func ScaleMul(out, x, w []float32, s float32) { scaleMul.run(out, x, w, s) }

// SumSquares returns Σ float64(v·v) over each row of x in element order,
// for up to eight rows of dim elements (see sumSquaresGeneric); the rest
// of the array, and all of it for dim ≤ 0, is zero.
//
//	x [rows ≤ 8, dim]
func SumSquares(x []float32, dim int) [8]float64 { return sumSq.run(x, dim) }

// AddTo adds y to x elementwise.
func AddTo(x, y []float32) { addTo.run(x, y) }

// SiLUMul computes gate[i] = silu(gate[i])·up[i] (see expf.go).
func SiLUMul(gate, up []float32) { siLUMul.run(gate, up) }

// ExpSum writes y[i] = e^(x[i]−max) and returns Σ y[i] (see expf.go).
func ExpSum(y, x []float32, max float32) float64 { return expSum.run(y, x, max) }

// RopeNorm rotates the pairs (x[2i], x[2i+1]) of x by the angles whose
// cosine and sine are cs[2i] and cs[2i+1] (GGUF/Llama order), len(cs) =
// len(x); rope.go says how ggml rounds it.
func RopeNorm(x, cs []float32) { ropeNorm.run(x, cs) }

// RopeNeoX rotates the pairs (x[i], x[i+h]), h = len(x)/2, by the angles
// whose cosine and sine are c[i] and s[i] (rotate-half order).
func RopeNeoX(x, c, s []float32) { ropeNeoX.run(x, c, s) }

// F32ToF16s converts src to F16 bits in dst, rounding to nearest even.
func F32ToF16s(dst []uint16, src []float32) { f32ToF16s.run(dst, src) }

// RoundF16s rounds x to F16 precision in place (nearest even), as ggml's
// F32 → F16 → F32 round trip does (attention's queries and weights).
func RoundF16s(x []float32) { roundF16s.run(x) }

// ScaleMax multiplies x by s in place and returns the largest product
// (−∞ for an empty x): softmax's first pass.
func ScaleMax(x []float32, s float32) float32 { return scaleMax.run(x, s) }

// ScaleRoundF16 sets x[i] = RoundF16(x[i]·s): softmax's normalization and
// the F16 rounding of attention weights in one pass.
func ScaleRoundF16(x []float32, s float32) { scaleRF16.run(x, s) }

// F16ToF32s converts len(dst) little-endian F16 values in src to float32
// (exactly: every F16 value is a float32).
func F16ToF32s(dst []float32, src []byte) { f16ToF32s.run(dst, src) }

// ScoresF16 computes attention scores against F16 keys (see attn.go).
func ScoresF16(out, q []float32, kT []uint16, off []int32, o AttnOrder) {
	scoresF16.run(out, q, kT, off, o)
}

// MixF16 mixes F16 values by the probabilities p (see attn.go).
func MixF16(out, p []float32, v []uint16, off []int32, nkv int, o AttnOrder) {
	mixF16.run(out, p, v, off, nkv, o)
}
