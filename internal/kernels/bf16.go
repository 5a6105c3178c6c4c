package kernels

import (
	"encoding/binary"
	"math"

	"github.com/loom-inference/loom/internal/quant"
)

// BF16 weights, multiplied as llama.cpp b4748's CPU backend does on the
// recordings' machine (an AVX-512 CPU without AMX, where ggml picks its
// "icelake" build: AVX-512 without AVX512_BF16):
//
//   - activations are rounded to BF16 (vec_dot_type BF16,
//     ggml_fp32_to_bf16_row: nearest even), so every product of a weight
//     and an activation is exact in float32 and only the additions round;
//   - one token: ggml_vec_dot_bf16's AVX512F branch. Two 16-lane
//     accumulators over 32-element steps, c1 lane l summing elements
//     32j+l and c2 lane l elements 32j+16+l by FMA; each reduced by
//     _mm512_reduce_add_ps (8+8, 4+4, 2+2, 1+1) and added in double
//     (sumf = 0 + c1 + c2), then the elements past the last multiple of 32
//     added one by one in double (dotBF16VecOrder);
//   - two or more tokens, rows a multiple of 16 long: llamafile's
//     tinyBLAS<16, __m512, __m512, ggml_bf16_t, ggml_bf16_t, float>, the
//     float GEMM's order (gemm_float.go) with BF16 loads.
//
// (On a CPU with AMX ggml picks its "sapphirerapids" build, whose BF16
// kernels pair adjacent elements on VDPBF16PS: another order, which no
// recording here was made with.)
//
// Where the CPU has AVX512_BF16, Loom's GEMM tiles compute tinyBLAS's
// order with VDPBF16PS, which does twice the work of an FMA per
// instruction: lane l of VDPBF16PS adds the product of the high halves of
// its dword operands, then the product of the low halves (dpbf16 below).
// Activations are converted once per row into pairs — dword l of each
// 32-element chunk holds element l in its high half and element l+16 in
// its low half (bf16Pairs) — and each worker permutes the weights of its
// tile the same way as it packs them (VPERMW), so lane l sums l, l+16,
// l+32, … in order: tinyBLAS's lane, bit for bit, for every value that is
// not subnormal. (VDPBF16PS reads subnormals as zero and flushes subnormal
// sums; tinyBLAS's FMAs keep them. No BF16 model has weights or
// activations within 2⁻¹²⁶ of zero that would matter; dpbf16 emulates the
// instruction exactly, subnormals included, and the tests hold the tiles
// to it.) One token stays on FMAs in ggml_vec_dot_bf16's order: c1 and c2
// pair elements 16 apart within separate accumulators, which VDPBF16PS
// cannot, and a one-token product is bound by memory, not arithmetic.

func bf16le(b []byte) float32 { return quant.BF16ToF32(binary.LittleEndian.Uint16(b)) }

// dotBF16VecOrder: one token against BF16 weights in the order of
// ggml_vec_dot_bf16 (AVX512F, see the top of the file). y holds
// BF16-rounded activations as float32.
func dotBF16VecOrder(n int, x, y []byte) float32 {
	var c [2][16]float32
	np := n &^ 31
	for e := 0; e < np; e++ {
		a := &c[e>>4&1][e&15]
		*a = FMA32(bf16le(x[2*e:]), f32le(y[4*e:]), *a)
	}
	sum := 0.0
	sum += float64(reduce16(&c[0]))
	sum += float64(reduce16(&c[1]))
	return bf16VecTail(sum, x, y, np, n)
}

// bf16VecTail finishes ggml_vec_dot_bf16 from its double sum of the
// reduced accumulators: elements np..n-1, each product rounded to float,
// added in double.
func bf16VecTail(sum float64, x, y []byte, np, n int) float32 {
	for e := np; e < n; e++ {
		sum += float64(float32(bf16le(x[2*e:]) * f32le(y[4*e:])))
	}
	return float32(sum)
}

// bf16VecTailNarrow is bf16VecTail on an activation row narrowed to BF16
// (narrowBF16): the same values, so the same sum.
func bf16VecTailNarrow(sum float64, x, y []byte, np, n int) float32 {
	for e := np; e < n; e++ {
		sum += float64(float32(bf16le(x[2*e:]) * bf16le(y[2*e:])))
	}
	return float32(sum)
}

// narrowBF16 narrows n BF16-rounded float32 activations (y, little-endian)
// into dst[:2n] as BF16: the high halves, exact. Impl.Narrow of the
// four-row kernel.
func narrowBF16(dst, y []byte, n int) {
	_, _ = dst[:2*n], y[:4*n]
	for e := range n {
		dst[2*e], dst[2*e+1] = y[4*e+2], y[4*e+3]
	}
}

