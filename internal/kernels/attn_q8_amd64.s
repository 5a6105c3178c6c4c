//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "packed_amd64.h"
#include "mad_amd64.h"

// Q8CPRO(Q, DD, COR): for the query at Q, group R13/34: d_k·d_q (Z30
// holds the 16 slots' d_k) to scr + R14 + DD, and its eight corrections
// −128·Σ q[4j..4j+3] (VPDPBUSD of 0x80 with the query's bytes, negated)
// to scr + R15 + COR.
#define Q8CPRO(Q, DD, COR) \
	VPBROADCASTW (Q)(R13*1), Y29 \
	VCVTPH2PS    Y29, Z29 \
	VMULPS       Z29, Z30, Z29 \
	VMOVUPS      Z29, DD(R9)(R14*1) \
	VMOVDQU32    2(Q)(R13*1), Y28 \
	VPXORD       Y27, Y27, Y27 \
	VPDPBUSD     Y28, Y26, Y27 \
	VPSUBD       Y27, Y25, Y27 \
	VMOVDQU32    Y27, COR(R9)(R15*1)

// ADD4 adds the four queries' vectors A0-A3 into B0-B3.
#define ADD4(A0, A1, A2, A3, B0, B1, B2, B3) \
	VADDPS A0, B0, B0 \
	VADDPS A1, B1, B1 \
	VADDPS A2, B2, B2 \
	VADDPS A3, B3, B3

// Q8CLANE(KO, QO, C0, C1, C2, C3, A0, A1, A2, A3, L): lane j of the four
// queries (KO = 128j into the keys, QO = 2+4j into a query's group, Ci =
// 2048 + 32i + 4j the correction) summed over the groups into A0-A3, as
// ggml's acc_j: from 0, one fma per group.
#define Q8CLANE(KO, QO, C0, C1, C2, C3, A0, A1, A2, A3, L) \
	VXORPS        A0, A0, A0 \
	VXORPS        A1, A1, A1 \
	VXORPS        A2, A2, A2 \
	VXORPS        A3, A3, A3 \
	XORQ          R12, R12 \
	XORQ          R13, R13 \
	XORQ          R14, R14 \
	XORQ          R15, R15 \
L: \
	VPXORD        KO(DI)(R12*1), Z26, Z16 \
	PREFETCHT1    KO(R11)(R12*1) \
	VPBROADCASTD  C0(R9)(R15*1), Z20 \
	VPBROADCASTD  C1(R9)(R15*1), Z21 \
	VPBROADCASTD  C2(R9)(R15*1), Z22 \
	VPBROADCASTD  C3(R9)(R15*1), Z23 \
	VPDPBUSD.BCST QO(AX)(R13*1), Z16, Z20 \
	VPDPBUSD.BCST QO(BX)(R13*1), Z16, Z21 \
	VPDPBUSD.BCST QO(DX)(R13*1), Z16, Z22 \
	VPDPBUSD.BCST QO(R8)(R13*1), Z16, Z23 \
	VCVTDQ2PS     Z20, Z20 \
	VCVTDQ2PS     Z21, Z21 \
	VCVTDQ2PS     Z22, Z22 \
	VCVTDQ2PS     Z23, Z23 \
	VFMADD231PS   0(R9)(R14*1), Z20, A0 \
	VFMADD231PS   64(R9)(R14*1), Z21, A1 \
	VFMADD231PS   128(R9)(R14*1), Z22, A2 \
	VFMADD231PS   192(R9)(R14*1), Z23, A3 \
	ADDQ          $1088, R12 \
	ADDQ          $34, R13 \
	ADDQ          $256, R14 \
	ADDQ          $128, R15 \
	CMPQ          R13, CX \
	JLT           L


// Tiled attention over a Q8_0 cache, a block of positions per call (see
// attn_q8.go for the portable references).

