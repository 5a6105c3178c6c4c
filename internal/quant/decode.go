package quant

import (
	"encoding/binary"

	"github.com/loom-inference/loom/internal/tensor"
)

// Block decoders: each quantized type's bit unpacking, written once and
// used by its dequantization, its reference dot product, the kernels'
// ggml order references and the packed formats.

// Block32 is one decoded 32-element block: x[e] = D·Q[e] (+ M for the
// types with a min), Q with the format's offset or codebook applied.
type Block32 struct {
	D, M float32
	Q    [32]int32
}

// Decoder32 decodes block b (one block's bytes). The block is returned by
// value: a pointer passed to a function value would escape to the heap,
// and the decoders run per block on paths that must not allocate. Fields a
// type lacks (M, Dmin, Mn) stay zero.
type Decoder32 func(b []byte) Block32

// nibbles writes Q[j] = low nibble of qs[j] and Q[j+16] = its high nibble.
func nibbles(q *[32]int32, qs []byte) {
	qs = qs[:16]
	for j, v := range qs {
		q[j], q[j+16] = int32(v&0xf), int32(v>>4)
	}
}

// fifthBits adds bit e of qh, times 16, to Q[e] (Q5_0/Q5_1).
func fifthBits(q *[32]int32, qh uint32) {
	for e := range q {
		q[e] |= int32(qh>>e&1) << 4
	}
}

func offset(q *[32]int32, off int32) {
	for e := range q {
		q[e] -= off
	}
}

func decodeQ4_0(b []byte) (k Block32) {
	k.D = f16At(b, lQ4_0.D)
	nibbles(&k.Q, b[lQ4_0.QS:])
	offset(&k.Q, 8)
	return k
}

func decodeQ4_1(b []byte) (k Block32) {
	k.D, k.M = f16At(b, lQ4_1.D), f16At(b, lQ4_1.M)
	nibbles(&k.Q, b[lQ4_1.QS:])
	return k
}

func decodeQ5_0(b []byte) (k Block32) {
	k.D = f16At(b, lQ5_0.D)
	nibbles(&k.Q, b[lQ5_0.QS:])
	fifthBits(&k.Q, binary.LittleEndian.Uint32(b[lQ5_0.QH:]))
	offset(&k.Q, 16)
	return k
}

func decodeQ5_1(b []byte) (k Block32) {
	k.D, k.M = f16At(b, lQ5_1.D), f16At(b, lQ5_1.M)
	nibbles(&k.Q, b[lQ5_1.QS:])
	fifthBits(&k.Q, binary.LittleEndian.Uint32(b[lQ5_1.QH:]))
	return k
}

func decodeQ8_0(b []byte) (k Block32) {
	k.D = f16At(b, lQ8_0.D)
	for e, v := range b[lQ8_0.QS : lQ8_0.QS+32] {
		k.Q[e] = int32(int8(v))
	}
	return k
}

func decodeIQ4NL(b []byte) (k Block32) {
	k.D = f16At(b, lIQ4_NL.D)
	nibbles(&k.Q, b[lIQ4_NL.QS:])
	for e, v := range k.Q {
		k.Q[e] = int32(kvaluesIQ4NL[v])
	}
	return k
}

// decodeMXFP4: D is the E8M0 scale 2^(e−128), Q the doubled E2M1 codes.
func decodeMXFP4(b []byte) (k Block32) {
	k.D = E8M0Half(b[lMXFP4.D])
	nibbles(&k.Q, b[lMXFP4.QS:])
	for e, v := range k.Q {
		k.Q[e] = int32(kvaluesMXFP4[v])
	}
	return k
}

var decoders32 = map[tensor.DType]Decoder32{
	tensor.Q4_0: decodeQ4_0, tensor.Q4_1: decodeQ4_1, tensor.Q5_0: decodeQ5_0,
	tensor.Q5_1: decodeQ5_1, tensor.Q8_0: decodeQ8_0, tensor.IQ4_NL: decodeIQ4NL,
	tensor.MXFP4: decodeMXFP4,
}

// Decode32 returns the decoder of a 32-element block type (nil for others).
func Decode32(t tensor.DType) Decoder32 { return decoders32[t] }

// HasMin reports whether t's values carry an additive term (x = d·q + m):
// Q4_1 and Q5_1, and the K-quants with a dmin.
func HasMin(t tensor.DType) bool { l, ok := layouts[t]; return ok && l.M >= 0 }

// BlockK is one decoded 256-element K-quant super-block: element e lies in
// sub-block s = e / Sub and x[e] = D·Sc[s]·Q[e] − Dmin·Mn[s] (Dmin and Mn
// zero for Q3_K and Q6_K), Q with the format's offset applied.
type BlockK struct {
	D, Dmin float32
	Sub     int // elements per sub-block: 16, or 32 for Q4_K and Q5_K
	Sc, Mn  [16]int32
	Q       [256]int32
}

// DecoderK decodes super-block b (by value, as Decoder32).
type DecoderK func(b []byte) BlockK

