package quant

import (
	"encoding/binary"
	"math"
)

func dequantF32(y []float32, x []byte) {
	for i := range y {
		y[i] = math.Float32frombits(binary.LittleEndian.Uint32(x[4*i:]))
	}
}

// dequantF16 converts by bit arithmetic for normal halves (the common
// case: no 256 KiB table to miss in over a whole tensor) and by the table
// for zeros, subnormals, infinities and NaNs; exact either way.
func dequantF16(y []float32, x []byte) {
	x = x[:2*len(y)]
	for i := range y {
		h := uint32(binary.LittleEndian.Uint16(x[2*i:]))
		if e := h & 0x7c00; e != 0 && e != 0x7c00 {
			y[i] = math.Float32frombits((h&0x8000)<<16 | (h&0x7fff)<<13 + 112<<23)
			continue
		}
		y[i] = f16Table[h]
	}
}

func dequantBF16(y []float32, x []byte) {
	for i := range y {
		y[i] = BF16ToF32(binary.LittleEndian.Uint16(x[2*i:]))
	}
}

func quantizeF32(y []byte, x []float32) {
	for i, f := range x {
		binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(f))
	}
}

func quantizeF16(y []byte, x []float32) {
	for i, f := range x {
		binary.LittleEndian.PutUint16(y[2*i:], F32ToF16(f))
	}
}

func quantizeBF16(y []byte, x []float32) {
	for i, f := range x {
		binary.LittleEndian.PutUint16(y[2*i:], F32ToBF16(f))
	}
}

// Float dot products accumulate in four float32 lanes, the shape of ggml's
// SIMD reductions (its scalar fallback sums in double; both are within the
// tolerance the reference recordings allow). F16 and BF16 weights are dotted
// with float32 activations already rounded to their type (dotF16F32 and
// dotBF16F32 below).

func dotF32(n int, x, y []byte) float32 {
	var s [4]float32
	i := 0
	for ; i+4 <= n; i += 4 {
		for k := 0; k < 4; k++ {
			s[k] += math.Float32frombits(binary.LittleEndian.Uint32(x[4*(i+k):])) *
				math.Float32frombits(binary.LittleEndian.Uint32(y[4*(i+k):]))
		}
	}
	for ; i < n; i++ {
		s[0] += math.Float32frombits(binary.LittleEndian.Uint32(x[4*i:])) *
			math.Float32frombits(binary.LittleEndian.Uint32(y[4*i:]))
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}

// roundF16F32 stores x rounded to F16 precision as float32: the activations
// ggml's F16 dot sees, converted once.
func roundF16F32(y []byte, x []float32) {
	for i, f := range x {
		binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(RoundF16(f)))
	}
}

func roundBF16F32(y []byte, x []float32) {
	for i, f := range x {
		binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(BF16ToF32(F32ToBF16(f))))
	}
}

// dotF16F32: x F16 weights, y float32 activations already rounded to F16.
func dotF16F32(n int, x, y []byte) float32 {
	var s [4]float32
	i := 0
	x, y = x[:2*n], y[:4*n]
	for ; i+4 <= n; i += 4 {
		s[0] += F16ToF32(binary.LittleEndian.Uint16(x[2*i:])) * math.Float32frombits(binary.LittleEndian.Uint32(y[4*i:]))
		s[1] += F16ToF32(binary.LittleEndian.Uint16(x[2*i+2:])) * math.Float32frombits(binary.LittleEndian.Uint32(y[4*i+4:]))
		s[2] += F16ToF32(binary.LittleEndian.Uint16(x[2*i+4:])) * math.Float32frombits(binary.LittleEndian.Uint32(y[4*i+8:]))
		s[3] += F16ToF32(binary.LittleEndian.Uint16(x[2*i+6:])) * math.Float32frombits(binary.LittleEndian.Uint32(y[4*i+12:]))
	}
	for ; i < n; i++ {
		s[0] += F16ToF32(binary.LittleEndian.Uint16(x[2*i:])) * math.Float32frombits(binary.LittleEndian.Uint32(y[4*i:]))
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}

func dotBF16F32(n int, x, y []byte) float32 {
	var s [4]float32
	i := 0
	x, y = x[:2*n], y[:4*n]
	for ; i+4 <= n; i += 4 {
		for k := 0; k < 4; k++ {
			s[k] += BF16ToF32(binary.LittleEndian.Uint16(x[2*(i+k):])) * math.Float32frombits(binary.LittleEndian.Uint32(y[4*(i+k):]))
		}
	}
	for ; i < n; i++ {
		s[0] += BF16ToF32(binary.LittleEndian.Uint16(x[2*i:])) * math.Float32frombits(binary.LittleEndian.Uint32(y[4*i:]))
	}
	return (s[0] + s[1]) + (s[2] + s[3])
}
