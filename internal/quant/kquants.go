package quant

import (
	"encoding/binary"
	"math"
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

func dequantQ2K(y []float32, x []byte) {
	for i := 0; i < len(y)/qkK; i++ {
		b := x[i*84 : i*84+84]
		scales, q := b[0:16], b[16:80]
		d, dmin := f16At(b, 80), f16At(b, 82)
		out := y[i*qkK:]
		is, o := 0, 0
		for n := 0; n < qkK; n += 128 {
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					sc := scales[is]
					is++
					dl, ml := d*float32(sc&0xf), dmin*float32(sc>>4)
					for l := 0; l < 16; l++ {
						out[o] = float32(dl*float32((q[l+16*half]>>shift)&3)) - ml
						o++
					}
				}
			}
			q = q[32:]
		}
	}
}

// q3kScales unpacks Q3_K's twelve bytes of packed 6-bit scales into sixteen
// signed values (stored biased by 32).
func q3kScales(s []byte) [16]int8 {
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	a0 := binary.LittleEndian.Uint32(s[0:])
	a1 := binary.LittleEndian.Uint32(s[4:])
	tmp := binary.LittleEndian.Uint32(s[8:])
	aux := [4]uint32{
		(a0 & kmask2) | ((tmp>>0)&kmask1)<<4,
		(a1 & kmask2) | ((tmp>>2)&kmask1)<<4,
		((a0 >> 4) & kmask2) | ((tmp>>4)&kmask1)<<4,
		((a1 >> 4) & kmask2) | ((tmp>>6)&kmask1)<<4,
	}
	var out [16]int8
	for i, a := range aux {
		for k := 0; k < 4; k++ {
			out[4*i+k] = int8(byte(a>>(8*k))) - 32
		}
	}
	return out
}

func dequantQ3K(y []float32, x []byte) {
	for i := 0; i < len(y)/qkK; i++ {
		b := x[i*110 : i*110+110]
		hm, q := b[0:32], b[32:96]
		sc := q3kScales(b[96:108])
		d := f16At(b, 108)
		out := y[i*qkK:]
		is, o := 0, 0
		m := byte(1)
		for n := 0; n < qkK; n += 128 {
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					dl := d * float32(sc[is])
					is++
					for l := 16 * half; l < 16*half+16; l++ {
						v := int8((q[l] >> shift) & 3)
						if hm[l]&m == 0 {
							v -= 4
						}
						out[o] = dl * float32(v)
						o++
					}
				}
				m <<= 1
			}
			q = q[32:]
		}
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of Q4_K/Q5_K.
func scaleMinK4(j int, q []byte) (byte, byte) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

func dequantQ4K(y []float32, x []byte) {
	for i := 0; i < len(y)/qkK; i++ {
		b := x[i*144 : i*144+144]
		d, dmin := f16At(b, 0), f16At(b, 2)
		scales, q := b[4:16], b[16:144]
		out := y[i*qkK:]
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			d1, mm1 := d*float32(sc1), dmin*float32(m1)
			d2, mm2 := d*float32(sc2), dmin*float32(m2)
			qq := q[32*j : 32*j+32]
			for l := 0; l < 32; l++ {
				out[64*j+l] = float32(d1*float32(qq[l]&0xf)) - mm1
				out[64*j+32+l] = float32(d2*float32(qq[l]>>4)) - mm2
			}
		}
	}
}

func dequantQ5K(y []float32, x []byte) {
	for i := 0; i < len(y)/qkK; i++ {
		b := x[i*176 : i*176+176]
		d, dmin := f16At(b, 0), f16At(b, 2)
		scales, qh, ql := b[4:16], b[16:48], b[48:176]
		out := y[i*qkK:]
		u1, u2 := byte(1), byte(2)
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			d1, mm1 := d*float32(sc1), dmin*float32(m1)
			d2, mm2 := d*float32(sc2), dmin*float32(m2)
			qq := ql[32*j : 32*j+32]
			for l := 0; l < 32; l++ {
				lo, hi := qq[l]&0xf, qq[l]>>4
				if qh[l]&u1 != 0 {
					lo += 16
				}
				if qh[l]&u2 != 0 {
					hi += 16
				}
				out[64*j+l] = float32(d1*float32(lo)) - mm1
				out[64*j+32+l] = float32(d2*float32(hi)) - mm2
			}
			u1 <<= 2
			u2 <<= 2
		}
	}
}

