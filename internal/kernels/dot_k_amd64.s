//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// KX4ARGS: a four-token K kernel's arguments (nb int, x, y *byte, ystride
// int, out *float32; out is read at the end): CX blocks, SI weights, the
// activation rows in DI, R8, R9, DX; the four float accumulators at
// 0-127(SP) zeroed.
#define KX4ARGS \
	MOVQ nb+0(FP), CX \
	MOVQ x+8(FP), SI \
	MOVQ y+16(FP), DI \
	MOVQ ystride+24(FP), AX \
	LEAQ (DI)(AX*1), R8 \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (R9)(AX*1), DX \
	VXORPS  Y0, Y0, Y0 \
	VMOVUPS Y0, 0(SP) \
	VMOVUPS Y0, 32(SP) \
	VMOVUPS Y0, 64(SP) \
	VMOVUPS Y0, 96(SP)

// Q4_K × Q8_K, AVX2: the computation of ggml's AVX2 ggml_vec_dot_q4_K_q8_K,
// operation for operation, so the float sums happen in llama.cpp's order.
// Per super-block: int32 lanes Σ_j scale_j·(4 products) over the eight
// sub-blocks; acc += d·lanes with d = d_y·d_x; the mins term
// acc_m += (−d_y·dmin_x)·(mins·pairwise bsums) on four lanes; the result is
// hsum8(acc) + ((m0+m2)+(m1+m3)).

DATA shufk4<>+0(SB)/8, $0x0100010001000100
DATA shufk4<>+8(SB)/8, $0x0100010001000100
DATA shufk4<>+16(SB)/8, $0x0100010001000100
DATA shufk4<>+24(SB)/8, $0x0100010001000100
DATA shufk4<>+32(SB)/8, $0x0302030203020302
DATA shufk4<>+40(SB)/8, $0x0302030203020302
DATA shufk4<>+48(SB)/8, $0x0302030203020302
DATA shufk4<>+56(SB)/8, $0x0302030203020302
DATA shufk4<>+64(SB)/8, $0x0504050405040504
DATA shufk4<>+72(SB)/8, $0x0504050405040504
DATA shufk4<>+80(SB)/8, $0x0504050405040504
DATA shufk4<>+88(SB)/8, $0x0504050405040504
DATA shufk4<>+96(SB)/8, $0x0706070607060706
DATA shufk4<>+104(SB)/8, $0x0706070607060706
DATA shufk4<>+112(SB)/8, $0x0706070607060706
DATA shufk4<>+120(SB)/8, $0x0706070607060706
DATA shufk4<>+128(SB)/8, $0x0908090809080908
DATA shufk4<>+136(SB)/8, $0x0908090809080908
DATA shufk4<>+144(SB)/8, $0x0908090809080908
DATA shufk4<>+152(SB)/8, $0x0908090809080908
DATA shufk4<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufk4<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufk4<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufk4<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufk4<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufk4<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufk4<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufk4<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufk4<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA shufk4<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA shufk4<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA shufk4<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL shufk4<>(SB), RODATA|NOPTR, $256

// KACC: acc Y0 += (f16(doff(SI))·d_y)·float(Y9), the super-block's scale
// times its eight int32 lanes (ggml: acc = fmadd(d, cvt(sumi), acc)).
// Clobbers AX, X11/Y11, Y9.
#define KACC(doff) \
	MOVWLZX      doff(SI), AX \
	VMOVD        AX, X11 \
	VCVTPH2PS    X11, X11 \
	VMULSS       (DI), X11, X11 \
	VBROADCASTSS X11, Y11 \
	VCVTDQ2PS    Y9, Y9 \
	VFMADD231PS  Y9, Y11, Y0

