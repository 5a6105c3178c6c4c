//go:build amd64 && !purego

#include "textflag.h"

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
// as PFROW below).
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

// ROWQ8(R) dequantizes 64 values of a Q8_0 row (two blocks at R) into
// Z16-Z19: float(q)·d, one exact product each (dequantQ8_0's bits).
#define ROWQ8(R) \
	VPBROADCASTW (R), Y20 \
	VCVTPH2PS    Y20, Z20 \
	VPMOVSXBD    2(R), Z16 \
	VPMOVSXBD    18(R), Z17 \
	VCVTDQ2PS    Z16, Z16 \
	VCVTDQ2PS    Z17, Z17 \
	VMULPS       Z20, Z16, Z16 \
	VMULPS       Z20, Z17, Z17 \
	VPBROADCASTW 34(R), Y21 \
	VCVTPH2PS    Y21, Z21 \
	VPMOVSXBD    36(R), Z18 \
	VPMOVSXBD    52(R), Z19 \
	VCVTDQ2PS    Z18, Z18 \
	VCVTDQ2PS    Z19, Z19 \
	VMULPS       Z21, Z18, Z18 \
	VMULPS       Z21, Z19, Z19

// PFROW prefetches the row at offset (AX) (the next block's row j) into
// L2, then steps AX. T1, not T0: on AMD EPYC Zen 4 (family 19h), a decode
// step's attention over 16,384 positions of a Q8_0 cache took 27.5 ms
// with T0 and 21.7-22.6 with T1 (T2 the same, NTA 30.5): fetched into L1,
// the next block's lines hold the L1 miss buffers the current block's
// loads need (BenchmarkDecodeAttention, 2 threads).
#define PFROW \
	MOVLQSX    (AX), R14 \
	PREFETCHT1 (DI)(R14*2) \
	PREFETCHT1 64(DI)(R14*2) \
	ADDQ       $4, AX

// ROWAT loads row j's offset (int32 at (BX)), checks 0 ≤ off ≤ mlen (R15)
// and leaves the row's address in R14; a bad offset fails.
#define ROWAT(fail) \
	MOVLQSX (BX), R14 \
	CMPQ    R14, R15 \
	JA      fail \
	LEAQ    (DI)(R14*2), R14

// func madQ8_0x4x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool
//
// MadRows over Q8_0 rows dequantized on the fly, four queries × 64
// columns: acc_i += w_i[j]·row_j, one FMA per element, rows in order (the
// row of position j at v + 2·off[j]); Z0-Z15 hold the accumulators, and
// each row is dequantized once for the four. Strides in bytes. False,
// before any read of it, for an offset outside [0, mlen]. pf holds nj
// offsets of the rows to read next, prefetched one per row.
TEXT ·madQ8_0x4x64(SB), NOSPLIT, $0-73
	MOVQ nj+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ ws+16(FP), R8
	MOVQ v+24(FP), DI
	MOVQ off+32(FP), BX
	MOVQ mlen+40(FP), R15
	MOVQ acc+48(FP), DX
	MOVQ as+56(FP), R10
	MOVQ pf+64(FP), AX

	LEAQ (DX)(R10*1), R11
	LEAQ (R11)(R10*1), R12
	LEAQ (R12)(R10*1), R13
	LEAQ (R8)(R8*2), R9 // 3·ws

	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3
	VMOVUPS (R11), Z4
	VMOVUPS 64(R11), Z5
	VMOVUPS 128(R11), Z6
	VMOVUPS 192(R11), Z7
	VMOVUPS (R12), Z8
	VMOVUPS 64(R12), Z9
	VMOVUPS 128(R12), Z10
	VMOVUPS 192(R12), Z11
	VMOVUPS (R13), Z12
	VMOVUPS 64(R13), Z13
	VMOVUPS 128(R13), Z14
	VMOVUPS 192(R13), Z15

mq4loop:
	TESTQ CX, CX
	JZ    mq4done
	PFROW
	ROWAT(mq4fail)
	ROWQ8(R14)
	VBROADCASTSS (SI), Z22
	VBROADCASTSS (SI)(R8*1), Z23
	VBROADCASTSS (SI)(R8*2), Z24
	VBROADCASTSS (SI)(R9*1), Z25
	VFMADD231PS  Z16, Z22, Z0
	VFMADD231PS  Z17, Z22, Z1
	VFMADD231PS  Z18, Z22, Z2
	VFMADD231PS  Z19, Z22, Z3
	VFMADD231PS  Z16, Z23, Z4
	VFMADD231PS  Z17, Z23, Z5
	VFMADD231PS  Z18, Z23, Z6
	VFMADD231PS  Z19, Z23, Z7
	VFMADD231PS  Z16, Z24, Z8
	VFMADD231PS  Z17, Z24, Z9
	VFMADD231PS  Z18, Z24, Z10
	VFMADD231PS  Z19, Z24, Z11
	VFMADD231PS  Z16, Z25, Z12
	VFMADD231PS  Z17, Z25, Z13
	VFMADD231PS  Z18, Z25, Z14
	VFMADD231PS  Z19, Z25, Z15
	ADDQ         $4, BX
	ADDQ         $4, SI
	DECQ         CX
	JMP          mq4loop