// func q8ColScores4(nb int, kd, kq *byte, q0, q1, q2, q3 *byte, o0, o1, o2, o3 *float32, shift int, mask uint16, pfd, pfq *byte)
//
// Sixteen slots of a column block of Q8_0 keys (attn_q8.go: kd their
// scales, kq their lane 0; group g Q8ColGroup = 1088 bytes further on,
// lane j 128) against four Q8_0 queries, in the order of ggml's
// ggml_vec_dot_q8_0_q8_0 (AVX2 with VNNI products): for each group,
// integer lanes j = Σ k·q over elements 4j..4j+3, converted, and
// acc_j = fma(d_k·d_q, lane, acc_j) from acc_j = 0; the score
// hsum_float_8(acc) = ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). Here the 16
// slots are a vector's lanes: the key bytes are made unsigned (k XOR 0x80
// = k+128), so VPDPBUSD with the query's four bytes broadcast adds
// Σ (k+128)·q to the correction −128·Σq it starts from: Σ k·q exactly.
// The frame (3072 bytes, not cleared: every byte read is written first)
// holds, per group g (at most eight) and query i, d_k·d_q at g·256 + 64i
// and the eight corrections at 2048 + g·128 + 32i. Score i
// of slot lane l goes to o_i[shift + l] where mask bit l is set. The
// next block's same lines (pfd, pfq) are prefetched into L2 (PREFETCHT1,
// as mad_amd64.s's PFROW).
TEXT ·q8ColScores4(SB), 0, $3072-120
	MOVQ nb+0(FP), CX
	MOVQ kd+8(FP), SI
	MOVQ kq+16(FP), DI
	MOVQ q0+24(FP), AX
	MOVQ q1+32(FP), BX
	MOVQ q2+40(FP), DX
	MOVQ q3+48(FP), R8
	LEAQ 0(SP), R9
	MOVQ pfd+104(FP), R10
	MOVQ pfq+112(FP), R11
	IMULQ $34, CX // CX = nb·34: the end of the queries' groups

	MOVL         $0x80808080, R12
	VPBROADCASTD R12, Z26
	VPXORD       Y25, Y25, Y25

	// Per group: d_k·d_q for each query, and its corrections.
	XORQ R12, R12 // g·1088
	XORQ R13, R13 // g·34
	XORQ R14, R14 // g·256
	XORQ R15, R15 // g·128

