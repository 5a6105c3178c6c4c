package quant

import (
	"math"
	"math/bits"

	"github.com/loom-inference/loom/internal/tensor"
)

// MXFP4 (ggml type 39): the OCP microscaling FP4 of gpt-oss's expert
// weights (ggml-common.h block_mxfp4, ggml-quants.c):
//
//	MXFP4 { u8 e; u8 qs[16] }   x = kvaluesMXFP4[q] · 2^(e−128)
//
// e is an E8M0 exponent (a bare power of two), q a 4-bit E2M1 code; ggml
// stores the E2M1 values doubled (kvalues_mxfp4, integers) and halves the
// scale to match (GGML_E8M0_TO_FP32_HALF). Nibbles as in the other
// 32-element formats: the low nibble of qs[j] is element j, the high one
// element j+16.

// kvaluesMXFP4 is ggml's kvalues_mxfp4: the E2M1 values ×2. Codes 0 and 8
// are +0 and −0; ggml's quantizer never writes 8.
var kvaluesMXFP4 = [16]int8{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}

// MXFP4Value is the (doubled) E2M1 value of the 4-bit code q.
func MXFP4Value(q byte) int8 { return kvaluesMXFP4[q&0xf] }

// e8m0Half[e] = 2^(e−128) (see E8M0Half).
var e8m0Half = func() (t [256]float32) {
	for e := range t {
		bits := uint32(0x00200000) << e // e = 0, 1: the subnormals 2^−128, 2^−127
		if e >= 2 {
			bits = uint32(e-1) << 23
		}
		t[e] = math.Float32frombits(bits)
	}
	return t
}()

// E8M0Half is ggml_e8m0_to_fp32_half (GGML_E8M0_TO_FP32_HALF; the CPU
// backend's ggml_table_f32_e8m0_half holds the same values): 2^(e−128),
// exactly. e = 0 and 1 give the subnormals 2^−128 and 2^−127; e = 255
// gives 2^127 (ggml does not read it as NaN, as E8M0 would).
func E8M0Half(e byte) float32 { return e8m0Half[e] }

// log2fUp[k+149] holds the bits of the smallest float32 x in [2^k, 2^(k+1))
// whose log2f rounds up to k+1, or those of 2^(k+1) when none does: for
// x ≥ it, floorf(log2f(x)) is k+1, not k. glibc's log2f is correctly
// rounded wherever that matters (testdata/log2f_floor.txt, recorded from
// it over every positive float), so log2f(x) reaches k+1 exactly when
// log2 x ≥ k+1−h, h half the gap between k+1 and the float below it.
var log2fUp = func() (t [277]uint32) {
	for k := -149; k <= 127; k++ {
		top := float32(k + 1)
		h := (float64(top) - float64(math.Nextafter32(top, float32(math.Inf(-1))))) / 2
		// The smallest float32 ≥ 2^(k+1−h). That power is irrational, so
		// no float equals it; TestLog2fFloor checks the float64 estimate
		// rounds to glibc's threshold for every k.
		x := math.Exp2(float64(k+1) - h)
		f := float32(x)
		if float64(f) < x {
			f = math.Nextafter32(f, float32(math.Inf(1)))
		}
		t[k+149] = math.Float32bits(f)
	}
	return t
}()

// floorLog2f is floorf(log2f(a)) for finite a > 0 (−149 … 128).
func floorLog2f(a float32) int {
	b := math.Float32bits(a)
	k := int(b>>23) - 127
	if b < 1<<23 { // subnormal: 2^k is its highest set bit
		k = bits.Len32(b) - 150
	}
	if b >= log2fUp[k+149] {
		k++
	}
	return k
}