// q6k returns the four 6-bit values (minus 32) that share ql/qh bytes at l.
func q6k(ql, qh []byte, l int) (int8, int8, int8, int8) {
	q1 := int8(ql[l]&0xf|((qh[l]>>0)&3)<<4) - 32
	q2 := int8(ql[l+32]&0xf|((qh[l]>>2)&3)<<4) - 32
	q3 := int8(ql[l]>>4|((qh[l]>>4)&3)<<4) - 32
	q4 := int8(ql[l+32]>>4|((qh[l]>>6)&3)<<4) - 32
	return q1, q2, q3, q4
}

func dequantQ6K(y []float32, x []byte) {
	for i := 0; i < len(y)/qkK; i++ {
		b := x[i*210 : i*210+210]
		ql, qh, sc := b[0:128], b[128:192], b[192:208]
		d := f16At(b, 208)
		out := y[i*qkK:]
		for n := 0; n < 2; n++ {
			l8, h8, s8 := ql[64*n:], qh[32*n:], sc[8*n:]
			o := out[128*n:]
			for l := 0; l < 32; l++ {
				is := l / 16
				q1, q2, q3, q4 := q6k(l8, h8, l)
				o[l] = float32(d*float32(int8(s8[is]))) * float32(q1)
				o[l+32] = float32(d*float32(int8(s8[is+2]))) * float32(q2)
				o[l+64] = float32(d*float32(int8(s8[is+4]))) * float32(q3)
				o[l+96] = float32(d*float32(int8(s8[is+6]))) * float32(q4)
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
	for i := 0; i < len(x)/qkK; i++ {
		v := x[i*qkK : i*qkK+qkK]
		b := y[i*292 : i*292+292]
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
		qs := b[4:260]
		for j, f := range v {
			qs[j] = byte(int8(min(127, nearestInt(iscale*f))))
		}
		for j := 0; j < 16; j++ {
			s := 0
			for k := 0; k < 16; k++ {
				s += int(int8(qs[16*j+k]))
			}
			binary.LittleEndian.PutUint16(b[260+2*j:], uint16(int16(s)))
		}
		binary.LittleEndian.PutUint32(b, math.Float32bits(1/iscale))
	}
}

func q8kD(a []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(a)) }
func q8kBsum(a []byte, j int) int {
	return int(int16(binary.LittleEndian.Uint16(a[260+2*j:])))
}

func dotQ2K(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		b, a := x[i*84:i*84+84], y[i*292:i*292+292]
		scales, q, aq := b[0:16], b[16:80], a[4:260]
		summs := 0
		for j := 0; j < 16; j++ {
			summs += int(scales[j]>>4) * q8kBsum(a, j)
		}
		isum, is, o := 0, 0, 0
		for n := 0; n < 2; n++ {
			qq := q[32*n:]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					s := 0
					for l := 0; l < 16; l++ {
						s += int((qq[l+16*half]>>shift)&3) * int(int8(aq[o]))
						o++
					}
					isum += int(scales[is]&0xf) * s
					is++
				}
			}
		}
		dy := q8kD(a)
		sum += dy*f16At(b, 80)*float32(isum) - dy*f16At(b, 82)*float32(summs)
	}
	return sum
}

func dotQ3K(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		b, a := x[i*110:i*110+110], y[i*292:i*292+292]
		hm, q, aq := b[0:32], b[32:96], a[4:260]
		sc := q3kScales(b[96:108])
		isum, is, o := 0, 0, 0
		m := byte(1)
		for n := 0; n < 2; n++ {
			qq := q[32*n:]
			for shift := uint(0); shift < 8; shift += 2 {
				for half := 0; half < 2; half++ {
					s := 0
					for l := 16 * half; l < 16*half+16; l++ {
						v := int((qq[l] >> shift) & 3)
						if hm[l]&m == 0 {
							v -= 4
						}
						s += v * int(int8(aq[o]))
						o++
					}
					isum += int(sc[is]) * s
					is++
				}
				m <<= 1
			}
		}
		sum += f16At(b, 108) * q8kD(a) * float32(isum)
	}
	return sum
}

