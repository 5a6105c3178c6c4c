//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// One-token F16 and BF16 products on AVX2 in the orders of llama.cpp's
// AVX-512 build (the recordings'; dot_vec512_amd64.s and dot_bf16_amd64.s
// run them on AVX-512): each 16-lane accumulator is a pair of 8-lane
// registers, element e of a step in register e/8, and the folds are the
// same additions in the same order. The elements past the last whole step
// are added by the Go wrappers (f16VecTail, bf16VecTail).

// func dotF16VecAVX2(n int, x *byte, y *float32) float32
// n a multiple of 64; x F16 weights, y F16-rounded activations as float32:
// ggml_vec_dot_f16's four 16-lane accumulators as Y0..Y7, then REDUCE512Y.
TEXT ·dotF16VecAVX2(SB), NOSPLIT, $0-28
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ ·prefetchAhead(SB), R15
	ZEROY8

f16v2loop:
	CMPQ        CX, $64
	JL          f16v2done
	// Weights prefetchAhead bytes ahead, as the packed kernels.
	PREFETCHT0  (SI)(R15*1)
	PREFETCHT0  64(SI)(R15*1)
	VCVTPH2PS   0(SI), Y8
	VFMADD231PS 0(DI), Y8, Y0
	VCVTPH2PS   16(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	VCVTPH2PS   32(SI), Y10
	VFMADD231PS 64(DI), Y10, Y2
	VCVTPH2PS   48(SI), Y11
	VFMADD231PS 96(DI), Y11, Y3
	VCVTPH2PS   64(SI), Y8
	VFMADD231PS 128(DI), Y8, Y4
	VCVTPH2PS   80(SI), Y9
	VFMADD231PS 160(DI), Y9, Y5
	VCVTPH2PS   96(SI), Y10
	VFMADD231PS 192(DI), Y10, Y6
	VCVTPH2PS   112(SI), Y11
	VFMADD231PS 224(DI), Y11, Y7
	ADDQ        $128, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         f16v2loop

f16v2done:
	REDUCE512Y
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotBF16VecAVX2(n int, x *byte, y *float32) float64
// n a positive multiple of 32; x BF16 weights, y BF16-rounded activations
// as float32. ggml_vec_dot_bf16's two 16-lane accumulators c1, c2 as Y0:Y1
// and Y2:Y3 (elements 0-15 and 16-31 of each step), each reduced as
// _mm512_reduce_add_ps does (low + high half, then HSUM's tree); returns
// 0 + (double)reduce(c1) + (double)reduce(c2).
TEXT ·dotBF16VecAVX2(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ ·prefetchAhead(SB), R15
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

bf16v2loop:
	PREFETCHT0  (SI)(R15*1)
	VPMOVZXWD   0(SI), Y8
	VPSLLD      $16, Y8, Y8
	VFMADD231PS 0(DI), Y8, Y0
	VPMOVZXWD   16(SI), Y9
	VPSLLD      $16, Y9, Y9
	VFMADD231PS 32(DI), Y9, Y1
	VPMOVZXWD   32(SI), Y10
	VPSLLD      $16, Y10, Y10
	VFMADD231PS 64(DI), Y10, Y2
	VPMOVZXWD   48(SI), Y11
	VPSLLD      $16, Y11, Y11
	VFMADD231PS 96(DI), Y11, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JNZ         bf16v2loop

	VADDPS    Y1, Y0, Y0
	HSUM
	VCVTSS2SD X0, X4, X4
	VADDPS    Y3, Y2, Y0
	HSUM
	VCVTSS2SD X0, X0, X0
	VXORPD    X2, X2, X2
	VADDSD    X4, X2, X2
	VADDSD    X0, X2, X2
	VMOVSD    X2, ret+24(FP)
	VZEROUPPER
	RET
