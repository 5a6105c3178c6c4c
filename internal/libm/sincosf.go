// Package libm reproduces the float32 functions of glibc's libm that
// llama.cpp calls, bit for bit, where Go's float64 math rounded to float32
// would differ in the last bit. RoPE takes cosf and sinf of every
// position's angles: glibc's are not correctly rounded (≈1.6% of RoPE angles
// differ from the correctly rounded value by one ulp), and those ulps change
// every attention score from the first position where they occur.
//
// The algorithm is the single-precision sin/cos of Arm's optimized-routines
// (2018), which glibc ships since 2.28: a double-precision polynomial after
// a one-step reduction by π/2 for |x| < 120 and an exact fixed-point
// reduction with 192 bits of 4/π beyond. On x86-64 CPUs with FMA, glibc
// selects a build of it compiled with -mfma, where each a + b·c of the
// source becomes one fused multiply-add; Loom reproduces that variant (the
// one llama.cpp uses on the CPUs Loom targets), verified against glibc.
package libm

import "math"

// sincosPoly is one entry of the polynomial table; the second entry negates
// the cosine polynomial (quadrants 2 and 3).
type sincosPoly struct {
	c0, c1, c2, c3, c4 float64 // cosine
	s1, s2, s3         float64 // sine
}

var sincosTable = [2]sincosPoly{
	{1, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10, 0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{-1, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10, -0x1.99343027bf8c3p-16,
		-0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

var quadrantSign = [4]float64{1, -1, -1, 1}

const (
	hpiInv = 0x1.45F306DC9C883p+23 // 2/π·2²⁴: the quadrant lands in bits 24..31
	hpi    = 0x1.921FB54442D18p0   // π/2
	pi63   = 0x1.921FB54442D18p-62 // 2π·2⁻⁶⁴
)

// invPio4 holds 4/π to 192 bits, 8 new bits per entry.
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// abstop12 is the biased exponent (and top mantissa bits) of |x|.
func abstop12(x float32) uint32 { return (math.Float32bits(x) >> 20) & 0x7ff }

var (
	top12Pio4 = abstop12(float32(0x1.921FB54442D18p-1))
	top12Tiny = abstop12(0x1p-12)
	top12Max  = abstop12(120)
	top12Inf  = abstop12(float32(math.Inf(1)))
	nanF32    = float32(math.NaN())
)

// fma is a + b·c where glibc's FMA build contracts it.
func fma(b, c, a float64) float64 { return math.FMA(b, c, a) }

// poly evaluates sine (n even) or cosine (n odd) of the reduced x, x2 = x².
func poly(x, x2 float64, p *sincosPoly, n int) float32 {
	if n&1 == 0 {
		x3 := x * x2
		s1 := fma(x2, p.s3, p.s2)
		x7 := x3 * x2
		s := fma(x3, p.s1, x)
		return float32(fma(x7, s1, s))
	}
	x4 := x2 * x2
	c2 := fma(x2, p.c4, p.c3)
	c1 := fma(x2, p.c1, p.c0)
	x6 := x4 * x2
	c := fma(x4, p.c2, c1)
	return float32(fma(x6, c2, c))
}

// reduceFast returns x − n·π/2 in [−π/4, π/4] and the quadrant n.
func reduceFast(x float64) (float64, int) {
	// Scaled float-to-int conversion with explicit rounding to nearest.
	n := int((int32(x*hpiInv) + 0x800000) >> 24)
	return fma(-float64(n), hpi, x), n
}

// reduceLarge reduces |x| ≥ 120 (xi its bits) with a 32×96-bit product of
// the mantissa and 4/π: an exact 2.62 fixed-point remainder.
func reduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0]) // a 32-bit product, as in C
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * pi63, int(n)
}

// reduce returns y's argument reduced to [−π/4, π/4] (x), its quadrant n
// and the polynomial table of that quadrant's sign, for |y| ≥ π/4.
func reduce(y float32) (x float64, n int, p *sincosPoly) {
	p = &sincosTable[0]
	if abstop12(y) < top12Max {
		x, n = reduceFast(float64(y))
		if n&2 != 0 {
			p = &sincosTable[1]
		}
		return x * quadrantSign[n&3], n, p
	}
	xi := math.Float32bits(y)
	sign := int(xi >> 31)
	x, n = reduceLarge(xi)
	if (n+sign)&2 != 0 {
		p = &sincosTable[1]
	}
	return x * quadrantSign[(n+sign)&3], n, p
}

// Sinf is glibc's sinf (x86-64, FMA build).
func Sinf(y float32) float32 {
	switch t := abstop12(y); {
	case t < top12Pio4:
		if t < top12Tiny {
			return y
		}
		x := float64(y)
		return poly(x, x*x, &sincosTable[0], 0)
	case t < top12Inf:
		x, n, p := reduce(y)
		return poly(x, x*x, p, n)
	}
	return nanF32
}

// Cosf is glibc's cosf (x86-64, FMA build).
func Cosf(y float32) float32 {
	switch t := abstop12(y); {
	case t < top12Pio4:
		if t < top12Tiny {
			return 1
		}
		x := float64(y)
		return poly(x, x*x, &sincosTable[0], 1)
	case t < top12Inf:
		x, n, p := reduce(y)
		return poly(x, x*x, p, n^1)
	}
	return nanF32
}
