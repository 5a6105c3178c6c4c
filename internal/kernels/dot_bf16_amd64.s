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
