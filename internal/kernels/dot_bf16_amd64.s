//go:build amd64 && !purego

#include "textflag.h"

// One-token BF16 products in the order of ggml_vec_dot_bf16's AVX512F
// branch (see bf16.go): two 16-lane FMA accumulators over 32-element
// steps, each reduced as _mm512_reduce_add_ps does, then added in double.
// The elements past the last multiple of 32 are added by the Go wrapper
// (bf16VecTail).

// RED16 adds the 16 lanes of Z<z> (8+8, 4+4, 2+2, 1+1) into X<x> lane 0;
// clobbers Y<t> and X<u>.
#define RED16(z, y, x, t, u) \
	VEXTRACTF64X4 $1, z, t \
	VADDPS        y, t, y \
	VEXTRACTF32X4 $1, y, u \
	VADDPS        u, x, x \
	VPERMILPS     $0x4E, x, u \
	VADDPS        u, x, x \
	VMOVSHDUP     x, u \
	VADDSS        u, x, x

// func dotBF16VecAVX512(n int, x *byte, y *float32) float64
// n a positive multiple of 32; x BF16 weights, y BF16-rounded activations
// as float32. Returns 0 + (double)reduce(c1) + (double)reduce(c2).
TEXT ·dotBF16VecAVX512(SB), NOSPLIT, $0-32
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	MOVQ   ·prefetchAhead(SB), R15
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1

bf16vloop:
	PREFETCHT0  (SI)(R15*1)
	VPMOVZXWD   (SI), Z2
	VPMOVZXWD   32(SI), Z3
	VPSLLD      $16, Z2, Z2
	VPSLLD      $16, Z3, Z3
	VFMADD231PS (DI), Z2, Z0
	VFMADD231PS 64(DI), Z3, Z1
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JNZ         bf16vloop

	RED16(Z0, Y0, X0, Y2, X3)
	RED16(Z1, Y1, X1, Y4, X5)
	VCVTSS2SD X0, X0, X0
	VCVTSS2SD X1, X1, X1
	VXORPD    X2, X2, X2
	VADDSD    X0, X2, X2
	VADDSD    X1, X2, X2
	VMOVSD    X2, ret+24(FP)
	VZEROUPPER
	RET

// func dpbf16x16(acc *[16]float32, a, b *[16]uint32)
// One VDPBF16PS on sixteen lanes (the tests' check of dpbf16).
TEXT ·dpbf16x16(SB), NOSPLIT, $0-24
	MOVQ      acc+0(FP), AX
	MOVQ      a+8(FP), BX
	MOVQ      b+16(FP), CX
	VMOVUPS   (AX), Z0
	VMOVDQU32 (BX), Z1
	VMOVDQU32 (CX), Z2
	// VDPBF16PS Z2, Z1, Z0
	BYTE $0x62; BYTE $0xf2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xc2
	VMOVUPS   Z0, (AX)
	VZEROUPPER
	RET

// BF16FOLD folds Z0, Z1 as dotBF16VecAVX512 does and stores the double at
// off(DX).
#define BF16FOLD(off) \
	RED16(Z0, Y0, X0, Y2, X3) \
	RED16(Z1, Y1, X1, Y4, X5) \
	VCVTSS2SD X0, X0, X0 \
	VCVTSS2SD X1, X1, X1 \
	VXORPD    X2, X2, X2 \
	VADDSD    X0, X2, X2 \
	VADDSD    X1, X2, X2 \
	VMOVSD    X2, off(DX)

// BF16FOLD4 folds four results to DX[0..3] (float64s): the first in Z0,
// Z1, the others in Z20, Z21 / Z22, Z23 / Z24, Z25.
#define BF16FOLD4 \
	BF16FOLD(0) \
	VMOVAPS Z20, Z0 \
	VMOVAPS Z21, Z1 \
	BF16FOLD(8) \
	VMOVAPS Z22, Z0 \
	VMOVAPS Z23, Z1 \
	BF16FOLD(16) \
	VMOVAPS Z24, Z0 \
	VMOVAPS Z25, Z1 \
	BF16FOLD(24)

