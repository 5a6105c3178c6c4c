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

// func sumSquares8AVX2(n int, x *float32, stride int, ss *float64)
// n a multiple of 8 (0 stores zeros): ss[r] = Σ_{i<n} float64(x_r[i]·x_r[i]) in
// element order for the eight rows x_r = x + r·stride (bytes), one
// float64 chain per row: each 8×8 block's squares (VMULPS, rounded as
// float32) are transposed so that vector j holds element j of the eight
// rows, then widened and added, j = 0…7, to two four-lane accumulators
// (rows 0–3, 4–7).
TEXT ·sumSquares8AVX2(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ stride+16(FP), BX
	MOVQ ss+24(FP), DI
	LEAQ (BX)(BX*2), R8   // 3·stride
	LEAQ (BX)(BX*4), R9   // 5·stride
	LEAQ (R8)(BX*4), R10  // 7·stride
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	SHRQ $3, CX
	JZ   ssq8done

ssq8loop:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (SI)(BX*2), Y2
	VMOVUPS (SI)(R8*1), Y3
	VMOVUPS (SI)(BX*4), Y4
	VMOVUPS (SI)(R9*1), Y5
	VMOVUPS (SI)(R8*2), Y6
	VMOVUPS (SI)(R10*1), Y7
	VMULPS Y0, Y0, Y0
	VMULPS Y1, Y1, Y1
	VMULPS Y2, Y2, Y2
	VMULPS Y3, Y3, Y3
	VMULPS Y4, Y4, Y4
	VMULPS Y5, Y5, Y5
	VMULPS Y6, Y6, Y6
	VMULPS Y7, Y7, Y7
	// Rows a…h (Y0…Y7), elements 0…7 each. Pairs of rows interleaved:
	VUNPCKLPS Y1, Y0, Y8  // a0 b0 a1 b1 | a4 b4 a5 b5
	VUNPCKHPS Y1, Y0, Y9  // a2 b2 a3 b3 | a6 b6 a7 b7
	VUNPCKLPS Y3, Y2, Y10 // c0 d0 c1 d1 | c4 d4 c5 d5
	VUNPCKHPS Y3, Y2, Y11 // c2 d2 c3 d3 | c6 d6 c7 d7
	VUNPCKLPS Y5, Y4, Y0  // e0 f0 e1 f1 | e4 f4 e5 f5
	VUNPCKHPS Y5, Y4, Y1  // e2 f2 e3 f3 | e6 f6 e7 f7
	VUNPCKLPS Y7, Y6, Y2  // g0 h0 g1 h1 | g4 h4 g5 h5
	VUNPCKHPS Y7, Y6, Y3  // g2 h2 g3 h3 | g6 h6 g7 h7
	// Quads of rows:
	VSHUFPS $0x44, Y10, Y8, Y4  // a0 b0 c0 d0 | a4 b4 c4 d4
	VSHUFPS $0xEE, Y10, Y8, Y5  // a1 b1 c1 d1 | a5 b5 c5 d5
	VSHUFPS $0x44, Y11, Y9, Y6  // a2 … d2 | a6 … d6
	VSHUFPS $0xEE, Y11, Y9, Y7  // a3 … d3 | a7 … d7
	VSHUFPS $0x44, Y2, Y0, Y8   // e0 … h0 | e4 … h4
	VSHUFPS $0xEE, Y2, Y0, Y9   // e1 … h1 | e5 … h5
	VSHUFPS $0x44, Y3, Y1, Y10  // e2 … h2 | e6 … h6
	VSHUFPS $0xEE, Y3, Y1, Y11  // e3 … h3 | e7 … h7
	// Element j of the eight rows: the low halves (j < 4) or high halves
	// (j ≥ 4) of a quad vector of rows a–d and one of e–h; rows a–d
	// are the low 128 bits, widened to four float64 lanes for Y12, e–h
	// for Y13.
#define SSQADD(ad, eh, half) \
	VEXTRACTF128 half, ad, X0 \
	VCVTPS2PD    X0, Y0 \
	VADDPD       Y0, Y12, Y12 \
	VEXTRACTF128 half, eh, X1 \
	VCVTPS2PD    X1, Y1 \
	VADDPD       Y1, Y13, Y13
	SSQADD(Y4, Y8, $0)
	SSQADD(Y5, Y9, $0)
	SSQADD(Y6, Y10, $0)
	SSQADD(Y7, Y11, $0)
	SSQADD(Y4, Y8, $1)
	SSQADD(Y5, Y9, $1)
	SSQADD(Y6, Y10, $1)
	SSQADD(Y7, Y11, $1)
	ADDQ $32, SI
	DECQ CX
	JNZ  ssq8loop

ssq8done:
	VMOVUPD Y12, (DI)
	VMOVUPD Y13, 32(DI)
	VZEROUPPER
	RET
