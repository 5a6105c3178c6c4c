package quant

import (
	"encoding/binary"
	"math"
)

// The 32-element block formats (ggml-common.h):
//
//	Q4_0   { f16 d; u8 qs[16] }              x = d·(q-8)
//	Q4_1   { f16 d, m; u8 qs[16] }           x = d·q + m
//	Q5_0   { f16 d; u8 qh[4]; u8 qs[16] }    x = d·(q-16), q's 5th bit in qh
//	Q5_1   { f16 d, m; u8 qh[4]; u8 qs[16] } x = d·q + m
//	Q8_0   { f16 d; i8 qs[32] }              x = d·q
//	IQ4_NL { f16 d; u8 qs[16] }              x = d·kvaluesIQ4NL[q]
//
// Nibbles: the low nibble of qs[j] is element j, the high nibble element j+16.

const qk = 32

func f16At(b []byte, off int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[off:])) }

// kvaluesIQ4NL is the non-linear 4-bit codebook of IQ4_NL and IQ4_XS.
var kvaluesIQ4NL = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// IQ4NLValue is the codebook value of the 4-bit index q.
func IQ4NLValue(q byte) int8 { return kvaluesIQ4NL[q&0xf] }

func dequantQ4_0(y []float32, x []byte) {
	for i := 0; i < len(y)/qk; i++ {
		b := x[i*18:]
		d := f16At(b, 0)
		qs := b[2:18]
		for j := 0; j < 16; j++ {
			y[i*qk+j] = float32(int(qs[j]&0xf)-8) * d
			y[i*qk+j+16] = float32(int(qs[j]>>4)-8) * d
		}
	}
}

func dequantQ4_1(y []float32, x []byte) {
	for i := 0; i < len(y)/qk; i++ {
		b := x[i*20:]
		d, m := f16At(b, 0), f16At(b, 2)
		qs := b[4:20]
		for j := 0; j < 16; j++ {
			y[i*qk+j] = float32(float32(qs[j]&0xf)*d) + m
			y[i*qk+j+16] = float32(float32(qs[j]>>4)*d) + m
		}
	}
}

func dequantQ5_0(y []float32, x []byte) {
	for i := 0; i < len(y)/qk; i++ {
		b := x[i*22:]
		d := f16At(b, 0)
		qh := binary.LittleEndian.Uint32(b[2:])
		qs := b[6:22]
		for j := 0; j < 16; j++ {
			h0 := byte((qh>>j)<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[i*qk+j] = float32(int(qs[j]&0xf|h0)-16) * d
			y[i*qk+j+16] = float32(int(qs[j]>>4|h1)-16) * d
		}
	}
}

func dequantQ5_1(y []float32, x []byte) {
	for i := 0; i < len(y)/qk; i++ {
		b := x[i*24:]
		d, m := f16At(b, 0), f16At(b, 2)
		qh := binary.LittleEndian.Uint32(b[4:])
		qs := b[8:24]
		for j := 0; j < 16; j++ {
			h0 := byte((qh>>j)<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[i*qk+j] = float32(float32(qs[j]&0xf|h0)*d) + m
			y[i*qk+j+16] = float32(float32(qs[j]>>4|h1)*d) + m
		}
	}
}

func dequantQ8_0(y []float32, x []byte) {
	for i := 0; i < len(y)/qk; i++ {
		b := x[i*34:]
		d := f16At(b, 0)
		for j := 0; j < qk; j++ {
			y[i*qk+j] = float32(int8(b[2+j])) * d
		}
	}
}

func dequantIQ4NL(y []float32, x []byte) {
	for i := 0; i < len(y)/qk; i++ {
		b := x[i*18:]
		d := f16At(b, 0)
		qs := b[2:18]
		for j := 0; j < 16; j++ {
			y[i*qk+j] = d * float32(kvaluesIQ4NL[qs[j]&0xf])
			y[i*qk+j+16] = d * float32(kvaluesIQ4NL[qs[j]>>4])
		}
	}
}

// quantizeQ8_0 quantizes activations as ggml's AVX2 quantize_row_q8_0 does
// (the path llama.cpp takes on this CPU): d = amax/127, q = round-half-even(x·127/amax).
func quantizeQ8_0(y []byte, x []float32) { quantizeQ8(y, x, false) }

// quantizeQ8_1 is Q8_0 plus s = d·Σq, used against Q4_1/Q5_1 weights.
func quantizeQ8_1(y []byte, x []float32) { quantizeQ8(y, x, true) }

func quantizeQ8(y []byte, x []float32, withSum bool) {
	bs, off := 34, 2
	if withSum {
		bs, off = 36, 4
	}
	for i := 0; i < len(x)/qk; i++ {
		v := x[i*qk : i*qk+qk]
		b := y[i*bs : i*bs+bs]
		var amax float32
		for _, f := range v {
			amax = max(amax, float32(math.Abs(float64(f))))
		}
		d := amax / 127
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		binary.LittleEndian.PutUint16(b, F32ToF16(d))
		sum := 0
		for j, f := range v {
			q := int8(math.RoundToEven(float64(f * id)))
			b[off+j] = byte(q)
			sum += int(q)
		}
		if withSum {
			binary.LittleEndian.PutUint16(b[2:], F32ToF16(d*float32(sum)))
		}
	}
}

// Dot products against Q8_0 / Q8_1 activations (ggml_vec_dot_*_q8_*):
// integer sums per block, scaled by the product of the block scales.

func dotQ4_0(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		b, a := x[i*18:i*18+18], y[i*34:i*34+34]
		qs, aq := b[2:18], a[2:34]
		s := 0
		for j := 0; j < 16; j++ {
			s += (int(qs[j]&0xf) - 8) * int(int8(aq[j]))
			s += (int(qs[j]>>4) - 8) * int(int8(aq[j+16]))
		}
		sum += float32(s) * (f16At(b, 0) * f16At(a, 0))
	}
	return sum
}

func dotQ4_1(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		b, a := x[i*20:i*20+20], y[i*36:i*36+36]
		qs, aq := b[4:20], a[4:36]
		s := 0
		for j := 0; j < 16; j++ {
			s += int(qs[j]&0xf) * int(int8(aq[j]))
			s += int(qs[j]>>4) * int(int8(aq[j+16]))
		}
		sum += float32(s)*(f16At(b, 0)*f16At(a, 0)) + f16At(b, 2)*f16At(a, 2)
	}
	return sum
}