mq4done:
	MOVB $1, ret+72(FP)

mq4store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, (R11)
	VMOVUPS Z5, 64(R11)
	VMOVUPS Z6, 128(R11)
	VMOVUPS Z7, 192(R11)
	VMOVUPS Z8, (R12)
	VMOVUPS Z9, 64(R12)
	VMOVUPS Z10, 128(R12)
	VMOVUPS Z11, 192(R12)
	VMOVUPS Z12, (R13)
	VMOVUPS Z13, 64(R13)
	VMOVUPS Z14, 128(R13)
	VMOVUPS Z15, 192(R13)
	VZEROUPPER
	RET

mq4fail:
	MOVB $0, ret+72(FP)
	JMP  mq4store

// func madQ8_0x1x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool
// One query × 64 columns (ws and as unused).
TEXT ·madQ8_0x1x64(SB), NOSPLIT, $0-73
	MOVQ nj+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ v+24(FP), DI
	MOVQ off+32(FP), BX
	MOVQ mlen+40(FP), R15
	MOVQ acc+48(FP), DX
	MOVQ pf+64(FP), AX

	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3

mq1loop:
	TESTQ CX, CX
	JZ    mq1done
	PFROW
	ROWAT(mq1fail)
	ROWQ8(R14)
	VBROADCASTSS (SI), Z22
	VFMADD231PS  Z16, Z22, Z0
	VFMADD231PS  Z17, Z22, Z1
	VFMADD231PS  Z18, Z22, Z2
	VFMADD231PS  Z19, Z22, Z3
	ADDQ         $4, BX
	ADDQ         $4, SI
	DECQ         CX
	JMP          mq1loop

mq1done:
	MOVB $1, ret+72(FP)

mq1store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VZEROUPPER
	RET

mq1fail:
	MOVB $0, ret+72(FP)
	JMP  mq1store

// ROWF16(R) converts 64 F16 values at R into Z16-Z19 (exact).
#define ROWF16(R) \
	VCVTPH2PS (R), Z16 \
	VCVTPH2PS 32(R), Z17 \
	VCVTPH2PS 64(R), Z18 \
	VCVTPH2PS 96(R), Z19

// func madF16x4x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool
//
// MadRows over F16 rows converted on the fly (as madQ8_0x4x64), four
// queries × 64 columns: acc_i += w_i[j]·row_j, one FMA per element, rows in order (the
// row of position j at v + 2·off[j]); Z0-Z15 hold the accumulators, and
// each row is dequantized once for the four. Strides in bytes. False,
// before any read of it, for an offset outside [0, mlen]. pf holds nj
// offsets of the rows to read next, prefetched one per row.
TEXT ·madF16x4x64(SB), NOSPLIT, $0-73
	MOVQ nj+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ ws+16(FP), R8
	MOVQ v+24(FP), DI
	MOVQ off+32(FP), BX
	MOVQ mlen+40(FP), R15
	MOVQ acc+48(FP), DX
	MOVQ as+56(FP), R10
	MOVQ pf+64(FP), AX

	LEAQ (DX)(R10*1), R11
	LEAQ (R11)(R10*1), R12
	LEAQ (R12)(R10*1), R13
	LEAQ (R8)(R8*2), R9 // 3·ws

	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3
	VMOVUPS (R11), Z4
	VMOVUPS 64(R11), Z5
	VMOVUPS 128(R11), Z6
	VMOVUPS 192(R11), Z7
	VMOVUPS (R12), Z8
	VMOVUPS 64(R12), Z9
	VMOVUPS 128(R12), Z10
	VMOVUPS 192(R12), Z11
	VMOVUPS (R13), Z12
	VMOVUPS 64(R13), Z13
	VMOVUPS 128(R13), Z14
	VMOVUPS 192(R13), Z15