// bf16PairBytes is the size of an activation row of n elements in
// bf16Pairs' layout: 64 bytes per 32 elements or part of them.
func bf16PairBytes(n int) int { return 64 * ((n + 31) / 32) }

// bf16Pairs converts an activation row for VDPBF16PS: x rounded to BF16
// as ggml_fp32_to_bf16_row rounds it, each 32-element chunk c stored as
// sixteen little-endian dwords at dst[stride·c:], dword l = element 32c+l
// in the high half, element 32c+16+l in the low half. A last chunk of 16
// elements has zero low halves. stride is 64 for a plain row, 384 in a
// GEMM panel (bf16PanelRow).
func bf16Pairs(dst []byte, x []float32, stride int) {
	n := len(x)
	for c := 0; 32*c < n; c++ {
		for l := range 16 {
			e := 32*c + l
			var lo uint16
			if e+16 < n {
				lo = quant.F32ToBF16(x[e+16])
			}
			var hi uint16
			if e < n {
				hi = quant.F32ToBF16(x[e])
			}
			binary.LittleEndian.PutUint32(dst[stride*c+4*l:], uint32(hi)<<16|uint32(lo))
		}
	}
}

// bf16PanelRow writes one token's activations into its slot of a GEMM
// panel (bf16Pairs' chunks, 384 bytes apart).
func bf16PanelRow(dst []byte, x []float32) { bf16Pairs(dst, x, panelTokens*64) }

// bf16WPanelRow writes one token's activations rounded to BF16 and held
// as float32 into its slot of a widened GEMM panel (gemmWiden): chunk c
// (16 elements) at dst[384c:].
func bf16WPanelRow(dst []byte, x []float32) {
	for i, v := range x {
		binary.LittleEndian.PutUint32(dst[panelTokens*64*(i/16)+4*(i%16):], uint32(quant.F32ToBF16(v))<<16)
	}
}

// bf16WeightPair is dword l of chunk c of a natural BF16 weight row w of
// n elements as the tiles permute it (bf16Pairs' layout).
func bf16WeightPair(w []byte, n, c, l int) uint32 {
	e := 32*c + l
	hi := uint32(binary.LittleEndian.Uint16(w[2*e:]))
	var lo uint32
	if e+16 < n {
		lo = uint32(binary.LittleEndian.Uint16(w[2*(e+16):]))
	}
	return hi<<16 | lo
}

// dpbf16 is one lane of VDPBF16PS: acc plus the product of the high BF16
// halves of a and b, rounded, plus the product of the low halves,
// rounded; each product exact, each rounding to nearest even. Subnormal
// inputs (BF16 and the accumulator) read as zero and subnormal results,
// the intermediate one too, flush to zero, each keeping its sign: DAZ and
// FTZ as Intel documents them (MXCSR is neither consulted nor updated),
// measured on AMD Zen 5.
func dpbf16(acc float32, a, b uint32) float32 {
	acc = daz(acc)
	acc = ftz(FMA32(daz(quant.BF16ToF32(uint16(a>>16))), daz(quant.BF16ToF32(uint16(b>>16))), acc))
	return ftz(FMA32(daz(quant.BF16ToF32(uint16(a))), daz(quant.BF16ToF32(uint16(b))), acc))
}

// daz is f, or a zero of its sign where f is subnormal.
func daz(f float32) float32 {
	if math.Float32bits(f)&0x7f800000 == 0 {
		return math.Float32frombits(math.Float32bits(f) & 0x80000000)
	}
	return f
}

// ftz is f, or a zero of its sign where f is subnormal (VDPBF16PS's
// flushed result).
func ftz(f float32) float32 { return daz(f) }

// bf16PairsGemmGeneric is the portable VDPBF16PS tile, the reference of
// the SIMD tiles: rows [r0, r1) of m times bf16Pairs rows act (token j at
// j·ldb bytes) for tokens [t0, t1), into out[j·Rows + r].
func bf16PairsGemmGeneric(m *Matrix, act []byte, ldb int, out []float32, r0, r1, t0, t1 int) {
	k, rows := m.Cols, m.Rows
	chunks := (k + 31) / 32
	for r := r0; r < r1; r++ {
		w := m.Data[r*m.RowBytes : (r+1)*m.RowBytes]
		for j := t0; j < t1; j++ {
			a := act[j*ldb:]
			var acc [16]float32
			for c := range chunks {
				for l := range acc {
					acc[l] = dpbf16(acc[l], bf16WeightPair(w, k, c, l), binary.LittleEndian.Uint32(a[64*c+4*l:]))
				}
			}
			out[j*rows+r] = reduce16(&acc)
		}
	}
}
