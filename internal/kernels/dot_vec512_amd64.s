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
