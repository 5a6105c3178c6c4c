package quant

import (
	"encoding/binary"
	"math"

	"github.com/loom-inference/loom/internal/tensor"
)

// The 32-element block formats (ggml-common.h):
//
//	Q4_0   { f16 d; u8 qs[16] }              x = d·(q-8)
//	Q4_1   { f16 d, m; u8 qs[16] }           x = d·q + m
//	Q5_0   { f16 d; u8 qh[4]; u8 qs[16] }    x = d·(q-16), q's 5th bit in qh
//	Q5_1   { f16 d, m; u8 qh[4]; u8 qs[16] } x = d·q + m
//	Q8_0   { f16 d; i8 qs[32] }              x = d·q
//	IQ4_NL { f16 d; u8 qs[16] }              x = d·kvaluesIQ4NL[q]
//	MXFP4  { u8 e; u8 qs[16] }               x = 2^(e−128)·kvaluesMXFP4[q] (mxfp4.go)
//
// Nibbles: the low nibble of qs[j] is element j, the high nibble element j+16.

const qk = 32

func f16At(b []byte, off int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[off:])) }

// kvaluesIQ4NL is the non-linear 4-bit codebook of IQ4_NL and IQ4_XS.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4NLValue is the codebook value of the 4-bit index q.
func IQ4NLValue(q byte) int8 { return kvaluesIQ4NL[q&0xf] }

// dequant32 is dequantize_row_* of a 32-element block type: y = d·q, or
// float32(d·q) + m for the types with a min (the explicit conversion stops
// Go from fusing the multiply and the add).
func dequant32(t tensor.DType) func(y []float32, x []byte) {
	l, dec, hasMin := LayoutOf(t), Decode32(t), HasMin(t)
	return func(y []float32, x []byte) {
		var k Block32
		for i := range l.Blocks(len(y)) {
			k = dec(l.Block(x, i))
			out := y[i*l.Elems : (i+1)*l.Elems]
			for e, q := range k.Q {
				if hasMin {
					out[e] = float32(float32(q)*k.D) + k.M
				} else {
					out[e] = float32(q) * k.D
				}
			}
		}
	}
}

// quantizeQ8_0 quantizes activations as ggml's AVX2 quantize_row_q8_0 does
// (the path llama.cpp takes on this CPU): d = amax/127, q = round-half-even(x·127/amax).
func quantizeQ8_0(y []byte, x []float32) { quantizeQ8(y, x, false) }

// quantizeQ8_1 is Q8_0 plus s = d·Σq, used against Q4_1/Q5_1 weights.
func quantizeQ8_1(y []byte, x []float32) { quantizeQ8(y, x, true) }

func quantizeQ8(y []byte, x []float32, withSum bool) {
	l := &lQ8_0
	if withSum {
		l = &lQ8_1
	}
	for i := range l.Blocks(len(x)) {
		v := x[i*qk : i*qk+qk]
		b := l.Block(y, i)
		var amax float32
		for _, f := range v {
			amax = max(amax, float32(math.Abs(float64(f))))
		}
		d := amax / 127
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		binary.LittleEndian.PutUint16(b[l.D:], F32ToF16(d))
		sum := 0
		for j, f := range v {
			q := int8(math.RoundToEven(float64(f * id)))
			b[l.QS+j] = byte(q)
			sum += int(q)
		}
		if withSum {
			binary.LittleEndian.PutUint16(b[l.M:], F32ToF16(d*float32(sum)))
		}
	}
}

// Dot products against Q8_0 / Q8_1 activations (ggml_vec_dot_*_q8_*):
// integer sums per block, scaled by the product of the block scales, plus
// m·s (s = d_a·Σa, stored in Q8_1) for the types with a min.
func dot32(t, act tensor.DType) func(n int, x, y []byte) float32 {
	l, dec, hasMin, al := LayoutOf(t), Decode32(t), HasMin(t), LayoutOf(act)
	return func(n int, x, y []byte) float32 {
		var sum float32
		var k Block32
		for i := range l.Blocks(n) {
			k = dec(l.Block(x, i))
			a := al.Block(y, i)
			aq := a[al.QS : al.QS+qk]
			s := 0
			for e, q := range k.Q {
				s += int(q) * int(int8(aq[e]))
			}
			if hasMin {
				sum += float32(s)*(k.D*f16At(a, al.D)) + k.M*f16At(a, al.M)
			} else {
				sum += float32(s) * (k.D * f16At(a, al.D))
			}
		}
		return sum
	}
}
