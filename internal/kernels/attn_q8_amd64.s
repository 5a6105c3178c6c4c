//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Tiled attention over a Q8_0 cache, a block of positions per call (see
// attn_q8.go for the portable references).

// func scoresQ8_0x4(nb int, k *byte, kstride, n int, q0, q1, q2, q3 *byte, o0, o1, o2, o3 *float32, pf *byte)
//
// For n K rows (row j at k + j·kstride, nb Q8_0 blocks) and four Q8_0
// queries, o_i[j] = ggml_vec_dot_q8_0_q8_0(row j, query i) in ggml's AVX2
// order with its VNNI products (mul_sum_i8_pairs_float): per block, eight
// int32 lanes Σ|k|·sign(q, k) over bytes 4l..4l+3 (exact), converted, and
// acc = fma(d_k·d_q, lanes, acc); the result hsum_float_8(acc). The four
// queries' block scales d_q are converted once into the frame. Row j of
// the next block's rows (pf + j·kstride, same layout) is prefetched while
// row j is scored: a head's rows are kstride apart, a stride the hardware
// prefetchers do not follow across pages.
TEXT ·scoresQ8_0x4(SB), NOSPLIT, $136-104
	MOVQ nb+0(FP), CX
	MOVQ k+8(FP), SI
	MOVQ kstride+16(FP), R9
	MOVQ n+24(FP), R15
	MOVQ q0+32(FP), AX
	MOVQ q1+40(FP), BX
	MOVQ q2+48(FP), DX
	MOVQ q3+56(FP), DI
	MOVQ o0+64(FP), R10
	MOVQ o1+72(FP), R11
	MOVQ o2+80(FP), R12
	MOVQ o3+88(FP), R13
	MOVQ pf+96(FP), R14
	MOVQ R14, 128(SP)

	// frame[b·16 + 4i] = d_q of query i's block b (nb ≤ 8); CX = 16·nb,
	// R8 = 16·b.
	SHLQ $4, CX
	XORQ R14, R14
	XORQ R8, R8

sq8scales:
	CMPQ      R8, CX
	JGE       sq8rows
	VPBROADCASTW (AX)(R14*1), X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, 0(SP)(R8*1)
	VPBROADCASTW (BX)(R14*1), X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, 4(SP)(R8*1)
	VPBROADCASTW (DX)(R14*1), X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, 8(SP)(R8*1)
	VPBROADCASTW (DI)(R14*1), X0
	VCVTPH2PS X0, X0
	VMOVSS    X0, 12(SP)(R8*1)
	ADDQ      $34, R14
	ADDQ      $16, R8
	JMP       sq8scales

sq8rows:
	TESTQ R15, R15
	JZ    sq8done
	MOVQ       128(SP), R14
	PREFETCHT0 (R14)
	PREFETCHT0 64(R14)
	ADDQ       R9, R14
	MOVQ       R14, 128(SP)
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	XORQ   R14, R14 // block byte offset
	XORQ   R8, R8   // block

sq8blocks:
	VPBROADCASTW (SI)(R14*1), X1
	VCVTPH2PS    X1, Y1          // d_k
	VMOVDQU      2(SI)(R14*1), Y2 // k
	VPABSB       Y2, Y3           // |k|

	VMOVDQU     2(AX)(R14*1), Y4
	VPSIGNB     Y2, Y4, Y4
	VPXOR       Y5, Y5, Y5
	VPDPBUSD    Y4, Y3, Y5
	VCVTDQ2PS   Y5, Y5
	VMULPS.BCST 0(SP)(R8*1), Y1, Y6
	VFMADD231PS Y5, Y6, Y7

	VMOVDQU     2(BX)(R14*1), Y4
	VPSIGNB     Y2, Y4, Y4
	VPXOR       Y5, Y5, Y5
	VPDPBUSD    Y4, Y3, Y5
	VCVTDQ2PS   Y5, Y5
	VMULPS.BCST 4(SP)(R8*1), Y1, Y6
	VFMADD231PS Y5, Y6, Y8

	VMOVDQU     2(DX)(R14*1), Y4
	VPSIGNB     Y2, Y4, Y4
	VPXOR       Y5, Y5, Y5
	VPDPBUSD    Y4, Y3, Y5
	VCVTDQ2PS   Y5, Y5
	VMULPS.BCST 8(SP)(R8*1), Y1, Y6
	VFMADD231PS Y5, Y6, Y9

	VMOVDQU     2(DI)(R14*1), Y4
	VPSIGNB     Y2, Y4, Y4
	VPXOR       Y5, Y5, Y5
	VPDPBUSD    Y4, Y3, Y5
	VCVTDQ2PS   Y5, Y5
	VMULPS.BCST 12(SP)(R8*1), Y1, Y6
	VFMADD231PS Y5, Y6, Y10

	ADDQ $34, R14
	ADDQ $16, R8
	CMPQ R8, CX
	JLT  sq8blocks

	VMOVAPS Y7, Y0
	HSUM
	VMOVSS  X0, (R10)
	VMOVAPS Y8, Y0
	HSUM
	VMOVSS  X0, (R11)
	VMOVAPS Y9, Y0
	HSUM
	VMOVSS  X0, (R12)
	VMOVAPS Y10, Y0
	HSUM
	VMOVSS  X0, (R13)
	ADDQ    $4, R10
	ADDQ    $4, R11
	ADDQ    $4, R12
	ADDQ    $4, R13
	ADDQ    R9, SI
	DECQ    R15
	JMP     sq8rows

sq8done:
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

// PFROW prefetches the row at offset (AX) (the next block's row j), then
// steps AX.
#define PFROW \
	MOVLQSX    (AX), R14 \
	PREFETCHT0 (DI)(R14*2) \
	PREFETCHT0 64(DI)(R14*2) \
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
