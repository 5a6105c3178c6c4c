//go:build amd64 && !purego

#include "textflag.h"
#include "packed_amd64.h"

// Sixteen-row kernels over repacked Q4_0 / Q8_0 weights (see packed.go),
// AVX-512 F/BW + VNNI. One ZMM lane per weight row: VPDPBUSD multiplies 4
// unsigned weight bytes of each row by the same 4 activation bytes (an
// embedded broadcast) and adds them to the lane, so one instruction does
// one ggml lane (elements 4k..4k+3) of one block for sixteen rows.
//
// The order is ggml's AVX2 vec_dot: per block and lane k the exact int32
// Σ w·a (its offset term folded in from the activation tail), converted to
// float and accumulated as acc_k += (d_w·d_a)·lane_k, one accumulator per
// lane; at the end ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). The results are
// bit-identical to dotQ4_0AVX2 / dotQ8_0AVX2 (TestPackedExact).
//
// Activation row (one token): nb Q8_0 blocks (34 bytes: f16 d, 32 int8),
// then a tail of nb × 36 bytes: float32 d_a and eight int32 corrections
// −off·Σ a[4k..4k+3] (off = 8 for Q4_0, 128 for Q8_0; see packTail).

// LANE: acc += d · float(corr_k + Σ w·a over lane k) for one token.
// w: unsigned weight bytes (ZMM); a: activation bytes' offset from DI;
// c: correction's offset from R8; d: scale ZMM; acc: accumulator ZMM.
#define LANE(w, aoff, coff, ap, cp, d, acc, t) \
	VPBROADCASTD     coff(cp), t \
	VPDPBUSD.BCST    aoff(ap), w, t \
	VCVTDQ2PS        t, t \
	VFMADD231PS      t, d, acc

// SCALE: d = f16 row scales at (SI) × d_a at (cp).
#define SCALE(cp, d) \
	VCVTPH2PS     (SI), d \
	VMULPS.BCST   (cp), d, d

// Q4 nibbles: zmm j holds bytes qs[4j..4j+3] of each row; low nibbles are
// elements 4j..4j+3 (lane j), high nibbles 16+4j.. (lane 4+j).
#define Q4SPLIT(src, lo, hi) \
	VPANDD   Z31, src, lo \
	VPSRLW   $4, src, hi \
	VPANDD   Z31, hi, hi