// K4SCALES: the 6-bit scales and mins of a Q4_K/Q5_K super-block (12
// bytes at 4(SI); ggml's utmp shuffle) as int16 in Y1: scales[0..7] in the
// low half, mins[0..7] in the high half. Clobbers AX, BX, R10-R13, X1.
#define K4SCALES \
	MOVL      4(SI), R10 \
	MOVL      8(SI), R11 \
	MOVL      12(SI), R12 \
	MOVL      R12, R13 \
	SHRL      $4, R13 \
	ANDL      $0x0f0f0f0f, R13 \
	MOVL      R11, AX \
	SHRL      $6, AX \
	ANDL      $0x03030303, AX \
	SHLL      $4, AX \
	ORL       AX, R13 \
	MOVL      R11, BX \
	ANDL      $0x3f3f3f3f, BX \
	MOVL      R12, R11 \
	ANDL      $0x0f0f0f0f, R11 \
	MOVL      R10, AX \
	SHRL      $6, AX \
	ANDL      $0x03030303, AX \
	SHLL      $4, AX \
	ORL       AX, R11 \
	ANDL      $0x3f3f3f3f, R10 \
	VMOVD     R10, X1 \
	VPINSRD   $1, R11, X1, X1 \
	VPINSRD   $2, BX, X1, X1 \
	VPINSRD   $3, R13, X1, X1 \
	VPMOVZXBW X1, Y1

// KSUBNIB: the scales of sub-blocks 2j and 2j+1 (Y3, Y4) and their
// nibbles (Y5 low, Y6 high) from the 32 bytes at qoff(SI).
#define KSUBNIB(j, qoff) \
	VPSHUFB    shufk4<>+(64*j)(SB), Y2, Y3 \
	VPSHUFB    shufk4<>+(64*j+32)(SB), Y2, Y4 \
	VMOVDQU    qoff(SI), Y5 \
	VPSRLW     $4, Y5, Y6 \
	VPAND      Y14, Y5, Y5 \
	VPAND      Y14, Y6, Y6

// KSUBDOT: Y9 += scale · (Y5 × aoff(DI)) + scale · (Y6 × aoff+32(DI)).
#define KSUBDOT(aoff) \
	VPMADDUBSW aoff(DI), Y5, Y5 \
	VPMADDWD   Y5, Y3, Y5 \
	VPMADDUBSW aoff+32(DI), Y6, Y6 \
	VPMADDWD   Y6, Y4, Y6 \
	VPADDD     Y5, Y6, Y5 \
	VPADDD     Y5, Y9, Y9

// Q4KSUB: sub-blocks 2j and 2j+1 (32 bytes of nibbles at qoff(SI), 64 act bytes at aoff(DI)).
#define Q4KSUB(j, qoff, aoff) \
	KSUBNIB(j, qoff) \
	KSUBDOT(aoff)

// func dotQ4_KAVX2(nb int, x, y *byte) float32
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	VXORPS Y0, Y0, Y0   // acc
	VXORPS X10, X10, X10 // acc_m
	MOVL   $0x0f0f0f0f, AX
	VMOVD  AX, X14
	VPBROADCASTD X14, Y14

q4kloop:
	TESTQ CX, CX
	JZ    q4kdone
	K4SCALES // int16: scales[0..7], mins[8..15]
	// Mins term on four lanes.
	VMOVDQU      260(DI), Y7    // bsums
	VEXTRACTI128 $1, Y7, X8
	VPHADDW      X8, X7, X7     // q8s
	VEXTRACTI128 $1, Y1, X8     // mins
	VPMADDWD     X7, X8, X7
	VCVTDQ2PS    X7, X7
	MOVWLZX      2(SI), AX
	VMOVD        AX, X11
	VCVTPH2PS    X11, X11
	VMULSS       (DI), X11, X11 // d_y·dmin_x
	MOVL         $0x80000000, AX
	VMOVD        AX, X12
	VXORPS       X12, X11, X11  // negate
	VBROADCASTSS X11, X11
	VFMADD231PS  X7, X11, X10
	// Scales duplicated in both 128-bit lanes for VPSHUFB.
	VINSERTI128 $1, X1, Y1, Y2
	VPXOR       Y9, Y9, Y9
	Q4KSUB(0, 16, 4)
	Q4KSUB(1, 48, 68)
	Q4KSUB(2, 80, 132)
	Q4KSUB(3, 112, 196)
	KACC(0)
	ADDQ $144, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q4kloop