q8cprologue:
	VCVTPH2PS  (SI)(R12*1), Z30
	PREFETCHT1 (R10)(R12*1)
	Q8CPRO(AX, 0, 2048)
	Q8CPRO(BX, 64, 2080)
	Q8CPRO(DX, 128, 2112)
	Q8CPRO(R8, 192, 2144)
	ADDQ       $1088, R12
	ADDQ       $34, R13
	ADDQ       $256, R14
	ADDQ       $128, R15
	CMPQ       R13, CX
	JLT        q8cprologue

	// The lanes in hsum_float_8's order, summed as its tree.
	Q8CLANE(0, 2, 2048, 2080, 2112, 2144, Z4, Z5, Z6, Z7, q8cl0)
	Q8CLANE(512, 18, 2064, 2096, 2128, 2160, Z0, Z1, Z2, Z3, q8cl4)
	ADD4(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	Q8CLANE(256, 10, 2056, 2088, 2120, 2152, Z8, Z9, Z10, Z11, q8cl2)
	Q8CLANE(768, 26, 2072, 2104, 2136, 2168, Z0, Z1, Z2, Z3, q8cl6)
	ADD4(Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11)
	ADD4(Z8, Z9, Z10, Z11, Z4, Z5, Z6, Z7)
	Q8CLANE(128, 6, 2052, 2084, 2116, 2148, Z8, Z9, Z10, Z11, q8cl1)
	Q8CLANE(640, 22, 2068, 2100, 2132, 2164, Z0, Z1, Z2, Z3, q8cl5)
	ADD4(Z0, Z1, Z2, Z3, Z8, Z9, Z10, Z11)
	Q8CLANE(384, 14, 2060, 2092, 2124, 2156, Z12, Z13, Z14, Z15, q8cl3)
	Q8CLANE(896, 30, 2076, 2108, 2140, 2172, Z0, Z1, Z2, Z3, q8cl7)
	ADD4(Z0, Z1, Z2, Z3, Z12, Z13, Z14, Z15)
	ADD4(Z12, Z13, Z14, Z15, Z8, Z9, Z10, Z11)
	ADD4(Z8, Z9, Z10, Z11, Z4, Z5, Z6, Z7)

	MOVQ    shift+88(FP), R12
	KMOVW   mask+96(FP), K1
	MOVQ    o0+56(FP), R13
	VMOVUPS Z4, K1, (R13)(R12*4)
	MOVQ    o1+64(FP), R13
	VMOVUPS Z5, K1, (R13)(R12*4)
	MOVQ    o2+72(FP), R13
	VMOVUPS Z6, K1, (R13)(R12*4)
	MOVQ    o3+80(FP), R13
	VMOVUPS Z7, K1, (R13)(R12*4)
	VZEROUPPER
	RET

// Q8A2LANE(KO, QO, A): lane j of one query (KO = 128j into the keys at
// DI, QO = 2+4j into its group at DX) for eight slots, with d_k·d_q in
// Y8: ggml's AVX2 product, |k| by sign(q, k) in int16 pairs (VPMADDUBSW
// cannot saturate on int8 pairs: |k| ≤ 128, the signed side ≤ 127, and
// 2·128·(−128) is −32768), VPMADDWD into the lane's int32, converted, and
// A = fma(d, lane, A).
#define Q8A2LANE(KO, QO, A) \
	VMOVDQU      KO(DI), Y10 \
	VPBROADCASTD QO(DX), Y11 \
	VPSIGNB      Y10, Y11, Y11 \
	VPABSB       Y10, Y12 \
	VPMADDUBSW   Y11, Y12, Y12 \
	VPMADDWD     Y15, Y12, Y12 \
	VCVTDQ2PS    Y12, Y12 \
	VFMADD231PS  Y8, Y12, A

// func q8ColScoresAVX2(nb int, kd, kq, q *byte, o *float32)
//
// q8ColScores4's scores on AVX2: eight slots of a column block of Q8_0
// keys (kd their scales, kq their lane 0; group g 1088 bytes further on,
// lane j 128) against one Q8_0 query, the slots a vector's lanes, each
// score in ggml's ggml_vec_dot_q8_0_q8_0 order (acc_j from 0, one fma per
// group, then hsum_float_8's tree), all eight to o[0:8].
TEXT ·q8ColScoresAVX2(SB), NOSPLIT, $0-40
	MOVQ nb+0(FP), CX
	MOVQ kd+8(FP), SI
	MOVQ kq+16(FP), DI
	MOVQ q+24(FP), DX
	MOVQ o+32(FP), R11
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	ZEROY8

q8a2loop:
	TESTQ        CX, CX
	JZ           q8a2done
	VCVTPH2PS    (SI), Y8
	VPBROADCASTW (DX), X9
	VCVTPH2PS    X9, Y9
	VMULPS       Y9, Y8, Y8
	Q8A2LANE(0, 2, Y0)
	Q8A2LANE(128, 6, Y1)
	Q8A2LANE(256, 10, Y2)
	Q8A2LANE(384, 14, Y3)
	Q8A2LANE(512, 18, Y4)
	Q8A2LANE(640, 22, Y5)
	Q8A2LANE(768, 26, Y6)
	Q8A2LANE(896, 30, Y7)
	ADDQ         $1088, SI
	ADDQ         $1088, DI
	ADDQ         $34, DX
	DECQ         CX
	JMP          q8a2loop

q8a2done:
	REDUCE16(Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, 0)
	VZEROUPPER
	RET

// MQ8A2(O, D, A): eight values of the row at R14 (int8 at O) dequantized
// with the block's d in D (float(q)·d, exact product as ROWQ8) and
// A += value·x, x in Y11, the product rounded before the sum: MadRows's
// operations where no SIMD MadRows runs (madF32Generic; the AVX-512 one
// fuses them), so an AVX2 CPU keeps the sums it had on the row path.
#define MQ8A2(O, D, A) \
	VPMOVSXBD O(R14), Y8 \
	VCVTDQ2PS Y8, Y8 \
	VMULPS    D, Y8, Y8 \
	VMULPS    Y11, Y8, Y8 \
	VADDPS    Y8, A, A

// func madQ8_0x1x64AVX2(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool
//
// madQ8_0x1x64's contract (mad_amd64.s's header) on AVX2, one query × 64
// columns, Y0-Y7 the accumulators, with madRowsGeneric's operations
// (MQ8A2) in its order.
TEXT ·madQ8_0x1x64AVX2(SB), NOSPLIT, $0-73
	MOVQ nj+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ v+24(FP), DI
	MOVQ off+32(FP), BX
	MOVQ mlen+40(FP), R15
	MOVQ acc+48(FP), DX
	MOVQ pf+64(FP), AX

	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7

ma2loop:
	TESTQ        CX, CX
	JZ           ma2done
	PFROW
	ROWAT(ma2fail)
	VPBROADCASTW (R14), X9
	VCVTPH2PS    X9, Y9
	VPBROADCASTW 34(R14), X10
	VCVTPH2PS    X10, Y10
	VBROADCASTSS (SI), Y11
	MQ8A2(2, Y9, Y0)
	MQ8A2(10, Y9, Y1)
	MQ8A2(18, Y9, Y2)
	MQ8A2(26, Y9, Y3)
	MQ8A2(36, Y10, Y4)
	MQ8A2(44, Y10, Y5)
	MQ8A2(52, Y10, Y6)
	MQ8A2(60, Y10, Y7)
	ADDQ         $4, BX
	ADDQ         $4, SI
	DECQ         CX
	JMP          ma2loop

ma2done:
	MOVB $1, ret+72(FP)

ma2store:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	VZEROUPPER
	RET

ma2fail:
	MOVB $0, ret+72(FP)
	JMP  ma2store
