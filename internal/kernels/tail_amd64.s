//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The activation tails of the packed kernels (sumTail and q8Tail in
// packed.go, their portable forms) over a Q8_0 row: per 34-byte block the
// float32 d_a (VCVTPH2PS, exact) and integer sums of its 32 int8 values,
// formed by VPDPBUSD against unsigned ones (Σ of each 4-byte lane, exact)
// and multiplied by −off (VPMULLD, the low 32 bits as Go's int32).

// TAILD: block at SI's float32 d into (DI).
#define TAILD \
	MOVWLZX   (SI), AX \
	VMOVD     AX, X0 \
	VCVTPH2PS X0, X0 \
	VMOVSS    X0, (DI)

// func sumTailVNNI(nb int, row, tail *byte, off int32)
// Per block: float32 d, int32 −off·Σ q (8 bytes).
TEXT ·sumTailVNNI(SB), NOSPLIT, $0-28
	MOVQ         nb+0(FP), CX
	MOVQ         row+8(FP), SI
	MOVQ         tail+16(FP), DI
	MOVL         off+24(FP), R8
	NEGL         R8
	MOVL         $0x01010101, AX
	VPBROADCASTD AX, Y15

sumtailloop:
	TESTQ    CX, CX
	JZ       sumtaildone
	TAILD
	VPXOR    Y1, Y1, Y1
	VPDPBUSD 2(SI), Y15, Y1
	HSUMD(Y1, X1, X2)
	VMOVD    X1, AX
	IMULL    R8, AX
	MOVL     AX, 4(DI)
	ADDQ     $34, SI
	ADDQ     $8, DI
	DECQ     CX
	JMP      sumtailloop

sumtaildone:
	VZEROUPPER
	RET

// func q8TailVNNI(nb int, row, tail *byte, off int32)
// Per block: float32 d, then for each 4-byte lane k the int32 −off·Σ
// q[4k..4k+3] (36 bytes).
TEXT ·q8TailVNNI(SB), NOSPLIT, $0-28
	MOVQ         nb+0(FP), CX
	MOVQ         row+8(FP), SI
	MOVQ         tail+16(FP), DI
	MOVL         off+24(FP), R8
	NEGL         R8
	VPBROADCASTD R8, Y14
	MOVL         $0x01010101, AX
	VPBROADCASTD AX, Y15

q8tailloop:
	TESTQ    CX, CX
	JZ       q8taildone
	TAILD
	VPXOR    Y1, Y1, Y1
	VPDPBUSD 2(SI), Y15, Y1
	VPMULLD  Y14, Y1, Y1
	VMOVDQU  Y1, 4(DI)
	ADDQ     $34, SI
	ADDQ     $36, DI
	DECQ     CX
	JMP      q8tailloop

q8taildone:
	VZEROUPPER
	RET
