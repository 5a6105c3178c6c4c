//go:build amd64 && !purego

#include "textflag.h"

// func scaleMulAVX2(n int, out, x, w *float32, s float32)
// n a multiple of 8.
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-36
	MOVQ         n+0(FP), CX
	MOVQ         out+8(FP), DI
	MOVQ         x+16(FP), SI
	MOVQ         w+24(FP), DX
	VBROADCASTSS s+32(FP), Y0

smloop:
	CMPQ    CX, $8
	JL      smdone
	VMULPS  (SI), Y0, Y1
	VMULPS  (DX), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     smloop

smdone:
	VZEROUPPER
	RET

// func addToAVX2(n int, x, y *float32)
// n a multiple of 8.
TEXT ·addToAVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), DI
	MOVQ y+16(FP), SI

adloop:
	CMPQ    CX, $8
	JL      addone
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     adloop

addone:
	VZEROUPPER
	RET