q4kdone:
	VMOVHLPS     X10, X10, X1
	VADDPS       X1, X10, X10
	VMOVSHDUP    X10, X1
	VADDSS       X1, X10, X10
	HSUM
	VADDSS       X10, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Q6_K × Q8_K, AVX2: ggml's AVX2 ggml_vec_dot_q6_K_q8_K. Per vector of 32
// elements: 6-bit q = low/high nibble of ql | 2 bits of qh << 4; products
// with a via VPMADDUBSW minus 32·a (the offset), times the int8 scales of
// its two 16-element sub-blocks; acc += d·lanes per super-block.

DATA shuf6k<>+0(SB)/8, $0x0000000000000000
DATA shuf6k<>+8(SB)/8, $0x0101010101010101
DATA shuf6k<>+16(SB)/8, $0x0202020202020202
DATA shuf6k<>+24(SB)/8, $0x0303030303030303
DATA shuf6k<>+32(SB)/8, $0x0404040404040404
DATA shuf6k<>+40(SB)/8, $0x0505050505050505
DATA shuf6k<>+48(SB)/8, $0x0606060606060606
DATA shuf6k<>+56(SB)/8, $0x0707070707070707
DATA shuf6k<>+64(SB)/8, $0x0808080808080808
DATA shuf6k<>+72(SB)/8, $0x0909090909090909
DATA shuf6k<>+80(SB)/8, $0x0a0a0a0a0a0a0a0a
DATA shuf6k<>+88(SB)/8, $0x0b0b0b0b0b0b0b0b
DATA shuf6k<>+96(SB)/8, $0x0c0c0c0c0c0c0c0c
DATA shuf6k<>+104(SB)/8, $0x0d0d0d0d0d0d0d0d
DATA shuf6k<>+112(SB)/8, $0x0e0e0e0e0e0e0e0e
DATA shuf6k<>+120(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL shuf6k<>(SB), RODATA|NOPTR, $128

// Q6KVEC: Yq holds 32 unsigned 6-bit values; multiply with the act bytes at
// aoff(DI), subtract 32·a, scale with sub-block scales k (2k, 2k+1), add to Y9.
#define Q6KVEC(Yq, aoff, k) \
	VMOVDQU    aoff(DI), Y7 \
	VPMADDUBSW Y7, Y12, Y8 \
	VPMADDUBSW Y7, Yq, Yq \
	VPSUBW     Y8, Yq, Yq \
	VPSHUFB    shuf6k<>+(16*(k))(SB), X15, X8 \
	VPMOVSXBW  X8, Y8 \
	VPMADDWD   Yq, Y8, Yq \
	VPADDD     Yq, Y9, Y9

// Q6KCHUNKV: 128 elements: ql at qloff(SI) (64 bytes), qh at qhoff(SI)
// (32 bytes); each vector of 32 6-bit values built in Y5, then VEC(Y5,
// its activations' offset, its first scale's index).
#define Q6KCHUNKV(VEC, qloff, qhoff, aoff, k) \
	VMOVDQU qloff(SI), Y1 \
	VMOVDQU qloff+32(SI), Y2 \
	VMOVDQU qhoff(SI), Y3 \
	VPAND   Y13, Y3, Y4 \
	VPSLLW  $4, Y4, Y4 \
	VPAND   Y14, Y1, Y5 \
	VPOR    Y4, Y5, Y5 \
	VEC(Y5, aoff, k) \
	VPSRLW  $2, Y3, Y4 \
	VPAND   Y13, Y4, Y4 \
	VPSLLW  $4, Y4, Y4 \
	VPAND   Y14, Y2, Y5 \
	VPOR    Y4, Y5, Y5 \
	VEC(Y5, aoff+32, k+1) \
	VPSRLW  $4, Y3, Y4 \
	VPAND   Y13, Y4, Y4 \
	VPSLLW  $4, Y4, Y4 \
	VPSRLW  $4, Y1, Y5 \
	VPAND   Y14, Y5, Y5 \
	VPOR    Y4, Y5, Y5 \
	VEC(Y5, aoff+64, k+2) \
	VPSRLW  $6, Y3, Y4 \
	VPAND   Y13, Y4, Y4 \
	VPSLLW  $4, Y4, Y4 \
	VPSRLW  $4, Y2, Y5 \
	VPAND   Y14, Y5, Y5 \
	VPOR    Y4, Y5, Y5 \
	VEC(Y5, aoff+96, k+3)

// Q6KCONST: Y14 = 0x0F bytes, Y13 = 0x03 bytes, Y12 = 0x20 bytes (the
// offset 32 that Q6KVEC subtracts).
#define Q6KCONST \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14 \
	MOVL         $0x03030303, AX \
	VMOVD        AX, X13 \
	VPBROADCASTD X13, Y13 \
	MOVL         $0x20202020, AX \
	VMOVD        AX, X12 \
	VPBROADCASTD X12, Y12

// func dotQ6_KAVX2(nb int, x, y *byte) float32
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	VXORPS Y0, Y0, Y0
	Q6KCONST

q6kloop:
	TESTQ CX, CX
	JZ    q6kdone
	VMOVDQU 192(SI), X15 // int8 scales[16]
	VPXOR   Y9, Y9, Y9
	Q6KCHUNKV(Q6KVEC, 0, 128, 4, 0)
	Q6KCHUNKV(Q6KVEC, 64, 160, 132, 4)
	KACC(208)
	ADDQ $210, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q6kloop

q6kdone:
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Q5_K: as Q4_K (dot_k_amd64.s) with the fifth bit of each element from
// qh (bit 2j or 2j+1 of byte e for element e of sub-block 2j or 2j+1) and
// ggml's scalar min term: summs = fma(−d_y·dmin_x, Σ mins·bsum pairs,
// summs). Block: d, dmin, scales[12] at 4, qh[32] at 16, qs[128] at 48.

// Q5KSUB: sub-blocks 2j and 2j+1, the fifth bits (bits 2j, 2j+1 of qh in
// Y13) OR'd in as 16.
#define Q5KSUB(j, qoff, aoff) \
	KSUBNIB(j, qoff) \
	VPSRLW     $(2*j), Y13, Y7 \
	VPAND      Y15, Y7, Y7 \
	VPSLLW     $4, Y7, Y7 \
	VPOR       Y7, Y5, Y5 \
	VPSRLW     $(2*j+1), Y13, Y7 \
	VPAND      Y15, Y7, Y7 \
	VPSLLW     $4, Y7, Y7 \
	VPOR       Y7, Y6, Y6 \
	KSUBDOT(aoff)

// func dotQ5_KAVX2(nb int, x, y *byte) float32
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $0-28
	MOVQ         nb+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	VXORPS       Y0, Y0, Y0
	VXORPS       X10, X10, X10
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x01010101, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15

q5kloop:
	TESTQ CX, CX
	JZ    q5kdone
	K4SCALES
	// Min term: one int32 Σ mins·(bsum pairs), then a scalar FMA.
	VMOVDQU      260(DI), Y7
	VEXTRACTI128 $1, Y7, X8
	VPHADDW      X8, X7, X7
	VEXTRACTI128 $1, Y1, X8
	VPMADDWD     X7, X8, X7
	VPHADDD      X7, X7, X7
	VPHADDD      X7, X7, X7
	VCVTDQ2PS    X7, X7
	MOVWLZX      2(SI), AX
	VMOVD        AX, X11
	VCVTPH2PS    X11, X11
	VMOVSS       (DI), X12
	MOVL         $0x80000000, AX
	VMOVD        AX, X8
	VXORPS       X8, X12, X12   // −d_y
	VMULSS       X11, X12, X11  // −d_y·dmin_x
	VFMADD231SS  X7, X11, X10
	VINSERTI128  $1, X1, Y1, Y2
	VMOVDQU      16(SI), Y13    // qh
	VPXOR        Y9, Y9, Y9
	Q5KSUB(0, 48, 4)
	Q5KSUB(1, 80, 68)
	Q5KSUB(2, 112, 132)
	Q5KSUB(3, 144, 196)
	KACC(0)
	ADDQ $176, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q5kloop

q5kdone:
	HSUM
	VADDSS X10, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Q2_K and Q3_K × Q8_K, AVX2: ggml's AVX2 kernels (see dotQ2_KOrder and
// dotQ3_KOrder for the portable references). Sub-blocks of 16: the
// 32-element chunk l of half j takes int16 scale 8j+2l in its low 128 bits
// and 8j+2l+1 in its high ones (VPSHUFB of the half's eight scales
// through shufq3k).
DATA shufq3k<>+0(SB)/8, $0x0100010001000100
DATA shufq3k<>+8(SB)/8, $0x0100010001000100
DATA shufq3k<>+16(SB)/8, $0x0302030203020302
DATA shufq3k<>+24(SB)/8, $0x0302030203020302
DATA shufq3k<>+32(SB)/8, $0x0504050405040504
DATA shufq3k<>+40(SB)/8, $0x0504050405040504
DATA shufq3k<>+48(SB)/8, $0x0706070607060706
DATA shufq3k<>+56(SB)/8, $0x0706070607060706
DATA shufq3k<>+64(SB)/8, $0x0908090809080908
DATA shufq3k<>+72(SB)/8, $0x0908090809080908
DATA shufq3k<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufq3k<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA shufq3k<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufq3k<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA shufq3k<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA shufq3k<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL shufq3k<>(SB), RODATA|NOPTR, $128

// KCHUNK: int32 lanes += scale · (Y6 unsigned q × signed aoff(DI)).
#define KCHUNK(l, scl, aoff) \
	VPMADDUBSW aoff(DI), Y6, Y6 \
	VPSHUFB    shufq3k<>+(32*l)(SB), scl, Y8 \
	VPMADDWD   Y6, Y8, Y6 \
	VPADDD     Y6, Y9, Y9

// Q2KCHUNK: chunk l of the half whose 2-bit quants are in Y10.
#define Q2KCHUNK(l, scl, aoff) \
	VPSRLW     $(2*l), Y10, Y6 \
	VPAND      Y15, Y6, Y6 \
	KCHUNK(l, scl, aoff)

// func dotQ2_KAVX2(nb int, x, y *byte) float32
// Block: scales[16] (low nibble scale, high nibble min), qs[64], d, dmin.
TEXT ·dotQ2_KAVX2(SB), NOSPLIT, $0-28
	MOVQ         nb+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	VXORPS       Y0, Y0, Y0
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x03030303, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15

q2kloop:
	TESTQ        CX, CX
	JZ           q2kdone
	VMOVSS       (DI), X12
	MOVWLZX      82(SI), AX
	VMOVD        AX, X13
	VCVTPH2PS    X13, X13
	MOVL         $0x80000000, AX
	VMOVD        AX, X8
	VXORPS       X8, X12, X12    // −d_y
	VMULSS       X13, X12, X13   // −d_y·dmin_x
	VBROADCASTSS X13, Y13
	VMOVDQU      (SI), X1
	VPAND        X14, X1, X2     // scales
	VPSRLW       $4, X1, X3
	VPAND        X14, X3, X3     // mins
	VPMOVZXBW    X3, Y3
	VPMADDWD     260(DI), Y3, Y3 // mins · bsums, pairwise
	VCVTDQ2PS    Y3, Y3
	VFMADD231PS  Y3, Y13, Y0
	VPMOVZXBW    X2, Y2
	VPERM2I128   $0x00, Y2, Y2, Y4
	VPERM2I128   $0x11, Y2, Y2, Y5
	VPXOR        Y9, Y9, Y9
	VMOVDQU      16(SI), Y10
	Q2KCHUNK(0, Y4, 4)
	Q2KCHUNK(1, Y4, 36)
	Q2KCHUNK(2, Y4, 68)
	Q2KCHUNK(3, Y4, 100)
	VMOVDQU      48(SI), Y10
	Q2KCHUNK(0, Y5, 132)
	Q2KCHUNK(1, Y5, 164)
	Q2KCHUNK(2, Y5, 196)
	Q2KCHUNK(3, Y5, 228)
	KACC(80)
	ADDQ         $84, SI
	ADDQ         $292, DI
	DECQ         CX
	JMP          q2kloop

q2kdone:
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Q3KCHUNK: chunk l of half j: q = 2-bit quant − (4 where the high bit,
// bit 4j+l of hmask, is clear), as ggml: Σ q2·a − Σ 4·(¬h)·a in int16.
#define Q3KCHUNK(j, l, scl, aoff) \
	VPSRLW     $(2*l), Y10, Y6 \
	VPAND      Y15, Y6, Y6 \
	VPMADDUBSW aoff(DI), Y6, Y6 \
	VPSRLW     $(4*j+l), Y13, Y7 \
	VPAND      Y12, Y7, Y7 \
	VPSLLW     $2, Y7, Y7 \
	VPMADDUBSW aoff(DI), Y7, Y7 \
	VPSUBW     Y7, Y6, Y6 \
	VPSHUFB    shufq3k<>+(32*l)(SB), scl, Y8 \
	VPMADDWD   Y6, Y8, Y6 \
	VPADDD     Y6, Y9, Y9

// func dotQ3_KAVX2(nb int, x, y *byte) float32
// Block: hmask[32], qs[64], scales[12] (6-bit, −32), d.
TEXT ·dotQ3_KAVX2(SB), NOSPLIT, $0-28
	MOVQ         nb+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	VXORPS       Y0, Y0, Y0
	MOVL         $0x03030303, AX
	VMOVD        AX, X15
	VPBROADCASTD X15, Y15
	MOVL         $0x01010101, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x20202020, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, X14
	VPCMPEQB     Y3, Y3, Y3      // all ones

q3kloop:
	TESTQ        CX, CX
	JZ           q3kdone
	// Scales (ggml's aux): R10 = a0, R11 = a1, R12 = tmp.
	MOVL  96(SI), R10
	MOVL  100(SI), R11
	MOVL  104(SI), R12
	MOVL  R10, AX
	ANDL  $0x0f0f0f0f, AX
	MOVL  R12, BX
	ANDL  $0x03030303, BX
	SHLL  $4, BX
	ORL   BX, AX
	VMOVD AX, X1
	MOVL  R11, AX
	ANDL  $0x0f0f0f0f, AX
	MOVL  R12, BX
	SHRL  $2, BX
	ANDL  $0x03030303, BX
	SHLL  $4, BX
	ORL   BX, AX
	VPINSRD $1, AX, X1, X1
	MOVL  R10, AX
	SHRL  $4, AX
	ANDL  $0x0f0f0f0f, AX
	MOVL  R12, BX
	SHRL  $4, BX
	ANDL  $0x03030303, BX
	SHLL  $4, BX
	ORL   BX, AX
	VPINSRD $2, AX, X1, X1
	MOVL  R11, AX
	SHRL  $4, AX
	ANDL  $0x0f0f0f0f, AX
	MOVL  R12, BX
	SHRL  $6, BX
	ANDL  $0x03030303, BX
	SHLL  $4, BX
	ORL   BX, AX
	VPINSRD $3, AX, X1, X1
	VPSUBB       X14, X1, X1
	VPMOVSXBW    X1, Y2
	VPERM2I128   $0x00, Y2, Y2, Y4
	VPERM2I128   $0x11, Y2, Y2, Y5
	VMOVDQU      (SI), Y13
	VPXOR        Y3, Y13, Y13    // ¬hmask
	VPXOR        Y9, Y9, Y9
	VMOVDQU      32(SI), Y10
	Q3KCHUNK(0, 0, Y4, 4)
	Q3KCHUNK(0, 1, Y4, 36)
	Q3KCHUNK(0, 2, Y4, 68)
	Q3KCHUNK(0, 3, Y4, 100)
	VMOVDQU      64(SI), Y10
	Q3KCHUNK(1, 0, Y5, 132)
	Q3KCHUNK(1, 1, Y5, 164)
	Q3KCHUNK(1, 2, Y5, 196)
	Q3KCHUNK(1, 3, Y5, 228)
	KACC(108)
	ADDQ         $110, SI
	ADDQ         $292, DI
	DECQ         CX
	JMP          q3kloop

q3kdone:
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// Q4_K × Q8_K for four tokens (dotQ4_Kx4AVX2): dotQ4_KAVX2's operations
// with the super-block's scales, mins and nibbles unpacked once for the
// four activation rows (DI, R8, R9, DX) and each token's own integer
// lanes, mins lanes and float accumulators, so each result is
// dotQ4_KAVX2's bit for bit (TestDot4Exact). Sixteen YMM registers hold
// the shared unpacking, four int32 lane sums and two temporaries; the
// float accumulators live in the frame: acc of token t at 32t(SP), its
// mins accumulator at 128+16t(SP).

// KMIN4: token Rp's mins term, acc_m (moff(SP)) += (−d_y·dmin_x) ·
// float(q8s · mins), with the mins in X13 and f16 dmin_x as float in X12.
#define KMIN4(Rp, moff) \
	VMOVDQU      260(Rp), Y7 \
	VEXTRACTI128 $1, Y7, X8 \
	VPHADDW      X8, X7, X7 \
	VPMADDWD     X7, X13, X7 \
	VCVTDQ2PS    X7, X7 \
	VMULSS       (Rp), X12, X11 \
	VXORPS       X15, X11, X11 \
	VBROADCASTSS X11, X11 \
	VMOVUPS      moff(SP), X9 \
	VFMADD231PS  X7, X11, X9 \
	VMOVUPS      X9, moff(SP)

// KSUBDOT4: KSUBDOT for token Rp into sumi (temporaries Y11, Y12).
#define KSUBDOT4(Rp, aoff, sumi) \
	VPMADDUBSW aoff(Rp), Y5, Y11 \
	VPMADDWD   Y11, Y3, Y11 \
	VPMADDUBSW aoff+32(Rp), Y6, Y12 \
	VPMADDWD   Y12, Y4, Y12 \
	VPADDD     Y11, Y12, Y11 \
	VPADDD     Y11, sumi, sumi

// KSUB4: sub-blocks 2j and 2j+1 unpacked once, then the four tokens.
#define KSUB4(j, qoff, aoff) \
	KSUBNIB(j, qoff) \
	KSUBDOT4(DI, aoff, Y7) \
	KSUBDOT4(R8, aoff, Y8) \
	KSUBDOT4(R9, aoff, Y9) \
	KSUBDOT4(DX, aoff, Y10)

// KACC4: KACC for token Rp: acc (aoff(SP)) += (d_x·d_y)·float(sumi), f16
// d_x as float in xd.
#define KACC4(Rp, sumi, aoff, xd) \
	VMULSS       (Rp), xd, X11 \
	VBROADCASTSS X11, Y11 \
	VCVTDQ2PS    sumi, sumi \
	VMOVUPS      aoff(SP), Y0 \
	VFMADD231PS  sumi, Y11, Y0 \
	VMOVUPS      Y0, aoff(SP)

// KX4ZERO clears the four tokens' integer lanes Y7-Y10.
#define KX4ZERO \
	VPXOR Y7, Y7, Y7 \
	VPXOR Y8, Y8, Y8 \
	VPXOR Y9, Y9, Y9 \
	VPXOR Y10, Y10, Y10

// KX4NEXT ends a four-token K kernel's super-block: f16 d_x at doff(SI)
// into xd, KACC4 for the four tokens, the pointers past the block (wb
// weight bytes, a Q8_K block of activations each), and on to loop.
#define KX4NEXT(doff, xd, wb, loop) \
	MOVWLZX   doff(SI), AX \
	VMOVD     AX, xd \
	VCVTPH2PS xd, xd \
	KACC4(DI, Y7, 0, xd) \
	KACC4(R8, Y8, 32, xd) \
	KACC4(R9, Y9, 64, xd) \
	KACC4(DX, Y10, 96, xd) \
	ADDQ $wb, SI \
	ADDQ $292, DI \
	ADDQ $292, R8 \
	ADDQ $292, R9 \
	ADDQ $292, DX \
	DECQ CX \
	JMP  loop

// K4OUT: dotQ4_KAVX2's final reduction of token t's accumulators into
// ooff(R11).
#define K4OUT(aoff, moff, ooff) \
	VMOVUPS   moff(SP), X10 \
	VMOVHLPS  X10, X10, X1 \
	VADDPS    X1, X10, X10 \
	VMOVSHDUP X10, X1 \
	VADDSS    X1, X10, X10 \
	VMOVUPS   aoff(SP), Y0 \
	HSUM \
	VADDSS    X10, X0, X0 \
	VMOVSS    X0, ooff(R11)

// func dotQ4_Kx4AVX2(nb int, x, y *byte, ystride int, out *float32)
TEXT ·dotQ4_Kx4AVX2(SB), NOSPLIT, $192-40
	KX4ARGS
	VMOVUPS Y0, 128(SP)
	VMOVUPS Y0, 160(SP)
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x80000000, AX
	VMOVD        AX, X15

q4kx4loop:
	TESTQ CX, CX
	JZ    q4kx4done
	K4SCALES // int16: scales[0..7], mins[8..15]
	VEXTRACTI128 $1, Y1, X13    // mins
	VINSERTI128  $1, X1, Y1, Y2 // scales in both halves for VPSHUFB
	MOVWLZX      2(SI), AX
	VMOVD        AX, X12
	VCVTPH2PS    X12, X12       // dmin_x
	KMIN4(DI, 128)
	KMIN4(R8, 144)
	KMIN4(R9, 160)
	KMIN4(DX, 176)
	KX4ZERO
	KSUB4(0, 16, 4)
	KSUB4(1, 48, 68)
	KSUB4(2, 80, 132)
	KSUB4(3, 112, 196)
	KX4NEXT(0, X12, 144, q4kx4loop)

q4kx4done:
	MOVQ out+32(FP), R11
	K4OUT(0, 128, 0)
	K4OUT(32, 144, 4)
	K4OUT(64, 160, 8)
	K4OUT(96, 176, 12)
	VZEROUPPER
	RET

// Q6_K × Q8_K for four tokens (dotQ6_Kx4AVX2): dotQ6_KAVX2's operations
// with each vector of 6-bit values and its scales built once for the four
// activation rows (DI, R8, R9, DX), each token's lanes (Y7-Y10) and float
// accumulator (32t(SP)) its own: dotQ6_KAVX2's bits (TestDot4Exact).

// Q6KTOK: Q6KVEC's products for token Rp: the 6-bit values in Yq times
// its activations, minus 32·a (Y12: 0x20 bytes), scaled by Y6, into sumi;
// temporaries Y0, Y11.
#define Q6KTOK(Yq, Rp, aoff, sumi) \
	VPMADDUBSW aoff(Rp), Y12, Y0 \
	VPMADDUBSW aoff(Rp), Yq, Y11 \
	VPSUBW     Y0, Y11, Y11 \
	VPMADDWD   Y11, Y6, Y11 \
	VPADDD     Y11, sumi, sumi

// Q6KVEC4: Q6KVEC of the vector in Yq for the four tokens, its scales
// (sub-blocks 2k, 2k+1) widened once into Y6.
#define Q6KVEC4(Yq, aoff, k) \
	VPSHUFB   shuf6k<>+(16*(k))(SB), X15, X6 \
	VPMOVSXBW X6, Y6 \
	Q6KTOK(Yq, DI, aoff, Y7) \
	Q6KTOK(Yq, R8, aoff, Y8) \
	Q6KTOK(Yq, R9, aoff, Y9) \
	Q6KTOK(Yq, DX, aoff, Y10)

// func dotQ6_Kx4AVX2(nb int, x, y *byte, ystride int, out *float32)
TEXT ·dotQ6_Kx4AVX2(SB), NOSPLIT, $128-40
	KX4ARGS
	Q6KCONST

q6kx4loop:
	TESTQ CX, CX
	JZ    q6kx4done
	VMOVDQU 192(SI), X15 // int8 scales[16]
	KX4ZERO
	Q6KCHUNKV(Q6KVEC4, 0, 128, 4, 0)
	Q6KCHUNKV(Q6KVEC4, 64, 160, 132, 4)
	KX4NEXT(208, X15, 210, q6kx4loop)

q6kx4done:
	MOVQ    out+32(FP), R11
	VMOVUPS 0(SP), Y0
	HSUM
	VMOVSS  X0, 0(R11)
	VMOVUPS 32(SP), Y0
	HSUM
	VMOVSS  X0, 4(R11)
	VMOVUPS 64(SP), Y0
	HSUM
	VMOVSS  X0, 8(R11)
	VMOVUPS 96(SP), Y0
	HSUM
	VMOVSS  X0, 12(R11)
	VZEROUPPER
	RET
