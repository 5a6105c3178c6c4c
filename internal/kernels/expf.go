package kernels

import (
	"math"

	"github.com/loom-inference/loom/internal/libm"
)

// ggml computes exp, softmax and SiLU with its own vectorized expf
// (ggml_v_expf, "adapted from arm limited optimized routine", max error
// ≈1.5 ulp), not libm's. Loom reproduces the AVX-512 variant of it bit for
// bit: it is what llama.cpp runs on this CPU, and an exp that differs in the
// last bit changes every softmax and every SiLU, differences that random-
// weight models amplify through their layers. The AVX2 variant scales by 2ⁿ
// differently (k·j + k instead of scalef(j+1, n)) and can differ by one ulp.
//
// The portable code below is the reference: each lane's arithmetic with
// float32 fused multiply-adds (FMA32) in ggml's order.

// Constants of ggml_v_expf (the hex floats of its source).
const (
	expShift = 0x1.8p23       // round-to-integer shifter
	expLog2e = 0x1.715476p+0  // log2(e)
	expLn2Hi = 0x1.62e4p-1    // ln2, high part
	expLn2Lo = 0x1.7f7d1cp-20 // ln2, low part
	expC5    = 0x1.0e4020p-7
	expC4    = 0x1.573e2ep-5
	expC3    = 0x1.555e66p-3
	expC2    = 0x1.fffdb6p-2
	expC1    = 0x1.ffffecp-1
)

// FMA32 is a correctly rounded float32 fused multiply-add a·b + c: the
// product is exact in float64, and the float64 sum is rounded to odd
// (through the TwoSum error) so that its rounding to float32 is the single
// correct rounding (no double-rounding error). Non-finite operands take the
// plain path, which gives the IEEE result.
func FMA32(a, b, c float32) float32 {
	p, z := float64(a)*float64(b), float64(c)
	s := p + z
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return float32(s)
	}
	bv := s - p
	e := (p - (s - bv)) + (z - bv)
	if bits := math.Float64bits(s); e != 0 && bits&1 == 0 {
		if (e > 0) == (s > 0) {
			s = math.Float64frombits(bits + 1)
		} else {
			s = math.Float64frombits(bits - 1)
		}
	}
	return float32(s)
}

// ExpF32 is one lane of ggml_v_expf (AVX-512): e^x.
func ExpF32(x float32) float32 {
	z := FMA32(x, expLog2e, expShift)
	n := z - expShift // round(x·log2e), as a float
	b := FMA32(-n, expLn2Lo, FMA32(-n, expLn2Hi, x))
	u := b * b
	j := FMA32(FMA32(FMA32(expC5, b, expC4), u, FMA32(expC3, b, expC2)), u, FMA32(expC1, b, 1))
	if abs32(n) > 192 { // false for NaN: scalef then gives NaN
		if n <= 0 {
			return 0
		}
		return float32(math.Inf(1))
	}
	return scalef(j, n)
}

// scalef is VSCALEFPS for an integral n: j·2ⁿ rounded once (subnormals
// included; j·2ⁿ is exact in float64 for |n| ≤ 192).
func scalef(j, n float32) float32 {
	if math.IsNaN(float64(n)) {
		return float32(math.NaN())
	}
	return float32(math.Ldexp(float64(j), int(n)))
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// libmExpf is glibc's expf, which ggml uses on the scalar tails (elements
// past the last full vector).
func libmExpf(x float32) float32 { return libm.Expf(x) }

// SiLUMul computes gate[i] = silu(gate[i])·up[i], silu(x) = x/(1+e^-x), as
// ggml_silu followed by ggml_mul: ggml_v_silu on 16-element vectors, libm's
// expf on the tail.

func siLUMulGeneric(gate, up []float32) {
	up = up[:len(gate)]
	n16 := len(gate) &^ 15
	for i, x := range gate {
		var e float32
		if i < n16 {
			e = ExpF32(0 - x)
		} else {
			e = libmExpf(-x)
		}
		gate[i] = x / (1 + e) * up[i]
	}
}

// ExpSum writes y[i] = e^(x[i]−max) and returns Σ y[i] as ggml_vec_soft_max_f32
// (AVX-512) computes it: each 16-element vector is exponentiated by
// ggml_v_expf, reduced to a float32 by _mm512_reduce_add_ps's halving tree
// and added to a float64 sum; the tail uses libm's expf and float64 adds.

func expSumGeneric(y, x []float32, max float32) float64 {
	y = y[:len(x)]
	n16 := len(x) &^ 15
	var sum float64
	var v [16]float32
	for i := 0; i < n16; i += 16 {
		for l := range v {
			v[l] = ExpF32(x[i+l] - max)
			y[i+l] = v[l]
		}
		sum += float64(laneSum(v[:])) // _mm512_reduce_add_ps's halving tree
	}
	return expTail(sum, y, x, max, n16)
}

// expTail continues an ExpSum past the last full vector (from element i)
// as ggml does: libm's expf, each value added to the float64 sum.
func expTail(sum float64, y, x []float32, max float32, i int) float64 {
	for ; i < len(x); i++ {
		e := libmExpf(x[i] - max)
		y[i] = e
		sum += float64(e)
	}
	return sum
}
