// Package quant holds the block layouts of the ggml tensor types and their
// scalar reference code: dequantization (bit-exact with ggml's to_float),
// quantization of activations (as ggml's CPU backend does before a quantized
// dot product) and dot products. This code is the spec that fast kernels are
// tested against.
package quant

import "math"

// f16Table maps every IEEE half to its float32 value.
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = f16ToF32Slow(uint16(i))
	}
	return &t
}()

// F16ToF32 converts an IEEE binary16 to float32 (exact).
func F16ToF32(h uint16) float32 { return f16Table[h] }

func f16ToF32Slow(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch exp {
	case 0:
		// Zero or subnormal: mant × 2^-24, exact in float32.
		v := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 converts float32 to binary16 with round-to-nearest-even, as the
// F16C instruction (and ggml's software fallback) does.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff { // inf or nan
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00 // overflow to inf
	}
	if e <= 0 {
		// Subnormal half (or zero): shift the full significand into place.
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(half)
}

// RoundF16 rounds f to the nearest half and back.
func RoundF16(f float32) float32 { return F16ToF32(F32ToF16(f)) }

// BF16ToF32 converts a bfloat16 to float32 (exact).
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 rounds to nearest even, quieting NaNs, like ggml_compute_fp32_to_bf16.
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}