// twoBits writes Q[128j+32s+e] = bits 2s..2s+1 of qs[32j+e]: Q2_K's and
// Q3_K's low bits, four 32-element chunks per 32 bytes.
func twoBits(q *[256]int32, qs []byte) {
	for j := range 2 {
		for s := range 4 {
			for e := range 32 {
				q[128*j+32*s+e] = int32(qs[32*j+e]>>(2*s)) & 3
			}
		}
	}
}

func decodeQ2K(b []byte) (k BlockK) {
	k.D, k.Dmin, k.Sub = f16At(b, lQ2_K.D), f16At(b, lQ2_K.M), 16
	for s, v := range b[lQ2_K.Scales : lQ2_K.Scales+16] {
		k.Sc[s], k.Mn[s] = int32(v&0xf), int32(v>>4)
	}
	twoBits(&k.Q, b[lQ2_K.QS:])
	return k
}

// q3kScales unpacks Q3_K's twelve bytes of 6-bit scales (stored biased by
// 32): the low nibbles of bytes 0..7, then the 2-bit pairs of bytes 8..11.
func q3kScales(raw []byte, sc *[16]int32) {
	for s := range 16 {
		lo := raw[s%8] >> (4 * (s / 8)) & 0xf
		hi := raw[8+s%4] >> (2 * (s / 4)) & 3
		sc[s] = int32(lo|hi<<4) - 32
	}
}

func decodeQ3K(b []byte) (k BlockK) {
	k.D, k.Sub = f16At(b, lQ3_K.D), 16
	q3kScales(b[lQ3_K.Scales:], &k.Sc)
	twoBits(&k.Q, b[lQ3_K.QS:])
	hm := b[lQ3_K.QH : lQ3_K.QH+32]
	for j := range 2 {
		for s := range 4 {
			for e := range 32 {
				if hm[e]>>(4*j+s)&1 == 0 {
					k.Q[128*j+32*s+e] -= 4
				}
			}
		}
	}
	return k
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of Q4_K/Q5_K.
func scaleMinK4(j int, q []byte) (byte, byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// ScaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block's
// 12 scale bytes (ggml's get_scale_min_k4).
func ScaleMinK4(j int, q []byte) (byte, byte) { return scaleMinK4(j, q) }

// decodeK4 is Q4_K (qh < 0) or Q5_K: sub-block 2j+h holds nibble h of
// qs[32j..32j+31], plus bit 2j+h of qh[e] as 16.
func decodeK4(b []byte, l *Layout) (k BlockK) {
	k.D, k.Dmin, k.Sub = f16At(b, l.D), f16At(b, l.M), 32
	for s := range 8 {
		sc, mn := scaleMinK4(s, b[l.Scales:])
		k.Sc[s], k.Mn[s] = int32(sc), int32(mn)
	}
	qs := b[l.QS : l.QS+128]
	for j := range 4 {
		for e := range 32 {
			k.Q[64*j+e], k.Q[64*j+32+e] = int32(qs[32*j+e]&0xf), int32(qs[32*j+e]>>4)
		}
	}
	if l.QH < 0 {
		return k
	}
	qh := b[l.QH : l.QH+32]
	for j := range 4 {
		for e := range 32 {
			k.Q[64*j+e] |= int32(qh[e]>>(2*j)&1) << 4
			k.Q[64*j+32+e] |= int32(qh[e]>>(2*j+1)&1) << 4
		}
	}
	return k
}

func decodeQ4K(b []byte) BlockK { return decodeK4(b, &lQ4_K) }
func decodeQ5K(b []byte) BlockK { return decodeK4(b, &lQ5_K) }

// decodeQ6K: chunk c = 4j+i of 32 elements takes nibble i/2 of
// ql[64j+32(i%2)+e] and bits 2i..2i+1 of qh[32j+e], minus 32.
func decodeQ6K(b []byte) (k BlockK) {
	k.D, k.Sub = f16At(b, lQ6_K.D), 16
	for s, v := range b[lQ6_K.Scales : lQ6_K.Scales+16] {
		k.Sc[s] = int32(int8(v))
	}
	ql, qh := b[lQ6_K.QS:lQ6_K.QS+128], b[lQ6_K.QH:lQ6_K.QH+64]
	for j := range 2 {
		for i := range 4 {
			for e := range 32 {
				lo := ql[64*j+32*(i%2)+e] >> (4 * (i / 2)) & 0xf
				hi := qh[32*j+e] >> (2 * i) & 3
				k.Q[128*j+32*i+e] = int32(lo|hi<<4) - 32
			}
		}
	}
	return k
}

var decodersK = map[tensor.DType]DecoderK{
	tensor.Q2_K: decodeQ2K, tensor.Q3_K: decodeQ3K, tensor.Q4_K: decodeQ4K,
	tensor.Q5_K: decodeQ5K, tensor.Q6_K: decodeQ6K,
}

// DecodeK returns the decoder of a K-quant type (nil for others).
func DecodeK(t tensor.DType) DecoderK { return decodersK[t] }