func dotQ4K(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		b, a := x[i*144:i*144+144], y[i*292:i*292+292]
		scales, q, aq := b[4:16], b[16:144], a[4:260]
		isum, summs := 0, 0
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			qq := q[32*j:]
			s1, s2 := 0, 0
			for l := 0; l < 32; l++ {
				s1 += int(qq[l]&0xf) * int(int8(aq[64*j+l]))
				s2 += int(qq[l]>>4) * int(int8(aq[64*j+32+l]))
			}
			isum += int(sc1)*s1 + int(sc2)*s2
			summs += int(m1)*(q8kBsum(a, 4*j)+q8kBsum(a, 4*j+1)) + int(m2)*(q8kBsum(a, 4*j+2)+q8kBsum(a, 4*j+3))
		}
		dy := q8kD(a)
		sum += dy*f16At(b, 0)*float32(isum) - dy*f16At(b, 2)*float32(summs)
	}
	return sum
}

func dotQ5K(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		b, a := x[i*176:i*176+176], y[i*292:i*292+292]
		scales, qh, ql, aq := b[4:16], b[16:48], b[48:176], a[4:260]
		isum, summs := 0, 0
		u1, u2 := byte(1), byte(2)
		for j := 0; j < 4; j++ {
			sc1, m1 := scaleMinK4(2*j, scales)
			sc2, m2 := scaleMinK4(2*j+1, scales)
			qq := ql[32*j:]
			s1, s2 := 0, 0
			for l := 0; l < 32; l++ {
				lo, hi := int(qq[l]&0xf), int(qq[l]>>4)
				if qh[l]&u1 != 0 {
					lo += 16
				}
				if qh[l]&u2 != 0 {
					hi += 16
				}
				s1 += lo * int(int8(aq[64*j+l]))
				s2 += hi * int(int8(aq[64*j+32+l]))
			}
			isum += int(sc1)*s1 + int(sc2)*s2
			summs += int(m1)*(q8kBsum(a, 4*j)+q8kBsum(a, 4*j+1)) + int(m2)*(q8kBsum(a, 4*j+2)+q8kBsum(a, 4*j+3))
			u1 <<= 2
			u2 <<= 2
		}
		dy := q8kD(a)
		sum += dy*f16At(b, 0)*float32(isum) - dy*f16At(b, 2)*float32(summs)
	}
	return sum
}

func dotQ6K(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qkK; i++ {
		b, a := x[i*210:i*210+210], y[i*292:i*292+292]
		ql, qh, sc, aq := b[0:128], b[128:192], b[192:208], a[4:260]
		isum := 0
		for n := 0; n < 2; n++ {
			l8, h8, s8, a8 := ql[64*n:], qh[32*n:], sc[8*n:], aq[128*n:]
			var s [8]int
			for l := 0; l < 32; l++ {
				is := l / 16
				q1, q2, q3, q4 := q6k(l8, h8, l)
				s[is] += int(q1) * int(int8(a8[l]))
				s[is+2] += int(q2) * int(int8(a8[l+32]))
				s[is+4] += int(q3) * int(int8(a8[l+64]))
				s[is+6] += int(q4) * int(int8(a8[l+96]))
			}
			for k := 0; k < 8; k++ {
				isum += int(int8(s8[k])) * s[k]
			}
		}
		sum += f16At(b, 208) * q8kD(a) * float32(isum)
	}
	return sum
}

// ScaleMinK4 unpacks the j-th 6-bit scale and min of a Q4_K/Q5_K block's
// 12 scale bytes (ggml's get_scale_min_k4).
func ScaleMinK4(j int, q []byte) (byte, byte) { return scaleMinK4(j, q) }