func dotQ5_0(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		b, a := x[i*22:i*22+22], y[i*34:i*34+34]
		qh := binary.LittleEndian.Uint32(b[2:])
		qs, aq := b[6:22], a[2:34]
		s := 0
		for j := 0; j < 16; j++ {
			h0 := byte((qh>>j)<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			s += (int(qs[j]&0xf|h0) - 16) * int(int8(aq[j]))
			s += (int(qs[j]>>4|h1) - 16) * int(int8(aq[j+16]))
		}
		sum += float32(s) * (f16At(b, 0) * f16At(a, 0))
	}
	return sum
}

func dotQ5_1(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		b, a := x[i*24:i*24+24], y[i*36:i*36+36]
		qh := binary.LittleEndian.Uint32(b[4:])
		qs, aq := b[8:24], a[4:36]
		s := 0
		for j := 0; j < 16; j++ {
			h0 := byte((qh>>j)<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			s += int(qs[j]&0xf|h0) * int(int8(aq[j]))
			s += int(qs[j]>>4|h1) * int(int8(aq[j+16]))
		}
		sum += float32(s)*(f16At(b, 0)*f16At(a, 0)) + f16At(b, 2)*f16At(a, 2)
	}
	return sum
}

func dotQ8_0(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		b, a := x[i*34:i*34+34], y[i*34:i*34+34]
		s := 0
		for j := 2; j < 34; j++ {
			s += int(int8(b[j])) * int(int8(a[j]))
		}
		sum += float32(s) * (f16At(b, 0) * f16At(a, 0))
	}
	return sum
}

func dotIQ4NL(n int, x, y []byte) float32 {
	var sum float32
	for i := 0; i < n/qk; i++ {
		b, a := x[i*18:i*18+18], y[i*34:i*34+34]
		qs, aq := b[2:18], a[2:34]
		s := 0
		for j := 0; j < 16; j++ {
			s += int(kvaluesIQ4NL[qs[j]&0xf]) * int(int8(aq[j]))
			s += int(kvaluesIQ4NL[qs[j]>>4]) * int(int8(aq[j+16]))
		}
		sum += float32(s) * (f16At(b, 0) * f16At(a, 0))
	}
	return sum
}
