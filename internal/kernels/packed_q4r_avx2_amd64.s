//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Packed Q4_0 (packQ4_0's 16-row groups) in the order of llama.cpp's
// repacked kernels, on AVX2: the same per-block int32 Σ (q−8)·a and float
// steps as packed_q4r_amd64.s's AVX-512 VNNI kernels, so the results are
// theirs bit for bit. A 64-byte register of the group holds the same four
// elements of sixteen rows; here its low 32 bytes (rows 0–7) and high 32
// bytes (rows 8–15) are two halves, each one ymm of eight rows × four
// bytes. VPMADDUBSW multiplies the unsigned nibbles by the broadcast
// activations into int16 pairs, one row's per int32 lane, so no lane ever
// needs a horizontal sum: eight of them (a block's 32 elements) add up in
// int16 without overflow (each pair is within [−3840, 3810], eight within
// [−30720, 30480]); VPMADDWD then makes the row's int32 Σ q·a and the tail's
// −8·Σa (q4rTail) makes it Σ (q−8)·a, exactly. Then, per block, acc =
// fma(float(Σ), d_w·d_a, acc) as the AVX-512 kernels do.

DATA q4a2ones<>+0(SB)/8, $0x0001000100010001
DATA q4a2ones<>+8(SB)/8, $0x0001000100010001
DATA q4a2ones<>+16(SB)/8, $0x0001000100010001
DATA q4a2ones<>+24(SB)/8, $0x0001000100010001
GLOBL q4a2ones<>(SB), RODATA|NOPTR, $32

// A2SETUP: Y15 = bytes 0x0F.
#define A2SETUP \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X15 \
	VPBROADCASTD X15, Y15

// A2SPLIT(wo): Y12 = the low nibbles of the 32 bytes at wo(SI), Y13 the
// high ones.
#define A2SPLIT(wo) \
	VMOVDQU wo(SI), Y12 \
	VPSRLW  $4, Y12, Y13 \
	VPAND   Y15, Y12, Y12 \
	VPAND   Y15, Y13, Y13

// A2TOK(alo, ahi, at, acc16): acc16 += the int16 pairs of Y12 × the four
// activation bytes at alo(at) and Y13 × those at ahi(at).
#define A2TOK(alo, ahi, at, acc16) \
	VPBROADCASTD alo(at), Y14 \
	VPMADDUBSW   Y14, Y12, Y14 \
	VPADDW       Y14, acc16, acc16 \
	VPBROADCASTD ahi(at), Y14 \
	VPMADDUBSW   Y14, Y13, Y14 \
	VPADDW       Y14, acc16, acc16

// A2FIN(tl, acc16, acc): the half's eight rows for the token whose block
// tail (float32 d_a, int32 −8·Σa) is at (tl), with the half's d_w in Y12:
// acc = fma(float(Σ q·a − 8·Σa), d_w·d_a, acc).
#define A2FIN(tl, acc16, acc) \
	VPMADDWD     q4a2ones<>(SB), acc16, acc16 \
	VPBROADCASTD 4(tl), Y14 \
	VPADDD       Y14, acc16, acc16 \
	VCVTDQ2PS    acc16, acc16 \
	VBROADCASTSS (tl), Y14 \
	VMULPS       Y14, Y12, Y14 \
	VFMADD231PS  Y14, acc16, acc

// A2HALF1(o0, o1, o2, o3, so, acc): one half (its registers at o0..o3,
// its scales at so) of the block at SI for one token (DI, tail R8).
#define A2HALF1(o0, o1, o2, o3, so, acc) \
	VPXOR     Y8, Y8, Y8 \
	A2SPLIT(o0) \
	A2TOK(2, 18, DI, Y8) \
	A2SPLIT(o1) \
	A2TOK(6, 22, DI, Y8) \
	A2SPLIT(o2) \
	A2TOK(10, 26, DI, Y8) \
	A2SPLIT(o3) \
	A2TOK(14, 30, DI, Y8) \
	VCVTPH2PS so(SI), Y12 \
	A2FIN(R8, Y8, acc)

