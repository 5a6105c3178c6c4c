//go:build amd64 && !purego

#include "textflag.h"

DATA q8perm<>+0(SB)/4, $0
DATA q8perm<>+4(SB)/4, $4
DATA q8perm<>+8(SB)/4, $1
DATA q8perm<>+12(SB)/4, $5
DATA q8perm<>+16(SB)/4, $2
DATA q8perm<>+20(SB)/4, $6
DATA q8perm<>+24(SB)/4, $3
DATA q8perm<>+28(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// func quantQ8_0AVX2(nb int, x *float32, y *byte)
// ggml's AVX2 quantize_row_q8_0: per 32 floats, amax; d = amax/127 stored
// as f16; q = round-half-even(x·(127/amax)) (0 when amax is 0) as int8.
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	// Y15 = abs mask, X14 = 127.0
	VPCMPEQD Y15, Y15, Y15
	VPSRLD   $1, Y15, Y15
	MOVL     $0x42fe0000, AX
	VMOVD    AX, X14
	VMOVDQU  q8perm<>(SB), Y13

qloop:
	TESTQ CX, CX
	JZ    qdone
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS  Y15, Y0, Y4
	VANDPS  Y15, Y1, Y5
	VANDPS  Y15, Y2, Y6
	VANDPS  Y15, Y3, Y7
	VMAXPS  Y5, Y4, Y4
	VMAXPS  Y7, Y6, Y6
	VMAXPS  Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS  X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS  X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS  X5, X4, X4
	// d = amax/127 → f16
	VDIVSS    X14, X4, X5
	VCVTPS2PH $0, X5, X5
	VPEXTRW   $0, X5, AX
	MOVW      AX, (DI)
	// id = amax != 0 ? 127/amax : 0
	VXORPS    X6, X6, X6
	VUCOMISS  X6, X4
	JNE       qnonzero
	VXORPS    Y8, Y8, Y8
	JMP       qscale
qnonzero:
	VDIVSS    X4, X14, X8
	VBROADCASTSS X8, Y8
qscale:
	VMULPS    Y8, Y0, Y0
	VMULPS    Y8, Y1, Y1
	VMULPS    Y8, Y2, Y2
	VMULPS    Y8, Y3, Y3
	VROUNDPS  $0, Y0, Y0
	VROUNDPS  $0, Y1, Y1
	VROUNDPS  $0, Y2, Y2
	VROUNDPS  $0, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y13, Y0
	VMOVDQU   Y0, 2(DI)
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JMP  qloop

qdone:
	VZEROUPPER
	RET
