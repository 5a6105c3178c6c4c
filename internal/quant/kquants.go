package quant

import (
	"encoding/binary"
	"math"

	"github.com/loom-inference/loom/internal/tensor"
)

// The 256-element "k-quant" super-block formats (ggml-common.h):
//
//	Q2_K { u8 scales[16]; u8 qs[64]; f16 d, dmin }            16 sub-blocks of 16, 4-bit scale and min each
//	Q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d }    16 sub-blocks of 16, 6-bit signed scales
//	Q4_K { f16 d, dmin; u8 scales[12]; u8 qs[128] }           8 sub-blocks of 32, 6-bit scale and min
//	Q5_K { f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }
//	Q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }      16 sub-blocks of 16
//	Q8_K { f32 d; i8 qs[256]; i16 bsums[16] }                 activations only
//
// Every dequantization below follows ggml's dequantize_row_* operation for
// operation; explicit float32 conversions stop Go from fusing a multiply and
// an add, which would change the last bit.

const qkK = 256

// dequantK is dequantize_row_* of a K-quant type, operation for operation:
// per sub-block dl = d·sc and ml = dmin·m, then y = float32(dl·q) − ml,
// or dl·q for the types without a min.
func dequantK(t tensor.DType) func(y []float32, x []byte) {
	l, dec, hasMin := LayoutOf(t), DecodeK(t), HasMin(t)
	return func(y []float32, x []byte) {
		var k BlockK
		for i := range l.Blocks(len(y)) {
			k = dec(l.Block(x, i))
			out := y[i*l.Elems : (i+1)*l.Elems]
			for s := range l.Elems / k.Sub {
				dl, ml := k.D*float32(k.Sc[s]), k.Dmin*float32(k.Mn[s])
				for e := s * k.Sub; e < (s+1)*k.Sub; e++ {
					if hasMin {
						out[e] = float32(dl*float32(k.Q[e])) - ml
					} else {
						out[e] = dl * float32(k.Q[e])
					}
				}
			}
		}
	}
}

// nearestInt rounds half to even through the float32 magic-number trick of
// ggml's nearest_int (valid for |f| < 2^22).
func nearestInt(f float32) int32 {
	v := f + 12582912
	return int32(math.Float32bits(v)&0x007fffff) - 0x00400000
}

// quantizeQ8K is ggml's quantize_row_q8_K_ref (x86 uses the reference).
func quantizeQ8K(y []byte, x []float32) {
	l := &lQ8_K
	for i := range l.Blocks(len(x)) {
		v := x[i*qkK : i*qkK+qkK]
		b := l.Block(y, i)
		var mx, amax float32
		for _, f := range v {
			if a := float32(math.Abs(float64(f))); a > amax {
				amax, mx = a, f
			}
		}
		if amax == 0 {
			clear(b)
			continue
		}
		iscale := -127 / mx
		qs := b[l.QS : l.QS+qkK]
		for j, f := range v {
			qs[j] = byte(int8(min(127, nearestInt(iscale*f))))
		}
		for j := 0; j < 16; j++ {
			s := 0
			for k := 0; k < 16; k++ {
				s += int(int8(qs[16*j+k]))
			}
			binary.LittleEndian.PutUint16(b[l.Bsums+2*j:], uint16(int16(s)))
		}
		binary.LittleEndian.PutUint32(b[l.D:], math.Float32bits(1/iscale))
	}
}

// Q8KScale is a Q8_K block's float32 scale.
func Q8KScale(a []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(a[lQ8_K.D:])) }

// Q8KBsum is the j-th int16 sum of 16 quants of a Q8_K block.
func Q8KBsum(a []byte, j int) int32 {
	return int32(int16(binary.LittleEndian.Uint16(a[lQ8_K.Bsums+2*j:])))
}

// Q8KSubSum is Σ of the Q8_K block a's quants under sub-block s of sub
// elements (16 or 32): its bsums, added as int32.
func Q8KSubSum(a []byte, s, sub int) int32 {
	var v int32
	for j := s * sub / 16; j < (s+1)*sub/16; j++ {
		v += Q8KBsum(a, j)
	}
	return v
}

// dotK is ggml_vec_dot_*_q8_K's reference: isum = Σ sc·Σ q·a per sub-block
// and, for the types with a min, summs = Σ m·(the bsums of its sub-block);
// then d_y·d·isum − d_y·dmin·summs.
func dotK(t tensor.DType) func(n int, x, y []byte) float32 {
	l, dec, hasMin, al := LayoutOf(t), DecodeK(t), HasMin(t), &lQ8_K
	return func(n int, x, y []byte) float32 {
		var sum float32
		var k BlockK
		for i := range l.Blocks(n) {
			k = dec(l.Block(x, i))
			a := al.Block(y, i)
			aq := a[al.QS : al.QS+qkK]
			isum, summs := 0, 0
			for s := range qkK / k.Sub {
				p := 0
				for e := s * k.Sub; e < (s+1)*k.Sub; e++ {
					p += int(k.Q[e]) * int(int8(aq[e]))
				}
				isum += int(k.Sc[s]) * p
				summs += int(k.Mn[s]) * int(Q8KSubSum(a, s, k.Sub))
			}
			dy := Q8KScale(a)
			if hasMin {
				sum += dy*k.D*float32(isum) - dy*k.Dmin*float32(summs)
			} else {
				sum += k.D * dy * float32(isum)
			}
		}
		return sum
	}
}