// func dotBF16Vec4AVX512(n int, x *byte, y *float32, ystride int, out *float64)
// dotBF16VecAVX512 for four tokens (y, y+ystride, … bytes apart) against one
// weight row: the weights are widened once per 32-element step and feed
// each token's own two accumulators (token t: Z2t, Z2t+1) with the same
// FMAs; each token is folded as the one-token kernel folds, so out[t] is
// its result bit for bit (TestDot4Exact).
TEXT ·dotBF16Vec4AVX512(SB), NOSPLIT, $0-40
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

bf16v4loop:
	PREFETCHT0  (SI)(R15*1)
	VPMOVZXWD   (SI), Z16
	VPMOVZXWD   32(SI), Z17
	VPSLLD      $16, Z16, Z16
	VPSLLD      $16, Z17, Z17
	VFMADD231PS (DI), Z16, Z0
	VFMADD231PS 64(DI), Z17, Z1
	VFMADD231PS (R9), Z16, Z2
	VFMADD231PS 64(R9), Z17, Z3
	VFMADD231PS (R10), Z16, Z4
	VFMADD231PS 64(R10), Z17, Z5
	VFMADD231PS (R11), Z16, Z6
	VFMADD231PS 64(R11), Z17, Z7
	ADDQ        $64, SI
	ADDQ        $128, DI
	ADDQ        $128, R9
	ADDQ        $128, R10
	ADDQ        $128, R11
	SUBQ        $32, CX
	JNZ         bf16v4loop

	// Tokens 1-3 wait in Z20..Z25 while BF16FOLD folds Z0, Z1.
	VMOVAPS Z2, Z20
	VMOVAPS Z3, Z21
	VMOVAPS Z4, Z22
	VMOVAPS Z5, Z23
	VMOVAPS Z6, Z24
	VMOVAPS Z7, Z25
	BF16FOLD4
	VZEROUPPER
	RET

// WIDEN2 widens 32 BF16 weights at (r) to float32 in Z6, Z7.
#define WIDEN2(r) \
	VPMOVZXWD (r), Z6 \
	VPMOVZXWD 32(r), Z7 \
	VPSLLD    $16, Z6, Z6 \
	VPSLLD    $16, Z7, Z7

// func dotBF16Vec4RowsAVX512(n int, x0, x1, x2, x3 *byte, y *uint16, out *float64)
// dotBF16VecAVX512 of one token against four weight rows (n a positive
// multiple of 32), each folded as the one-token kernel folds it, so
// out[r] is its result bit for bit (TestRows4Exact). Decode hands it rows
// a quarter of a worker's range apart: four sequential streams, and the
// activation row narrowed to BF16 (exact), as dotF16Vec4RowsAVX512 takes
// it and for the same reason.
TEXT ·dotBF16Vec4RowsAVX512(SB), NOSPLIT, $0-56
	MOVQ   n+0(FP), CX
	MOVQ   x0+8(FP), SI
	MOVQ   x1+16(FP), R9
	MOVQ   x2+24(FP), R10
	MOVQ   x3+32(FP), R11
	MOVQ   y+40(FP), DI
	MOVQ   out+48(FP), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25

bf16r4loop:
	VPMOVZXWD   (DI), Z16
	VPMOVZXWD   32(DI), Z17
	VPSLLD      $16, Z16, Z16
	VPSLLD      $16, Z17, Z17
	WIDEN2(SI)
	VFMADD231PS Z16, Z6, Z0
	VFMADD231PS Z17, Z7, Z1
	WIDEN2(R9)
	VFMADD231PS Z16, Z6, Z20
	VFMADD231PS Z17, Z7, Z21
	WIDEN2(R10)
	VFMADD231PS Z16, Z6, Z22
	VFMADD231PS Z17, Z7, Z23
	WIDEN2(R11)
	VFMADD231PS Z16, Z6, Z24
	VFMADD231PS Z17, Z7, Z25
	ADDQ        $64, SI
	ADDQ        $64, R9
	ADDQ        $64, R10
	ADDQ        $64, R11
	ADDQ        $64, DI
	SUBQ        $32, CX
	JNZ         bf16r4loop

	BF16FOLD4
	VZEROUPPER
	RET
