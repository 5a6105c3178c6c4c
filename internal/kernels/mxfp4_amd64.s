//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "packed_amd64.h"

// MXFP4 × Q8_0. A weight block is { u8 e; u8 qs[16] } (17 bytes): x =
// code·2^(e−128), the codes looked up by VPSHUFB (mxfp4Codes), the scale
// from mxfp4Scales. Two orders, as llama.cpp sums them on AVX2/AVX-512:
//
//   - dotMXFP4AVX2: ggml_vec_dot_mxfp4_q8_0's AVX2 path (matrices whose
//     row count is not a multiple of 8): even and odd blocks in two
//     accumulators, acc = fma(d_x·d_y, lanes, acc), hsum_float_8 of their
//     sum, a last odd block as sumf = fma(d, float(Σ), sumf). See pairOrder.
//   - gemvMXFP4r16 / gemmMXFP4r16x4: ggml_gemv/gemm_mxfp4_8x8_q8_0, which
//     llama.cpp runs for MXFP4 weights with a multiple of 8 rows (its
//     repacked buffer, mul_mat and mul_mat_id alike): per row and block
//     the whole int32 Σ q·a, then acc = fma(float(Σ), d_w·d_a, acc). See
//     repackedOrder. The weights are in the packed layout of packMXFP4;
//     the activation tail (sumTail) holds per block float32 d_a and the
//     int32 −12·Σa that VPDPBUSD's sum over the biased codes (code + 12,
//     unsigned) needs.

// MXMULSUM: Y6 = int32 lanes of Σ Y2[i]·Y3[i] for signed bytes (|Y2| ≤ 12,
// so VPMADDUBSW cannot saturate); Y15 = int16 ones.
#define MXMULSUM \
	VPSIGNB    Y2, Y2, Y4 \
	VPSIGNB    Y2, Y3, Y5 \
	VPMADDUBSW Y5, Y4, Y6 \
	VPMADDWD   Y15, Y6, Y6

// MXLANES: Y6 = int32 lanes of the block at (SI) against the Q8_0 block at
// (DI), lane k elements 4k..4k+3; Y1 = 2^(e−128)·d_a broadcast. R12 holds
// mxfp4Scales, Y13 mxfp4Codes (both halves), Y14 bytes 0x0F.
#define MXLANES \
	MOVBLZX      (SI), AX \
	MOVWLZX      (DI), BX \
	VMOVSS       (R12)(AX*4), X1 \
	VMOVD        BX, X2 \
	VCVTPH2PS    X2, X2 \
	VMULSS       X2, X1, X1 \
	VBROADCASTSS X1, Y1 \
	VMOVDQU      1(SI), X2 \
	VPSRLW       $4, X2, X3 \
	VINSERTI128  $1, X3, Y2, Y2 \
	VPAND        Y14, Y2, Y2 \
	VPSHUFB      Y2, Y13, Y2 \
	VMOVDQU      2(DI), Y3 \
	MXMULSUM

// func dotMXFP4AVX2(nb int, x, y *byte) float32
TEXT ·dotMXFP4AVX2(SB), NOSPLIT, $0-28
	MOVQ           nb+0(FP), CX
	MOVQ           x+8(FP), SI
	MOVQ           y+16(FP), DI
	LEAQ           ·mxfp4Scales(SB), R12
	VXORPS         Y0, Y0, Y0
	VXORPS         Y7, Y7, Y7
	VPCMPEQW       Y15, Y15, Y15
	VPSRLW         $15, Y15, Y15
	MOVL           $0x0f0f0f0f, AX
	VMOVD          AX, X14
	VPBROADCASTD   X14, Y14
	VBROADCASTI128 ·mxfp4Codes(SB), Y13

mxloop:
	CMPQ        CX, $2
	JL          mxpairs
	MXLANES
	VCVTDQ2PS   Y6, Y6
	VFMADD231PS Y6, Y1, Y0
	ADDQ        $17, SI
	ADDQ        $34, DI
	MXLANES
	VCVTDQ2PS   Y6, Y6
	VFMADD231PS Y6, Y1, Y7
	ADDQ        $17, SI
	ADDQ        $34, DI
	SUBQ        $2, CX
	JMP         mxloop

mxpairs:
	VADDPS Y7, Y0, Y0
	HSUM
	TESTQ  CX, CX
	JZ     mxdone
	VMOVAPS      X0, X8
	MXLANES
	VEXTRACTI128 $1, Y6, X7
	VPADDD       X7, X6, X6
	VPHADDD      X6, X6, X6
	VPHADDD      X6, X6, X6
	VCVTDQ2PS    X6, X6
	VFMADD231SS  X6, X1, X8
	VMOVAPS      X8, X0

mxdone:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// MXRSETUP: Z31 = bytes 0x0F, Z30 = mxfp4CodesBiased in every 128-bit
// lane, Z4 = int32 128, Z5 = float 1.
#define MXRSETUP \
	MOVL            $0x0f0f0f0f, AX \
	VPBROADCASTD    AX, Z31 \
	MOVL            $128, AX \
	VPBROADCASTD    AX, Z4 \
	MOVL            $0x3f800000, AX \
	VPBROADCASTD    AX, Z5 \
	VBROADCASTI32X4 ·mxfp4CodesBiased(SB), Z30

// MXRSCALES: Z6 = 2^(e−128) of the group block's 16 rows (exact, the
// subnormals of e = 0 and 1 included: VSCALEFPS of 1 by e−128).
#define MXRSCALES \
	VPMOVZXBD (SI), Z6 \
	VPSUBD    Z4, Z6, Z6 \
	VCVTDQ2PS Z6, Z6 \
	VSCALEFPS Z6, Z5, Z6