mf4loop:
	TESTQ CX, CX
	JZ    mf4done
	PFROW
	ROWAT(mf4fail)
	ROWF16(R14)
	VBROADCASTSS (SI), Z22
	VBROADCASTSS (SI)(R8*1), Z23
	VBROADCASTSS (SI)(R8*2), Z24
	VBROADCASTSS (SI)(R9*1), Z25
	VFMADD231PS  Z16, Z22, Z0
	VFMADD231PS  Z17, Z22, Z1
	VFMADD231PS  Z18, Z22, Z2
	VFMADD231PS  Z19, Z22, Z3
	VFMADD231PS  Z16, Z23, Z4
	VFMADD231PS  Z17, Z23, Z5
	VFMADD231PS  Z18, Z23, Z6
	VFMADD231PS  Z19, Z23, Z7
	VFMADD231PS  Z16, Z24, Z8
	VFMADD231PS  Z17, Z24, Z9
	VFMADD231PS  Z18, Z24, Z10
	VFMADD231PS  Z19, Z24, Z11
	VFMADD231PS  Z16, Z25, Z12
	VFMADD231PS  Z17, Z25, Z13
	VFMADD231PS  Z18, Z25, Z14
	VFMADD231PS  Z19, Z25, Z15
	ADDQ         $4, BX
	ADDQ         $4, SI
	DECQ         CX
	JMP          mf4loop

mf4done:
	MOVB $1, ret+72(FP)

mf4store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, (R11)
	VMOVUPS Z5, 64(R11)
	VMOVUPS Z6, 128(R11)
	VMOVUPS Z7, 192(R11)
	VMOVUPS Z8, (R12)
	VMOVUPS Z9, 64(R12)
	VMOVUPS Z10, 128(R12)
	VMOVUPS Z11, 192(R12)
	VMOVUPS Z12, (R13)
	VMOVUPS Z13, 64(R13)
	VMOVUPS Z14, 128(R13)
	VMOVUPS Z15, 192(R13)
	VZEROUPPER
	RET

mf4fail:
	MOVB $0, ret+72(FP)
	JMP  mf4store

// func madF16x1x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool
// One query × 64 columns (ws and as unused).
TEXT ·madF16x1x64(SB), NOSPLIT, $0-73
	MOVQ nj+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ v+24(FP), DI
	MOVQ off+32(FP), BX
	MOVQ mlen+40(FP), R15
	MOVQ acc+48(FP), DX
	MOVQ pf+64(FP), AX

	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3

mf1loop:
	TESTQ CX, CX
	JZ    mf1done
	PFROW
	ROWAT(mf1fail)
	ROWF16(R14)
	VBROADCASTSS (SI), Z22
	VFMADD231PS  Z16, Z22, Z0
	VFMADD231PS  Z17, Z22, Z1
	VFMADD231PS  Z18, Z22, Z2
	VFMADD231PS  Z19, Z22, Z3
	ADDQ         $4, BX
	ADDQ         $4, SI
	DECQ         CX
	JMP          mf1loop

mf1done:
	MOVB $1, ret+72(FP)

mf1store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VZEROUPPER
	RET

mf1fail:
	MOVB $0, ret+72(FP)
	JMP  mf1store

// func madQ8_0x3x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool
//
// madQ8_0x4x64 with three queries (Z0-Z11 the accumulators): a group of
// seven query heads per KV head (qwen2.5-0.5b's 14 over 2) takes 4 + 3
// instead of 4 + 1 + 1 + 1, each row dequantized twice instead of four
// times. Each query's sum is the same FMAs in the same order as alone.
TEXT ·madQ8_0x3x64(SB), NOSPLIT, $0-73
	MOVQ nj+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ ws+16(FP), R8
	MOVQ v+24(FP), DI
	MOVQ off+32(FP), BX
	MOVQ mlen+40(FP), R15
	MOVQ acc+48(FP), DX
	MOVQ as+56(FP), R10
	MOVQ pf+64(FP), AX

	LEAQ (DX)(R10*1), R11
	LEAQ (R11)(R10*1), R12

	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3
	VMOVUPS (R11), Z4
	VMOVUPS 64(R11), Z5
	VMOVUPS 128(R11), Z6
	VMOVUPS 192(R11), Z7
	VMOVUPS (R12), Z8
	VMOVUPS 64(R12), Z9
	VMOVUPS 128(R12), Z10
	VMOVUPS 192(R12), Z11