// func gemvQ4_0r16AVX2(nb int, w, a *byte, out *float32)
TEXT ·gemvQ4_0r16AVX2(SB), NOSPLIT, $0-32
	MOVQ   nb+0(FP), CX
	MOVQ   w+8(FP), SI
	MOVQ   a+16(FP), DI
	MOVQ   out+24(FP), R11
	IMUL3Q $34, CX, R8
	ADDQ   DI, R8
	A2SETUP
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1

a2gvloop:
	TESTQ CX, CX
	JZ    a2gvdone
	A2HALF1(32, 96, 160, 224, 0, Y0)
	A2HALF1(64, 128, 192, 256, 16, Y1)
	ADDQ  $288, SI
	ADDQ  $34, DI
	ADDQ  $8, R8
	DECQ  CX
	JMP   a2gvloop

a2gvdone:
	VMOVUPS Y0, (R11)
	VMOVUPS Y1, 32(R11)
	VZEROUPPER
	RET

// A2CHUNK4(wo, alo, ahi): one register's half for the four tokens.
#define A2CHUNK4(wo, alo, ahi) \
	A2SPLIT(wo) \
	A2TOK(alo, ahi, DI, Y8) \
	A2TOK(alo, ahi, R9, Y9) \
	A2TOK(alo, ahi, R10, Y10) \
	A2TOK(alo, ahi, R12, Y11)

// A2HALF4: A2HALF1 for four tokens (activations DI, R9, R10, R12; tails
// R8, R13, R14, BX).
#define A2HALF4(o0, o1, o2, o3, so, acc0, acc1, acc2, acc3) \
	VPXOR     Y8, Y8, Y8 \
	VPXOR     Y9, Y9, Y9 \
	VPXOR     Y10, Y10, Y10 \
	VPXOR     Y11, Y11, Y11 \
	A2CHUNK4(o0, 2, 18) \
	A2CHUNK4(o1, 6, 22) \
	A2CHUNK4(o2, 10, 26) \
	A2CHUNK4(o3, 14, 30) \
	VCVTPH2PS so(SI), Y12 \
	A2FIN(R8, Y8, acc0) \
	A2FIN(R13, Y9, acc1) \
	A2FIN(R14, Y10, acc2) \
	A2FIN(BX, Y11, acc3)

// func gemmQ4_0r16x4AVX2(nb int, w, a *byte, astride int, out *float32, ostride int)
// Four tokens (activation rows astride bytes apart; outputs ostride bytes
// apart), each bit-identical to gemvQ4_0r16AVX2.
TEXT ·gemmQ4_0r16x4AVX2(SB), NOSPLIT, $0-48
	MOVQ   nb+0(FP), CX
	MOVQ   w+8(FP), SI
	MOVQ   a+16(FP), DI
	MOVQ   astride+24(FP), DX
	MOVQ   out+32(FP), R11
	LEAQ   (DI)(DX*1), R9
	LEAQ   (R9)(DX*1), R10
	LEAQ   (R10)(DX*1), R12
	IMUL3Q $34, CX, AX
	LEAQ   (DI)(AX*1), R8
	LEAQ   (R9)(AX*1), R13
	LEAQ   (R10)(AX*1), R14
	LEAQ   (R12)(AX*1), BX
	A2SETUP
	ZEROY8

a2g4loop:
	TESTQ CX, CX
	JZ    a2g4done
	A2HALF4(32, 96, 160, 224, 0, Y0, Y2, Y4, Y6)
	A2HALF4(64, 128, 192, 256, 16, Y1, Y3, Y5, Y7)
	ADDQ  $288, SI
	ADDQ  $34, DI
	ADDQ  $34, R9
	ADDQ  $34, R10
	ADDQ  $34, R12
	ADDQ  $8, R8
	ADDQ  $8, R13
	ADDQ  $8, R14
	ADDQ  $8, BX
	DECQ  CX
	JMP   a2g4loop

a2g4done:
	MOVQ    ostride+40(FP), AX
	VMOVUPS Y0, (R11)
	VMOVUPS Y1, 32(R11)
	ADDQ    AX, R11
	VMOVUPS Y2, (R11)
	VMOVUPS Y3, 32(R11)
	ADDQ    AX, R11
	VMOVUPS Y4, (R11)
	VMOVUPS Y5, 32(R11)
	ADDQ    AX, R11
	VMOVUPS Y6, (R11)
	VMOVUPS Y7, 32(R11)
	VZEROUPPER
	RET