// mxfp4Exponent is quantize_row_mxfp4_ref's block exponent:
// (uint8_t)(floorf(log2f(amax)) − 2 + 127), and 0 for amax = 0. The float
// to uint8 conversion is, in ggml's x86-64 build, cvttss2si's int32 cut
// to its low byte: blocks with amax < 2^−125 wrap to large exponents
// (which quantize every value to 0), and amax = +Inf gives 0 (cvttss2si's
// 0x80000000).
func mxfp4Exponent(amax float32) byte {
	switch {
	case !(amax > 0):
		return 0
	case math.IsInf(float64(amax), 1):
		return 0
	}
	return byte(int32(floorLog2f(amax) - 2 + 127))
}

// bestIndexMXFP4 is ggml's best_index_mxfp4 as written: the first code
// with the smallest |kvalue·d − x| in float32 (NaN: code 0).
func bestIndexMXFP4(x, d float32) byte {
	best, bestErr := 0, absf(float32(float32(kvaluesMXFP4[0])*d)-x)
	for i := 1; i < len(kvaluesMXFP4); i++ {
		if err := absf(float32(float32(kvaluesMXFP4[i])*d) - x); err < bestErr {
			best, bestErr = i, err
		}
	}
	return byte(best)
}

// mxfp4Mids are the midpoints between consecutive code magnitudes
// (0, 1, 2, 3, 4, 6, 8, 12), in units of d.
var mxfp4Mids = [7]float32{0.5, 1.5, 2.5, 3.5, 5, 7, 10}

// nearestMXFP4 is bestIndexMXFP4 for a block whose amax is finite and
// whose 12·d is finite: the code nearest x, the smaller magnitude on a tie,
// x < 0 taking the negative codes 9…15, and −0, NaN and ties at 0.5·d
// code 0. That is ggml's scan: near each decision the two errors it
// compares are exact (Sterbenz: every code is at least half the next),
// so it picks the nearer code, the earlier (smaller) one on a tie, and
// codes further away differ from the nearest by at least d/2, far above
// the rounding (values stay below 16·d). mid holds the bits of
// mxfp4Mids·d: magnitudes compare as their bit patterns, so the count
// of midpoints below |x| is a sum of borrow bits, without a branch.
func nearestMXFP4(x float32, mid *[7]uint32) byte {
	u := math.Float32bits(x)
	a := u &^ (1 << 31)
	if a > 0x7f800000 { // NaN: every error is NaN, code 0 stays
		return 0
	}
	var j uint32
	for _, m := range mid {
		j += (m - a) >> 31 // 1 when a > m (both below 2^31)
	}
	j |= u >> 31 << 3 & (-j >> 28) // x < 0 and j ≠ 0: the negative code j+8
	return byte(j)
}

// quantizeMXFP4 is quantize_row_mxfp4_ref: per block e from the largest
// magnitude (mxfp4Exponent), d = 2^(e−128), and each value's nearest code
// (best_index_mxfp4). Blocks where ggml's scan stops being a plain
// nearest-code choice (an infinite amax, or 12·d overflowing) take the
// scan itself.
func quantizeMXFP4(y []byte, x []float32) {
	qk, bs := mustBlocks(tensor.MXFP4)
	l := &lMXFP4
	for i := range len(x) / qk {
		v, b := x[i*qk:(i+1)*qk], y[i*bs:(i+1)*bs]
		_, amax := absMax(v)
		e := mxfp4Exponent(amax)
		d := E8M0Half(e)
		b[l.D] = e
		lo, hi, qs := (*[16]float32)(v[:16]), (*[16]float32)(v[16:32]), (*[16]byte)(b[l.QS:])
		if math.IsInf(float64(amax), 1) || math.IsInf(float64(float32(12*d)), 1) {
			for j := range qs {
				qs[j] = bestIndexMXFP4(lo[j], d) | bestIndexMXFP4(hi[j], d)<<4
			}
			continue
		}
		var mid [7]uint32
		for k, m := range mxfp4Mids {
			mid[k] = math.Float32bits(m * d) // exact: d is a power of two, the results ≥ 2^−129
		}
		for j := range qs {
			qs[j] = nearestMXFP4(lo[j], &mid) | nearestMXFP4(hi[j], &mid)<<4
		}
	}
}
