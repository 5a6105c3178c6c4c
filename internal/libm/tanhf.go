package libm

import "math"

// Tanhf is glibc's tanhf (the fdlibm algorithm of sysdeps/ieee754/flt-32,
// as in glibc 2.36, where the shared recordings were made), bit for bit
// (testdata/glibc_tanhf.bin): ggml_tanh calls it, and it is not correctly
// rounded, so float64 math.Tanh rounded to float32 differs in the last bit
// for some inputs, which 26 soft-capped layers amplify (Gemma 2 Q8_0 agrees
// to every printed digit with it, not without).
func Tanhf(x float32) float32 {
	const one, two, tiny = float32(1), float32(2), float32(1e-30)
	jx := math.Float32bits(x)
	ix := jx & 0x7fffffff
	if ix >= 0x7f800000 { // Inf or NaN
		if jx>>31 == 0 {
			return one/x + one // tanh(+inf) = 1, NaN stays NaN
		}
		return one/x - one
	}
	var z float32
	switch {
	case ix < 0x41b00000: // |x| < 22
		if ix == 0 {
			return x
		}
		if ix < 0x24000000 { // |x| < 2^-55
			return x * (one + x)
		}
		ax := math.Float32frombits(ix)
		if ix >= 0x3f800000 { // |x| ≥ 1
			t := Expm1f(two * ax)
			z = one - two/(t+two)
		} else {
			t := Expm1f(-two * ax)
			z = -t / (t + two)
		}
	default: // |x| ≥ 22: ±1
		z = one - tiny
	}
	if jx>>31 == 0 {
		return z
	}
	return -z
}

// Expm1f is glibc's expm1f (fdlibm's s_expm1f.c), bit for bit. Each
// operation is rounded to float32, as the C code compiles without fused
// multiply-adds.
func Expm1f(x float32) float32 {
	const (
		one        = float32(1.0)
		huge       = float32(1.0e+30)
		oThreshold = float32(8.8721679688e+01)
		ln2Hi      = float32(6.9313812256e-01)
		ln2Lo      = float32(9.0580006145e-06)
		invln2     = float32(1.4426950216e+00)
		q1         = float32(-3.3333335072e-02)
		q2         = float32(1.5873016091e-03)
		q3         = float32(-7.9365076090e-05)
		q4         = float32(4.0082177293e-06)
		q5         = float32(-2.0109921195e-07)
	)
	hx := math.Float32bits(x)
	neg := hx&0x80000000 != 0
	hx &= 0x7fffffff
	if hx >= 0x4195b844 { // |x| ≥ 27·ln2
		if hx >= 0x42b17218 { // |x| ≥ 88.72
			if hx > 0x7f800000 {
				return x + x // NaN
			}
			if hx == 0x7f800000 {
				if neg {
					return -1
				}
				return x
			}
			if x > oThreshold {
				return float32(math.Inf(1))
			}
		}
		if neg {
			return -one // x < −27·ln2
		}
	}
	var hi, lo, c float32
	var k int32
	switch {
	case hx > 0x3eb17218: // |x| > 0.5·ln2: reduce
		if hx < 0x3F851592 { // and |x| < 1.5·ln2
			if !neg {
				hi, lo, k = x-ln2Hi, ln2Lo, 1
			} else {
				hi, lo, k = x+ln2Hi, -ln2Lo, -1
			}
		} else {
			half := float32(0.5)
			if neg {
				half = -0.5
			}
			k = int32(float32(invln2*x) + half)
			t := float32(k)
			hi = x - float32(t*ln2Hi)
			lo = float32(t * ln2Lo)
		}
		x = hi - lo
		c = float32(hi-x) - lo
	case hx < 0x33000000: // |x| < 2^-25
		return x
	default:
		k = 0
	}
	hfx := float32(0.5) * x
	hxs := float32(x * hfx)
	r1 := one + float32(hxs*float32(q1+float32(hxs*float32(q2+float32(hxs*float32(q3+float32(hxs*float32(q4+float32(hxs*q5)))))))))
	t := float32(3.0) - float32(r1*hfx)
	e := float32(hxs * float32(float32(r1-t)/float32(float32(6.0)-float32(x*t))))
	if k == 0 {
		return x - float32(float32(x*e)-hxs)
	}
	e = float32(x*float32(e-c)) - c
	e -= hxs
	if k == -1 {
		return float32(float32(0.5)*float32(x-e)) - 0.5
	}
	if k == 1 {
		if x < -0.25 {
			return float32(-2.0) * float32(e-float32(x+0.5))
		}
		return one + float32(float32(2.0)*float32(x-e))
	}
	if k <= -2 || k > 56 { // exp(x)−1 ≈ exp(x)
		y := one - float32(e-x)
		if k == 128 {
			y = float32(float32(y*2.0) * 0x1p127)
		} else {
			y = math.Float32frombits(math.Float32bits(y) + uint32(k<<23))
		}
		return y - one
	}
	var y float32
	if k < 23 {
		t := math.Float32frombits(0x3f800000 - (0x1000000 >> uint(k))) // 1 − 2^−k
		y = t - float32(e-x)
	} else {
		t := math.Float32frombits(uint32((0x7f - k) << 23)) // 2^−k
		y = x - float32(e+t)
		y += one
	}
	return math.Float32frombits(math.Float32bits(y) + uint32(k<<23))
}