// func gemvQ4_0x16(nb int, w, a *byte, out *float32)
// One token: out[0:16] for a group of 16 packed rows; a is the activation
// row (blocks, then tail at a + 34·nb).
TEXT ·gemvQ4_0x16(SB), NOSPLIT, $0-32
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ out+24(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	ADDQ DI, R8
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

g4loop:
	TESTQ CX, CX
	JZ    g4done
	PF4(0)
	PF1(256)
	SCALE(R8, Z8)
	VMOVDQU64 32(SI), Z9
	VMOVDQU64 96(SI), Z10
	VMOVDQU64 160(SI), Z11
	VMOVDQU64 224(SI), Z12
	Q4SPLIT(Z9, Z13, Z14)
	LANE(Z13, 2, 4, DI, R8, Z8, Z0, Z15)
	LANE(Z14, 18, 20, DI, R8, Z8, Z4, Z16)
	Q4SPLIT(Z10, Z13, Z14)
	LANE(Z13, 6, 8, DI, R8, Z8, Z1, Z15)
	LANE(Z14, 22, 24, DI, R8, Z8, Z5, Z16)
	Q4SPLIT(Z11, Z13, Z14)
	LANE(Z13, 10, 12, DI, R8, Z8, Z2, Z15)
	LANE(Z14, 26, 28, DI, R8, Z8, Z6, Z16)
	Q4SPLIT(Z12, Z13, Z14)
	LANE(Z13, 14, 16, DI, R8, Z8, Z3, Z15)
	LANE(Z14, 30, 32, DI, R8, Z8, Z7, Z16)
	ADDQ $288, SI
	ADDQ $34, DI
	ADDQ $36, R8
	DECQ CX
	JMP  g4loop

g4done:
	REDUCE16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	VZEROUPPER
	RET

// func gemmQ4_0x16x2(nb int, w, a *byte, astride int, out *float32, ostride int)
// Two tokens (a, a+astride) against 16 packed rows: the weights are loaded
// and unpacked once for both. out[0:16] and out[ostride/4:][0:16].
TEXT ·gemmQ4_0x16x2(SB), NOSPLIT, $0-48
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ astride+24(FP), R9
	ADDQ DI, R9
	MOVQ out+32(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	LEAQ (R9)(R8*1), R10
	ADDQ DI, R8
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

g4x2loop:
	TESTQ CX, CX
	JZ    g4x2done
	PF4(0)
	PF1(256)
	SCALE(R8, Z8)
	SCALE(R10, Z24)
	VMOVDQU64 32(SI), Z9
	VMOVDQU64 96(SI), Z10
	VMOVDQU64 160(SI), Z11
	VMOVDQU64 224(SI), Z12
	Q4SPLIT(Z9, Z13, Z14)
	LANE(Z13, 2, 4, DI, R8, Z8, Z0, Z15)
	LANE(Z14, 18, 20, DI, R8, Z8, Z4, Z25)
	LANE(Z13, 2, 4, R9, R10, Z24, Z16, Z26)
	LANE(Z14, 18, 20, R9, R10, Z24, Z20, Z27)
	Q4SPLIT(Z10, Z13, Z14)
	LANE(Z13, 6, 8, DI, R8, Z8, Z1, Z15)
	LANE(Z14, 22, 24, DI, R8, Z8, Z5, Z25)
	LANE(Z13, 6, 8, R9, R10, Z24, Z17, Z26)
	LANE(Z14, 22, 24, R9, R10, Z24, Z21, Z27)
	Q4SPLIT(Z11, Z13, Z14)
	LANE(Z13, 10, 12, DI, R8, Z8, Z2, Z15)
	LANE(Z14, 26, 28, DI, R8, Z8, Z6, Z25)
	LANE(Z13, 10, 12, R9, R10, Z24, Z18, Z26)
	LANE(Z14, 26, 28, R9, R10, Z24, Z22, Z27)
	Q4SPLIT(Z12, Z13, Z14)
	LANE(Z13, 14, 16, DI, R8, Z8, Z3, Z15)
	LANE(Z14, 30, 32, DI, R8, Z8, Z7, Z25)
	LANE(Z13, 14, 16, R9, R10, Z24, Z19, Z26)
	LANE(Z14, 30, 32, R9, R10, Z24, Z23, Z27)
	ADDQ $288, SI
	ADDQ $34, DI
	ADDQ $36, R8
	ADDQ $34, R9
	ADDQ $36, R10
	DECQ CX
	JMP  g4x2loop

g4x2done:
	REDUCE16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	MOVQ ostride+40(FP), AX
	ADDQ AX, R11
	REDUCE16(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, 0)
	VZEROUPPER
	RET

// func gemvQ8_0x16(nb int, w, a *byte, out *float32)
// Q8_0 groups: 32 bytes of scales, then eight ZMM of weights stored as
// w XOR 0x80 (= w+128, unsigned); lane k = elements 4k..4k+3.
TEXT ·gemvQ8_0x16(SB), NOSPLIT, $0-32
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ out+24(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	ADDQ DI, R8
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

g8loop:
	TESTQ CX, CX
	JZ    g8done
	PF4(0)
	PF4(256)
	PF1(512)
	SCALE(R8, Z8)
	VMOVDQU64 32(SI), Z9
	VMOVDQU64 96(SI), Z10
	VMOVDQU64 160(SI), Z11
	VMOVDQU64 224(SI), Z12
	LANE(Z9, 2, 4, DI, R8, Z8, Z0, Z15)
	LANE(Z10, 6, 8, DI, R8, Z8, Z1, Z16)
	LANE(Z11, 10, 12, DI, R8, Z8, Z2, Z17)
	LANE(Z12, 14, 16, DI, R8, Z8, Z3, Z18)
	VMOVDQU64 288(SI), Z9
	VMOVDQU64 352(SI), Z10
	VMOVDQU64 416(SI), Z11
	VMOVDQU64 480(SI), Z12
	LANE(Z9, 18, 20, DI, R8, Z8, Z4, Z15)
	LANE(Z10, 22, 24, DI, R8, Z8, Z5, Z16)
	LANE(Z11, 26, 28, DI, R8, Z8, Z6, Z17)
	LANE(Z12, 30, 32, DI, R8, Z8, Z7, Z18)
	ADDQ $544, SI
	ADDQ $34, DI
	ADDQ $36, R8
	DECQ CX
	JMP  g8loop

g8done:
	REDUCE16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	VZEROUPPER
	RET

// func gemmQ8_0x16x2(nb int, w, a *byte, astride int, out *float32, ostride int)
TEXT ·gemmQ8_0x16x2(SB), NOSPLIT, $0-48
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ astride+24(FP), R9
	ADDQ DI, R9
	MOVQ out+32(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	LEAQ (R9)(R8*1), R10
	ADDQ DI, R8
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

g8x2loop:
	TESTQ CX, CX
	JZ    g8x2done
	PF4(0)
	PF4(256)
	PF1(512)
	SCALE(R8, Z8)
	SCALE(R10, Z24)
	VMOVDQU64 32(SI), Z9
	VMOVDQU64 96(SI), Z10
	VMOVDQU64 160(SI), Z11
	VMOVDQU64 224(SI), Z12
	LANE(Z9, 2, 4, DI, R8, Z8, Z0, Z13)
	LANE(Z9, 2, 4, R9, R10, Z24, Z16, Z14)
	LANE(Z10, 6, 8, DI, R8, Z8, Z1, Z15)
	LANE(Z10, 6, 8, R9, R10, Z24, Z17, Z25)
	LANE(Z11, 10, 12, DI, R8, Z8, Z2, Z26)
	LANE(Z11, 10, 12, R9, R10, Z24, Z18, Z27)
	LANE(Z12, 14, 16, DI, R8, Z8, Z3, Z28)
	LANE(Z12, 14, 16, R9, R10, Z24, Z19, Z29)
	VMOVDQU64 288(SI), Z9
	VMOVDQU64 352(SI), Z10
	VMOVDQU64 416(SI), Z11
	VMOVDQU64 480(SI), Z12
	LANE(Z9, 18, 20, DI, R8, Z8, Z4, Z13)
	LANE(Z9, 18, 20, R9, R10, Z24, Z20, Z14)
	LANE(Z10, 22, 24, DI, R8, Z8, Z5, Z15)
	LANE(Z10, 22, 24, R9, R10, Z24, Z21, Z25)
	LANE(Z11, 26, 28, DI, R8, Z8, Z6, Z26)
	LANE(Z11, 26, 28, R9, R10, Z24, Z22, Z27)
	LANE(Z12, 30, 32, DI, R8, Z8, Z7, Z28)
	LANE(Z12, 30, 32, R9, R10, Z24, Z23, Z29)
	ADDQ $544, SI
	ADDQ $34, DI
	ADDQ $36, R8
	ADDQ $34, R9
	ADDQ $36, R10
	DECQ CX
	JMP  g8x2loop

g8x2done:
	REDUCE16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	MOVQ ostride+40(FP), AX
	ADDQ AX, R11
	REDUCE16(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, 0)
	VZEROUPPER
	RET

// PFQ8: a Q8_0 group block's nine lines at w, R15 bytes ahead.
#define PFQ8(w) \
	PREFETCHT0 (w)(R15*1) \
	PREFETCHT0 64(w)(R15*1) \
	PREFETCHT0 128(w)(R15*1) \
	PREFETCHT0 192(w)(R15*1) \
	PREFETCHT0 256(w)(R15*1) \
	PREFETCHT0 320(w)(R15*1) \
	PREFETCHT0 384(w)(R15*1) \
	PREFETCHT0 448(w)(R15*1) \
	PREFETCHT0 512(w)(R15*1)

// func gemvQ8_0x16s3(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)
// One token against three groups (w, w+wstride, w+2·wstride; outputs
// ostride bytes apart), each bit-identical to gemvQ8_0x16. Decode hands it
// groups a third of a worker's range apart: more sequential streams keep
// more of the memory's reads in flight than one (see
// dotF16Vec4RowsAVX512). Three, not four: each group holds eight
// accumulators, and 24 of them, three scales and five temporaries fill the
// 32 registers (three streams decode 2–20% faster than two did).
TEXT ·gemvQ8_0x16s3(SB), NOSPLIT, $0-48
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ wstride+16(FP), DX
	LEAQ (SI)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	MOVQ a+24(FP), DI
	MOVQ out+32(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	ADDQ DI, R8
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

g8s3loop:
	TESTQ CX, CX
	JZ    g8s3done
	PFSKIP(g8s3pf)
	PFQ8(SI)
	PFQ8(R9)
	PFQ8(R10)
g8s3pf:
	SCALE(R8, Z24)
	VCVTPH2PS     (R9), Z25
	VMULPS.BCST   (R8), Z25, Z25
	VCVTPH2PS     (R10), Z26
	VMULPS.BCST   (R8), Z26, Z26
	VMOVDQU64 32(SI), Z27
	LANE(Z27, 2, 4, DI, R8, Z24, Z0, Z28)
	VMOVDQU64 32(R9), Z29
	LANE(Z29, 2, 4, DI, R8, Z25, Z8, Z30)
	VMOVDQU64 32(R10), Z31
	LANE(Z31, 2, 4, DI, R8, Z26, Z16, Z27)
	VMOVDQU64 96(SI), Z27
	LANE(Z27, 6, 8, DI, R8, Z24, Z1, Z28)
	VMOVDQU64 96(R9), Z29
	LANE(Z29, 6, 8, DI, R8, Z25, Z9, Z30)
	VMOVDQU64 96(R10), Z31
	LANE(Z31, 6, 8, DI, R8, Z26, Z17, Z27)
	VMOVDQU64 160(SI), Z27
	LANE(Z27, 10, 12, DI, R8, Z24, Z2, Z28)
	VMOVDQU64 160(R9), Z29
	LANE(Z29, 10, 12, DI, R8, Z25, Z10, Z30)
	VMOVDQU64 160(R10), Z31
	LANE(Z31, 10, 12, DI, R8, Z26, Z18, Z27)
	VMOVDQU64 224(SI), Z27
	LANE(Z27, 14, 16, DI, R8, Z24, Z3, Z28)
	VMOVDQU64 224(R9), Z29
	LANE(Z29, 14, 16, DI, R8, Z25, Z11, Z30)
	VMOVDQU64 224(R10), Z31
	LANE(Z31, 14, 16, DI, R8, Z26, Z19, Z27)
	VMOVDQU64 288(SI), Z27
	LANE(Z27, 18, 20, DI, R8, Z24, Z4, Z28)
	VMOVDQU64 288(R9), Z29
	LANE(Z29, 18, 20, DI, R8, Z25, Z12, Z30)
	VMOVDQU64 288(R10), Z31
	LANE(Z31, 18, 20, DI, R8, Z26, Z20, Z27)
	VMOVDQU64 352(SI), Z27
	LANE(Z27, 22, 24, DI, R8, Z24, Z5, Z28)
	VMOVDQU64 352(R9), Z29
	LANE(Z29, 22, 24, DI, R8, Z25, Z13, Z30)
	VMOVDQU64 352(R10), Z31
	LANE(Z31, 22, 24, DI, R8, Z26, Z21, Z27)
	VMOVDQU64 416(SI), Z27
	LANE(Z27, 26, 28, DI, R8, Z24, Z6, Z28)
	VMOVDQU64 416(R9), Z29
	LANE(Z29, 26, 28, DI, R8, Z25, Z14, Z30)
	VMOVDQU64 416(R10), Z31
	LANE(Z31, 26, 28, DI, R8, Z26, Z22, Z27)
	VMOVDQU64 480(SI), Z27
	LANE(Z27, 30, 32, DI, R8, Z24, Z7, Z28)
	VMOVDQU64 480(R9), Z29
	LANE(Z29, 30, 32, DI, R8, Z25, Z15, Z30)
	VMOVDQU64 480(R10), Z31
	LANE(Z31, 30, 32, DI, R8, Z26, Z23, Z27)
	ADDQ $544, SI
	ADDQ $544, R9
	ADDQ $544, R10
	ADDQ $34, DI
	ADDQ $36, R8
	DECQ CX
	JMP  g8s3loop

g8s3done:
	MOVQ ostride+40(FP), DX
	REDUCE16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	ADDQ DX, R11
	REDUCE16(Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, 0)
	ADDQ DX, R11
	REDUCE16(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, 0)
	VZEROUPPER
	RET

// Q5_0 groups (352 bytes per block): scales, the nibbles laid out as Q4_0's,
// then 64 bytes of fifth bits: byte b of row r has bit k = the fifth bit of
// element 4k+b (lane k). Lane k's bytes become nibble | bit<<4 = q+16 in
// 0..31; the tail's correction is −16·Σa (ggml's q−16, exactly).

// Q5OR ORs lane k's fifth bits into nib: t is Z29 shifted so that bit k of
// every byte is at bit 4 (word shifts by at most 4 keep it within the byte);
// ternlog 0xF8 is nib | (t & Z30), Z30 = 0x10 bytes.
#define Q5OR(t, nib) \
	VPTERNLOGD $0xF8, Z30, t, nib

// func gemvQ5_0x16(nb int, w, a *byte, out *float32)
TEXT ·gemvQ5_0x16(SB), NOSPLIT, $0-32
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ out+24(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	ADDQ DI, R8
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z30
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)

g5loop:
	TESTQ CX, CX
	JZ    g5done
	PF4(0)
	PF1(256)
	PF1(320)
	SCALE(R8, Z8)
	VMOVDQU64 32(SI), Z9
	VMOVDQU64 96(SI), Z10
	VMOVDQU64 160(SI), Z11
	VMOVDQU64 224(SI), Z12
	VMOVDQU64 288(SI), Z29
	Q4SPLIT(Z9, Z13, Z14)
	VPSLLW $4, Z29, Z17
	Q5OR(Z17, Z13)
	Q5OR(Z29, Z14)
	LANE(Z13, 2, 4, DI, R8, Z8, Z0, Z15)
	LANE(Z14, 18, 20, DI, R8, Z8, Z4, Z16)
	Q4SPLIT(Z10, Z13, Z14)
	VPSLLW $3, Z29, Z17
	Q5OR(Z17, Z13)
	VPSRLW $1, Z29, Z18
	Q5OR(Z18, Z14)
	LANE(Z13, 6, 8, DI, R8, Z8, Z1, Z15)
	LANE(Z14, 22, 24, DI, R8, Z8, Z5, Z16)
	Q4SPLIT(Z11, Z13, Z14)
	VPSLLW $2, Z29, Z17
	Q5OR(Z17, Z13)
	VPSRLW $2, Z29, Z18
	Q5OR(Z18, Z14)
	LANE(Z13, 10, 12, DI, R8, Z8, Z2, Z15)
	LANE(Z14, 26, 28, DI, R8, Z8, Z6, Z16)
	Q4SPLIT(Z12, Z13, Z14)
	VPSLLW $1, Z29, Z17
	Q5OR(Z17, Z13)
	VPSRLW $3, Z29, Z18
	Q5OR(Z18, Z14)
	LANE(Z13, 14, 16, DI, R8, Z8, Z3, Z15)
	LANE(Z14, 30, 32, DI, R8, Z8, Z7, Z16)
	ADDQ $352, SI
	ADDQ $34, DI
	ADDQ $36, R8
	DECQ CX
	JMP  g5loop

g5done:
	REDUCE16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	VZEROUPPER
	RET

// func gemmQ5_0x16x2(nb int, w, a *byte, astride int, out *float32, ostride int)
// Two tokens against 16 packed Q5_0 rows, as gemmQ4_0x16x2.
TEXT ·gemmQ5_0x16x2(SB), NOSPLIT, $0-48
	MOVQ nb+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ a+16(FP), DI
	MOVQ astride+24(FP), R9
	ADDQ DI, R9
	MOVQ out+32(FP), R11
	PFLOAD
	IMUL3Q $34, CX, R8
	LEAQ (R9)(R8*1), R10
	ADDQ DI, R8
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	MOVL $0x10101010, AX
	VPBROADCASTD AX, Z30
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23)

g5x2loop:
	TESTQ CX, CX
	JZ    g5x2done
	PF4(0)
	PF1(256)
	PF1(320)
	SCALE(R8, Z8)
	SCALE(R10, Z24)
	VMOVDQU64 32(SI), Z9
	VMOVDQU64 96(SI), Z10
	VMOVDQU64 160(SI), Z11
	VMOVDQU64 224(SI), Z12
	VMOVDQU64 288(SI), Z29
	Q4SPLIT(Z9, Z13, Z14)
	VPSLLW $4, Z29, Z28
	Q5OR(Z28, Z13)
	Q5OR(Z29, Z14)
	LANE(Z13, 2, 4, DI, R8, Z8, Z0, Z15)
	LANE(Z14, 18, 20, DI, R8, Z8, Z4, Z25)
	LANE(Z13, 2, 4, R9, R10, Z24, Z16, Z26)
	LANE(Z14, 18, 20, R9, R10, Z24, Z20, Z27)
	Q4SPLIT(Z10, Z13, Z14)
	VPSLLW $3, Z29, Z28
	Q5OR(Z28, Z13)
	VPSRLW $1, Z29, Z28
	Q5OR(Z28, Z14)
	LANE(Z13, 6, 8, DI, R8, Z8, Z1, Z15)
	LANE(Z14, 22, 24, DI, R8, Z8, Z5, Z25)
	LANE(Z13, 6, 8, R9, R10, Z24, Z17, Z26)
	LANE(Z14, 22, 24, R9, R10, Z24, Z21, Z27)
	Q4SPLIT(Z11, Z13, Z14)
	VPSLLW $2, Z29, Z28
	Q5OR(Z28, Z13)
	VPSRLW $2, Z29, Z28
	Q5OR(Z28, Z14)
	LANE(Z13, 10, 12, DI, R8, Z8, Z2, Z15)
	LANE(Z14, 26, 28, DI, R8, Z8, Z6, Z25)
	LANE(Z13, 10, 12, R9, R10, Z24, Z18, Z26)
	LANE(Z14, 26, 28, R9, R10, Z24, Z22, Z27)
	Q4SPLIT(Z12, Z13, Z14)
	VPSLLW $1, Z29, Z28
	Q5OR(Z28, Z13)
	VPSRLW $3, Z29, Z28
	Q5OR(Z28, Z14)
	LANE(Z13, 14, 16, DI, R8, Z8, Z3, Z15)
	LANE(Z14, 30, 32, DI, R8, Z8, Z7, Z25)
	LANE(Z13, 14, 16, R9, R10, Z24, Z19, Z26)
	LANE(Z14, 30, 32, R9, R10, Z24, Z23, Z27)
	ADDQ $352, SI
	ADDQ $34, DI
	ADDQ $36, R8
	ADDQ $34, R9
	ADDQ $36, R10
	DECQ CX
	JMP  g5x2loop

g5x2done:
	REDUCE16(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, 0)
	MOVQ ostride+40(FP), AX
	ADDQ AX, R11
	REDUCE16(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, 0)
	VZEROUPPER
	RET
