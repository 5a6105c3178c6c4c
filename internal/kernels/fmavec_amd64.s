//go:build amd64 && !purego

#include "textflag.h"

// FMAVec (fmavec.go): y = fma(x, w, y) per element, one rounding
// (VFMADD231PS: dst = src2·src3 + dst).

// func fmaVecAVX512(n int, y, x, w *float32)
// 64 elements a step, then 16, then the last < 16 under a mask (masked
// loads do not touch the elements past n).
TEXT ·fmaVecAVX512(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ y+8(FP), DI
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), DX

f512loop:
	CMPQ        CX, $64
	JL          f512v16
	VMOVUPS     (DI), Z0
	VMOVUPS     64(DI), Z1
	VMOVUPS     128(DI), Z2
	VMOVUPS     192(DI), Z3
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD231PS (DX), Z4, Z0
	VFMADD231PS 64(DX), Z5, Z1
	VFMADD231PS 128(DX), Z6, Z2
	VFMADD231PS 192(DX), Z7, Z3
	VMOVUPS     Z0, (DI)
	VMOVUPS     Z1, 64(DI)
	VMOVUPS     Z2, 128(DI)
	VMOVUPS     Z3, 192(DI)
	ADDQ        $256, DI
	ADDQ        $256, SI
	ADDQ        $256, DX
	SUBQ        $64, CX
	JMP         f512loop

f512v16:
	CMPQ        CX, $16
	JL          f512tail
	VMOVUPS     (DI), Z0
	VMOVUPS     (SI), Z4
	VFMADD231PS (DX), Z4, Z0
	VMOVUPS     Z0, (DI)
	ADDQ        $64, DI
	ADDQ        $64, SI
	ADDQ        $64, DX
	SUBQ        $16, CX
	JMP         f512v16

f512tail:
	TESTQ       CX, CX
	JZ          f512done
	MOVL        $1, AX
	SHLL        CX, AX
	DECL        AX
	KMOVW       AX, K1
	VMOVUPS.Z   (DI), K1, Z0
	VMOVUPS.Z   (SI), K1, Z4
	VMOVUPS.Z   (DX), K1, Z5
	VFMADD231PS Z5, Z4, Z0
	VMOVUPS     Z0, K1, (DI)

f512done:
	VZEROUPPER
	RET

// func fmaVecAVX2(n int, y, x, w *float32)
// 32 elements a step, then 8, then one at a time (VFMADD231SS).
TEXT ·fmaVecAVX2(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ y+8(FP), DI
	MOVQ x+16(FP), SI
	MOVQ w+24(FP), DX

f256loop:
	CMPQ        CX, $32
	JL          f256v8
	VMOVUPS     (DI), Y0
	VMOVUPS     32(DI), Y1
	VMOVUPS     64(DI), Y2
	VMOVUPS     96(DI), Y3
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DX), Y4, Y0
	VFMADD231PS 32(DX), Y5, Y1
	VFMADD231PS 64(DX), Y6, Y2
	VFMADD231PS 96(DX), Y7, Y3
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)
	VMOVUPS     Y2, 64(DI)
	VMOVUPS     Y3, 96(DI)
	ADDQ        $128, DI
	ADDQ        $128, SI
	ADDQ        $128, DX
	SUBQ        $32, CX
	JMP         f256loop

f256v8:
	CMPQ        CX, $8
	JL          f256t1
	VMOVUPS     (DI), Y0
	VMOVUPS     (SI), Y4
	VFMADD231PS (DX), Y4, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, DI
	ADDQ        $32, SI
	ADDQ        $32, DX
	SUBQ        $8, CX
	JMP         f256v8

f256t1:
	TESTQ       CX, CX
	JZ          f256done
	VMOVSS      (DI), X0
	VMOVSS      (SI), X4
	VFMADD231SS (DX), X4, X0
	VMOVSS      X0, (DI)
	ADDQ        $4, DI
	ADDQ        $4, SI
	ADDQ        $4, DX
	DECQ        CX
	JMP         f256t1

f256done:
	VZEROUPPER
	RET