// MXRSPLIT: the 16 rows' biased codes, lanes j (low nibbles) in Z9+2j,
// lanes 4+j (high nibbles) in Z10+2j.
#define MXRSPLIT \
	VMOVDQU64 16(SI), Z17 \
	VPANDD    Z31, Z17, Z9 \
	VPSRLW    $4, Z17, Z10 \
	VPANDD    Z31, Z10, Z10 \
	VPSHUFB   Z9, Z30, Z9 \
	VPSHUFB   Z10, Z30, Z10 \
	VMOVDQU64 80(SI), Z17 \
	VPANDD    Z31, Z17, Z11 \
	VPSRLW    $4, Z17, Z12 \
	VPANDD    Z31, Z12, Z12 \
	VPSHUFB   Z11, Z30, Z11 \
	VPSHUFB   Z12, Z30, Z12 \
	VMOVDQU64 144(SI), Z17 \
	VPANDD    Z31, Z17, Z13 \
	VPSRLW    $4, Z17, Z14 \
	VPANDD    Z31, Z14, Z14 \
	VPSHUFB   Z13, Z30, Z13 \
	VPSHUFB   Z14, Z30, Z14 \
	VMOVDQU64 208(SI), Z17 \
	VPANDD    Z31, Z17, Z15 \
	VPSRLW    $4, Z17, Z16 \
	VPANDD    Z31, Z16, Z16 \
	VPSHUFB   Z15, Z30, Z15 \
	VPSHUFB   Z16, Z30, Z16

// MXRBLOCK: int32 Σ over one block for one token into i0 (starting from
// the correction at 4(cp)), using i1 for the high halves; then
// acc = fma(float(i0), d, acc) with d = 2^(e−128)·d_a (d_a at (cp)).
#define MXRBLOCK(ap, cp, d, i0, i1, acc) \
	VMULPS.BCST   (cp), Z6, d \
	VPBROADCASTD  4(cp), i0 \
	VPXORD        i1, i1, i1 \
	VPDPBUSD.BCST 2(ap), Z9, i0 \
	VPDPBUSD.BCST 18(ap), Z10, i1 \
	VPDPBUSD.BCST 6(ap), Z11, i0 \
	VPDPBUSD.BCST 22(ap), Z12, i1 \
	VPDPBUSD.BCST 10(ap), Z13, i0 \
	VPDPBUSD.BCST 26(ap), Z14, i1 \
	VPDPBUSD.BCST 14(ap), Z15, i0 \
	VPDPBUSD.BCST 30(ap), Z16, i1 \
	VPADDD        i1, i0, i0 \
	VCVTDQ2PS     i0, i0 \
	VFMADD231PS   d, i0, acc

// func gemvMXFP4r16(nb int, w, a *byte, out *float32)
TEXT ·gemvMXFP4r16(SB), NOSPLIT, $0-32
	MOVQ   nb+0(FP), CX
	MOVQ   w+8(FP), SI
	MOVQ   a+16(FP), DI
	MOVQ   out+24(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	ADDQ   DI, R8
	MXRSETUP
	VPXORD Z0, Z0, Z0

mxrloop:
	TESTQ CX, CX
	JZ    mxrdone
	PF4(0)
	PF1(256)
	MXRSCALES
	MXRSPLIT
	MXRBLOCK(DI, R8, Z8, Z18, Z19, Z0)
	ADDQ  $272, SI
	ADDQ  $34, DI
	ADDQ  $8, R8
	DECQ  CX
	JMP   mxrloop

mxrdone:
	VMOVUPS Z0, (R11)
	VZEROUPPER
	RET

// func gemmMXFP4r16x4(nb int, w, a *byte, astride int, out *float32, ostride int)
// Four tokens (activation rows astride bytes apart; outputs ostride bytes
// apart), each bit-identical to gemvMXFP4r16.
TEXT ·gemmMXFP4r16x4(SB), NOSPLIT, $0-48
	MOVQ   nb+0(FP), CX
	MOVQ   w+8(FP), SI
	MOVQ   a+16(FP), DI
	MOVQ   astride+24(FP), DX
	MOVQ   out+32(FP), R11
	PFLOAD
	LEAQ   (DI)(DX*1), R9
	LEAQ   (R9)(DX*1), R10
	LEAQ   (R10)(DX*1), R12
	IMUL3Q $34, CX, AX
	LEAQ   (DI)(AX*1), R8
	LEAQ   (R9)(AX*1), R13
	LEAQ   (R10)(AX*1), R14
	LEAQ   (R12)(AX*1), BX
	MXRSETUP
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

mxr4loop:
	TESTQ CX, CX
	JZ    mxr4done
	PF4(0)
	PF1(256)
	MXRSCALES
	MXRSPLIT
	MXRBLOCK(DI, R8, Z8, Z18, Z19, Z0)
	MXRBLOCK(R9, R13, Z20, Z21, Z22, Z1)
	MXRBLOCK(R10, R14, Z23, Z24, Z25, Z2)
	MXRBLOCK(R12, BX, Z26, Z27, Z28, Z3)
	ADDQ  $272, SI
	ADDQ  $34, DI
	ADDQ  $34, R9
	ADDQ  $34, R10
	ADDQ  $34, R12
	ADDQ  $8, R8
	ADDQ  $8, R13
	ADDQ  $8, R14
	ADDQ  $8, BX
	DECQ  CX
	JMP   mxr4loop

mxr4done:
	MOVQ    ostride+40(FP), AX
	VMOVUPS Z0, (R11)
	ADDQ    AX, R11
	VMOVUPS Z1, (R11)
	ADDQ    AX, R11
	VMOVUPS Z2, (R11)
	ADDQ    AX, R11
	VMOVUPS Z3, (R11)
	VZEROUPPER
	RET
