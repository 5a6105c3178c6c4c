//go:build amd64 && !purego

#include "textflag.h"

DATA ropesign<>+0(SB)/8, $0x0000000080000000
DATA ropesign<>+8(SB)/8, $0x0000000080000000
DATA ropesign<>+16(SB)/8, $0x0000000080000000
DATA ropesign<>+24(SB)/8, $0x0000000080000000
GLOBL ropesign<>(SB), RODATA|NOPTR, $32

// func ropeNormAVX2(n int, x, cs *float32)
// n a multiple of 8: four (x0, x1) pairs per vector.
//   (x0, x0)·(c, s) + (x1, x1)·(−s, c), the product by (c, s) fused.
TEXT ·ropeNormAVX2(SB), NOSPLIT, $0-24
	MOVQ    n+0(FP), CX
	MOVQ    x+8(FP), SI
	MOVQ    cs+16(FP), DX
	VMOVUPS ropesign<>(SB), Y7

rnloop:
	CMPQ        CX, $8
	JL          rndone
	VMOVUPS     (SI), Y0
	VMOVUPS     (DX), Y1
	VMOVSLDUP   Y0, Y2         // x0 x0
	VMOVSHDUP   Y0, Y3         // x1 x1
	VPERMILPS   $0xb1, Y1, Y4  // s c
	VXORPS      Y7, Y4, Y4     // −s c
	VMULPS      Y4, Y3, Y3     // −x1·s, x1·c
	VFMADD231PS Y1, Y2, Y3     // x0·c − x1·s, x0·s + x1·c
	VMOVUPS     Y3, (SI)
	ADDQ        $32, SI
	ADDQ        $32, DX
	SUBQ        $8, CX
	JMP         rnloop

rndone:
	VZEROUPPER
	RET

// func ropeNeoXAVX2(h int, x, c, s *float32)
// h (half the rotated dims) a multiple of 8; pairs (x[i], x[i+h]).
TEXT ·ropeNeoXAVX2(SB), NOSPLIT, $0-32
	MOVQ h+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ s+24(FP), BX
	MOVQ CX, DI
	SHLQ $2, DI                // h in bytes

rxloop:
	CMPQ         CX, $8
	JL           rxdone
	VMOVUPS      (SI), Y0      // x0
	VMOVUPS      (SI)(DI*1), Y1 // x1
	VMOVUPS      (DX), Y2      // c
	VMOVUPS      (BX), Y3      // s
	VMULPS       Y3, Y1, Y4    // x1·s
	VFMSUB231PS  Y2, Y0, Y4    // x0·c − x1·s
	VMULPS       Y2, Y1, Y5    // x1·c
	VFMADD231PS  Y3, Y0, Y5    // x0·s + x1·c
	VMOVUPS      Y4, (SI)
	VMOVUPS      Y5, (SI)(DI*1)
	ADDQ         $32, SI
	ADDQ         $32, DX
	ADDQ         $32, BX
	SUBQ         $8, CX
	JMP          rxloop

rxdone:
	VZEROUPPER
	RET
