//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// One-token F16 and F32 products in the order of ggml_vec_dot_f16 /
// ggml_vec_dot_f32 as llama.cpp's AVX-512 build runs them: four 16-lane
// FMA accumulators over 64-element steps (element e in lane e mod 64), then
// (s0+s2) + (s1+s3) and _mm512_reduce_add_ps's halving tree. The elements
// past the last multiple of 64 are added by the Go wrappers (see
// dotF16VecOrder / dotF32VecOrder).

// REDUCE4: Z0 = fold of Z0..Z3; X0 = its 16-lane halving sum.
#define REDUCE4 \
	VADDPS        Z2, Z0, Z0 \
	VADDPS        Z3, Z1, Z1 \
	VADDPS        Z1, Z0, Z0 \
	VEXTRACTF32X8 $1, Z0, Y1 \
	VADDPS        Y1, Y0, Y0 \
	HSUM

// func dotF16VecAVX512(n int, x *byte, y *float32) float32
// n a multiple of 64; x F16 weights, y F16-rounded activations as float32.
TEXT ·dotF16VecAVX512(SB), NOSPLIT, $0-28
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	MOVQ   ·prefetchAhead(SB), R15
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

f16vloop:
	CMPQ        CX, $64
	JL          f16vdone
	// Weights prefetchAhead bytes ahead, as the packed kernels.
	PREFETCHT0  (SI)(R15*1)
	PREFETCHT0  64(SI)(R15*1)
	VCVTPH2PS   (SI), Z4
	VCVTPH2PS   32(SI), Z5
	VCVTPH2PS   64(SI), Z6
	VCVTPH2PS   96(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $128, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         f16vloop

f16vdone:
	REDUCE4
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF32VecAVX512(n int, x, y *float32) float32
// n a multiple of 64.
TEXT ·dotF32VecAVX512(SB), NOSPLIT, $0-28
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	MOVQ   ·prefetchAhead(SB), R15
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

f32vloop:
	CMPQ        CX, $64
	JL          f32vdone
	PREFETCHT0  (SI)(R15*1)
	PREFETCHT0  64(SI)(R15*1)
	PREFETCHT0  128(SI)(R15*1)
	PREFETCHT0  192(SI)(R15*1)
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         f32vloop

f32vdone:
	REDUCE4
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF16Vec4AVX512(n int, x *byte, y *float32, ystride int, out *float32)
// dotF16VecAVX512 for four tokens (y, y+ystride, … bytes apart) against one
// weight row: each 64-element step converts the weights once and feeds
// each token's own four accumulators (token t: Z4t..Z4t+3) with the same
// FMAs in the same order, then each token is folded as REDUCE4 does — so
// out[t] is bit for bit the one-token result (TestDot4Exact). Speculative
// verification runs k+1 tokens in this order: the weights are read once.
TEXT ·dotF16Vec4AVX512(SB), NOSPLIT, $0-40
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	MOVQ   ystride+24(FP), R8
	MOVQ   out+32(FP), DX
	MOVQ   ·prefetchAhead(SB), R15
	LEAQ   (DI)(R8*1), R9
	LEAQ   (R9)(R8*1), R10
	LEAQ   (R10)(R8*1), R11
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

f16v4loop:
	CMPQ        CX, $64
	JL          f16v4done
	PREFETCHT0  (SI)(R15*1)
	PREFETCHT0  64(SI)(R15*1)
	VCVTPH2PS   (SI), Z16
	VCVTPH2PS   32(SI), Z17
	VCVTPH2PS   64(SI), Z18
	VCVTPH2PS   96(SI), Z19
	VFMADD231PS (DI), Z16, Z0
	VFMADD231PS 64(DI), Z17, Z1
	VFMADD231PS 128(DI), Z18, Z2
	VFMADD231PS 192(DI), Z19, Z3
	VFMADD231PS (R9), Z16, Z4
	VFMADD231PS 64(R9), Z17, Z5
	VFMADD231PS 128(R9), Z18, Z6
	VFMADD231PS 192(R9), Z19, Z7
	VFMADD231PS (R10), Z16, Z8
	VFMADD231PS 64(R10), Z17, Z9
	VFMADD231PS 128(R10), Z18, Z10
	VFMADD231PS 192(R10), Z19, Z11
	VFMADD231PS (R11), Z16, Z12
	VFMADD231PS 64(R11), Z17, Z13
	VFMADD231PS 128(R11), Z18, Z14
	VFMADD231PS 192(R11), Z19, Z15
	ADDQ        $128, SI
	ADDQ        $256, DI
	ADDQ        $256, R9
	ADDQ        $256, R10
	ADDQ        $256, R11
	SUBQ        $64, CX
	JMP         f16v4loop

f16v4done:
	// Tokens 1-3 wait in Z20..Z31 while REDUCE4 folds Z0..Z3.
	VMOVAPS Z4, Z20
	VMOVAPS Z5, Z21
	VMOVAPS Z6, Z22
	VMOVAPS Z7, Z23
	VMOVAPS Z8, Z24
	VMOVAPS Z9, Z25
	VMOVAPS Z10, Z26
	VMOVAPS Z11, Z27
	VMOVAPS Z12, Z28
	VMOVAPS Z13, Z29
	VMOVAPS Z14, Z30
	VMOVAPS Z15, Z31
	REDUCE4
	VMOVSS  X0, (DX)
	VMOVAPS Z20, Z0
	VMOVAPS Z21, Z1
	VMOVAPS Z22, Z2
	VMOVAPS Z23, Z3
	REDUCE4
	VMOVSS  X0, 4(DX)
	VMOVAPS Z24, Z0
	VMOVAPS Z25, Z1
	VMOVAPS Z26, Z2
	VMOVAPS Z27, Z3
	REDUCE4
	VMOVSS  X0, 8(DX)
	VMOVAPS Z28, Z0
	VMOVAPS Z29, Z1
	VMOVAPS Z30, Z2
	VMOVAPS Z31, Z3
	REDUCE4
	VMOVSS  X0, 12(DX)
	VZEROUPPER
	RET

// func dotF16Vec4RowsAVX512(n int, x0, x1, x2, x3 *byte, y *uint16, out *float32)
// dotF16VecAVX512 of one token against four weight rows (n a multiple of
// 64), each row folded as the one-token kernel folds it, so out[r] is its
// result bit for bit (TestRows4Exact). y is the activation row narrowed to
// F16 (exact: it holds F16-rounded values), half the bytes of the float32
// row: a 5632-element row as float32 (22 KB) and the four streams' lines
// crowd the 32 KB L1, and the down projection's shape read at 24 GB/s on
// one Zen 4 core against 31 with F16 (BenchmarkFloatDecode). Decode hands it rows a quarter of a
// worker's range apart: four sequential streams keep more of the memory's
// reads in flight than one (BenchmarkFloatDecode, one core ~31–34 → ~40 GB/s);
// adjacent rows would break each stream at every page and read slower
// than one stream.
TEXT ·dotF16Vec4RowsAVX512(SB), NOSPLIT, $0-56
	MOVQ   n+0(FP), CX
	MOVQ   x0+8(FP), SI
	MOVQ   x1+16(FP), R9
	MOVQ   x2+24(FP), R10
	MOVQ   x3+32(FP), R11
	MOVQ   y+40(FP), DI
	MOVQ   out+48(FP), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23

f16r4loop:
	CMPQ        CX, $64
	JL          f16r4done
	VCVTPH2PS   (DI), Z12
	VCVTPH2PS   32(DI), Z13
	VCVTPH2PS   64(DI), Z14
	VCVTPH2PS   96(DI), Z15
	VCVTPH2PS   (SI), Z4
	VCVTPH2PS   32(SI), Z5
	VCVTPH2PS   64(SI), Z6
	VCVTPH2PS   96(SI), Z7
	VFMADD231PS Z12, Z4, Z0
	VFMADD231PS Z13, Z5, Z1
	VFMADD231PS Z14, Z6, Z2
	VFMADD231PS Z15, Z7, Z3
	VCVTPH2PS   (R9), Z4
	VCVTPH2PS   32(R9), Z5
	VCVTPH2PS   64(R9), Z6
	VCVTPH2PS   96(R9), Z7
	VFMADD231PS Z12, Z4, Z8
	VFMADD231PS Z13, Z5, Z9
	VFMADD231PS Z14, Z6, Z10
	VFMADD231PS Z15, Z7, Z11
	VCVTPH2PS   (R10), Z4
	VCVTPH2PS   32(R10), Z5
	VCVTPH2PS   64(R10), Z6
	VCVTPH2PS   96(R10), Z7
	VFMADD231PS Z12, Z4, Z16
	VFMADD231PS Z13, Z5, Z17
	VFMADD231PS Z14, Z6, Z18
	VFMADD231PS Z15, Z7, Z19
	VCVTPH2PS   (R11), Z4
	VCVTPH2PS   32(R11), Z5
	VCVTPH2PS   64(R11), Z6
	VCVTPH2PS   96(R11), Z7
	VFMADD231PS Z12, Z4, Z20
	VFMADD231PS Z13, Z5, Z21
	VFMADD231PS Z14, Z6, Z22
	VFMADD231PS Z15, Z7, Z23
	ADDQ        $128, SI
	ADDQ        $128, R9
	ADDQ        $128, R10
	ADDQ        $128, R11
	ADDQ        $128, DI
	SUBQ        $64, CX
	JMP         f16r4loop

f16r4done:
	REDUCE4
	VMOVSS  X0, (DX)
	VMOVAPS Z8, Z0
	VMOVAPS Z9, Z1
	VMOVAPS Z10, Z2
	VMOVAPS Z11, Z3
	REDUCE4
	VMOVSS  X0, 4(DX)
	VMOVAPS Z16, Z0
	VMOVAPS Z17, Z1
	VMOVAPS Z18, Z2
	VMOVAPS Z19, Z3
	REDUCE4
	VMOVSS  X0, 8(DX)
	VMOVAPS Z20, Z0
	VMOVAPS Z21, Z1
	VMOVAPS Z22, Z2
	VMOVAPS Z23, Z3
	REDUCE4
	VMOVSS  X0, 12(DX)
	VZEROUPPER
	RET
