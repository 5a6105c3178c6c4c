//go:build amd64 && !purego

#include "textflag.h"

// func axpyF16AVX2(n int, a float32, v *uint16, o *float32)
// o[i] += a·f16(v[i]) for n a multiple of 8: multiply, then add (the
// roundings of the scalar reference).
TEXT ·axpyF16AVX2(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	VBROADCASTSS a+8(FP), Y0
	MOVQ v+16(FP), SI
	MOVQ o+24(FP), DI

axloop32:
	CMPQ CX, $32
	JL   axloop8
	VCVTPH2PS (SI), Y1
	VCVTPH2PS 16(SI), Y2
	VCVTPH2PS 32(SI), Y3
	VCVTPH2PS 48(SI), Y4
	VMULPS    Y0, Y1, Y1
	VMULPS    Y0, Y2, Y2
	VMULPS    Y0, Y3, Y3
	VMULPS    Y0, Y4, Y4
	VADDPS    (DI), Y1, Y1
	VADDPS    32(DI), Y2, Y2
	VADDPS    64(DI), Y3, Y3
	VADDPS    96(DI), Y4, Y4
	VMOVUPS   Y1, (DI)
	VMOVUPS   Y2, 32(DI)
	VMOVUPS   Y3, 64(DI)
	VMOVUPS   Y4, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  axloop32

axloop8:
	CMPQ CX, $8
	JL   axdone
	VCVTPH2PS (SI), Y1
	VMULPS    Y0, Y1, Y1
	VADDPS    (DI), Y1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  axloop8

axdone:
	VZEROUPPER
	RET

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

// func dotsF16TAVX2(hd int, q *float32, kT *uint16, stride int, n int, out *float32)
// out[j] = Σ_i q[i]·f16(kT[i·stride+j]) for j < n (n a multiple of 8,
// stride in elements), summed in i order with a multiply and an add per
// element: 32 (then 8) positions per pass, one vector lane per position.
TEXT ·dotsF16TAVX2(SB), NOSPLIT, $0-48
	MOVQ hd+0(FP), R9
	MOVQ q+8(FP), SI
	MOVQ kT+16(FP), DI
	MOVQ stride+24(FP), R8
	SHLQ $1, R8
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), R11

d32:
	CMPQ CX, $32
	JL   d8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ DI, R10
	XORQ AX, AX
d32i:
	CMPQ AX, R9
	JGE  d32st
	VBROADCASTSS (SI)(AX*4), Y8
	VCVTPH2PS (R10), Y4
	VCVTPH2PS 16(R10), Y5
	VCVTPH2PS 32(R10), Y6
	VCVTPH2PS 48(R10), Y7
	VMULPS Y8, Y4, Y4
	VMULPS Y8, Y5, Y5
	VMULPS Y8, Y6, Y6
	VMULPS Y8, Y7, Y7
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	ADDQ R8, R10
	INCQ AX
	JMP  d32i
d32st:
	VMOVUPS Y0, (R11)
	VMOVUPS Y1, 32(R11)
	VMOVUPS Y2, 64(R11)
	VMOVUPS Y3, 96(R11)
	ADDQ $64, DI
	ADDQ $128, R11
	SUBQ $32, CX
	JMP  d32

d8:
	CMPQ CX, $8
	JL   ddone
	VXORPS Y0, Y0, Y0
	MOVQ DI, R10
	XORQ AX, AX
d8i:
	CMPQ AX, R9
	JGE  d8st
	VBROADCASTSS (SI)(AX*4), Y8
	VCVTPH2PS (R10), Y4
	VMULPS Y8, Y4, Y4
	VADDPS Y4, Y0, Y0
	ADDQ R8, R10
	INCQ AX
	JMP  d8i
d8st:
	VMOVUPS Y0, (R11)
	ADDQ $16, DI
	ADDQ $32, R11
	SUBQ $8, CX
	JMP  d8

ddone:
	VZEROUPPER
	RET