mq3loop:
	TESTQ CX, CX
	JZ    mq3done
	PFROW
	ROWAT(mq3fail)
	ROWQ8(R14)
	VBROADCASTSS (SI), Z22
	VBROADCASTSS (SI)(R8*1), Z23
	VBROADCASTSS (SI)(R8*2), Z24
	VFMADD231PS  Z16, Z22, Z0
	VFMADD231PS  Z17, Z22, Z1
	VFMADD231PS  Z18, Z22, Z2
	VFMADD231PS  Z19, Z22, Z3
	VFMADD231PS  Z16, Z23, Z4
	VFMADD231PS  Z17, Z23, Z5
	VFMADD231PS  Z18, Z23, Z6
	VFMADD231PS  Z19, Z23, Z7
	VFMADD231PS  Z16, Z24, Z8
	VFMADD231PS  Z17, Z24, Z9
	VFMADD231PS  Z18, Z24, Z10
	VFMADD231PS  Z19, Z24, Z11
	ADDQ         $4, BX
	ADDQ         $4, SI
	DECQ         CX
	JMP          mq3loop

mq3done:
	MOVB $1, ret+72(FP)

mq3store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, (R11)
	VMOVUPS Z5, 64(R11)
	VMOVUPS Z6, 128(R11)
	VMOVUPS Z7, 192(R11)
	VMOVUPS Z8, (R12)
	VMOVUPS Z9, 64(R12)
	VMOVUPS Z10, 128(R12)
	VMOVUPS Z11, 192(R12)
	VZEROUPPER
	RET

mq3fail:
	MOVB $0, ret+72(FP)
	JMP  mq3store

// func madF16x3x64(nj int, w *float32, ws int, v *byte, off *int32, mlen int, acc *float32, as int, pf *int32) bool
//
// madF16x4x64 with three queries (Z0-Z11 the accumulators): a group of
// seven query heads per KV head (qwen2.5-0.5b's 14 over 2) takes 4 + 3
// instead of 4 + 1 + 1 + 1, each row dequantized twice instead of four
// times. Each query's sum is the same FMAs in the same order as alone.
TEXT ·madF16x3x64(SB), NOSPLIT, $0-73
	MOVQ nj+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ ws+16(FP), R8
	MOVQ v+24(FP), DI
	MOVQ off+32(FP), BX
	MOVQ mlen+40(FP), R15
	MOVQ acc+48(FP), DX
	MOVQ as+56(FP), R10
	MOVQ pf+64(FP), AX

	LEAQ (DX)(R10*1), R11
	LEAQ (R11)(R10*1), R12

	VMOVUPS (DX), Z0
	VMOVUPS 64(DX), Z1
	VMOVUPS 128(DX), Z2
	VMOVUPS 192(DX), Z3
	VMOVUPS (R11), Z4
	VMOVUPS 64(R11), Z5
	VMOVUPS 128(R11), Z6
	VMOVUPS 192(R11), Z7
	VMOVUPS (R12), Z8
	VMOVUPS 64(R12), Z9
	VMOVUPS 128(R12), Z10
	VMOVUPS 192(R12), Z11

mf3loop:
	TESTQ CX, CX
	JZ    mf3done
	PFROW
	ROWAT(mf3fail)
	ROWF16(R14)
	VBROADCASTSS (SI), Z22
	VBROADCASTSS (SI)(R8*1), Z23
	VBROADCASTSS (SI)(R8*2), Z24
	VFMADD231PS  Z16, Z22, Z0
	VFMADD231PS  Z17, Z22, Z1
	VFMADD231PS  Z18, Z22, Z2
	VFMADD231PS  Z19, Z22, Z3
	VFMADD231PS  Z16, Z23, Z4
	VFMADD231PS  Z17, Z23, Z5
	VFMADD231PS  Z18, Z23, Z6
	VFMADD231PS  Z19, Z23, Z7
	VFMADD231PS  Z16, Z24, Z8
	VFMADD231PS  Z17, Z24, Z9
	VFMADD231PS  Z18, Z24, Z10
	VFMADD231PS  Z19, Z24, Z11
	ADDQ         $4, BX
	ADDQ         $4, SI
	DECQ         CX
	JMP          mf3loop

mf3done:
	MOVB $1, ret+72(FP)

mf3store:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VMOVUPS Z4, (R11)
	VMOVUPS Z5, 64(R11)
	VMOVUPS Z6, 128(R11)
	VMOVUPS Z7, 192(R11)
	VMOVUPS Z8, (R12)
	VMOVUPS Z9, 64(R12)
	VMOVUPS Z10, 128(R12)
	VMOVUPS Z11, 192(R12)
	VZEROUPPER
	RET

mf3fail:
	MOVB $0, ret+72(FP)
	JMP  mf3store
