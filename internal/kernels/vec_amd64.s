//go:build amd64 && !purego

#include "textflag.h"

// func f32ToF16AVX2(n int, src *float32, dst *uint16)
// n a multiple of 8; VCVTPS2PH with imm 0 rounds to nearest even.
TEXT ·f32ToF16AVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI

cvloop:
	CMPQ CX, $8
	JL   cvdone
	VMOVUPS   (SI), Y1
	VCVTPS2PH $0, Y1, X2
	VMOVDQU   X2, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $8, CX
	JMP  cvloop

cvdone:
	VZEROUPPER
	RET

// func roundF16sAVX2(n int, x *float32)
// n a multiple of 8: x rounded to F16 (nearest even) and back, in place.
TEXT ·roundF16sAVX2(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI

rvloop:
	CMPQ CX, $8
	JL   rvdone
	VMOVUPS   (SI), Y1
	VCVTPS2PH $0, Y1, X2
	VCVTPH2PS X2, Y1
	VMOVUPS   Y1, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  rvloop

rvdone:
	VZEROUPPER
	RET

// func f16ToF32AVX2(n int, src *byte, dst *float32)
// n a multiple of 8; VCVTPH2PS is exact (every F16 value is a float32).
TEXT ·f16ToF32AVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ src+8(FP), SI
	MOVQ dst+16(FP), DI

hvloop:
	CMPQ CX, $8
	JL   hvdone
	VCVTPH2PS (SI), Y1
	VMOVUPS   Y1, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  hvloop

hvdone:
	VZEROUPPER
	RET
