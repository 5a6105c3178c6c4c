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

// func scaleMaxAVX512(n int, x *float32, s float32) float32
// x[i] *= s in place for i < n; returns the largest product.
TEXT ·scaleMaxAVX512(SB), NOSPLIT, $0-28
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Z0
	MOVL         $0xff800000, AX // −∞
	VPBROADCASTD AX, Z1
	VMOVAPS      Z1, Z2
	VMOVAPS      Z1, Z3
	VMOVAPS      Z1, Z8

smx64:
	CMPQ    CX, $64
	JL      smx16
	VMULPS  (SI), Z0, Z4
	VMULPS  64(SI), Z0, Z5
	VMULPS  128(SI), Z0, Z6
	VMULPS  192(SI), Z0, Z7
	VMOVUPS Z4, (SI)
	VMOVUPS Z5, 64(SI)
	VMOVUPS Z6, 128(SI)
	VMOVUPS Z7, 192(SI)
	VMAXPS  Z4, Z1, Z1
	VMAXPS  Z5, Z2, Z2
	VMAXPS  Z6, Z3, Z3
	VMAXPS  Z7, Z8, Z8
	ADDQ    $256, SI
	SUBQ    $64, CX
	JMP     smx64

smx16:
	CMPQ    CX, $16
	JL      smxtail
	VMULPS  (SI), Z0, Z4
	VMOVUPS Z4, (SI)
	VMAXPS  Z4, Z1, Z1
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     smx16

smxtail: // the last n%16 under a mask: other lanes stay −∞, nothing else is read or written
	TESTQ   CX, CX
	JZ      smxdone
	MOVL    $1, AX
	SHLL    CX, AX
	DECL    AX
	KMOVW   AX, K1
	VMOVAPS Z8, Z4
	VMULPS  (SI), Z0, K1, Z4
	VMOVUPS Z4, K1, (SI)
	VMAXPS  Z4, Z1, Z1

smxdone:
	VMAXPS        Z2, Z1, Z1
	VMAXPS        Z8, Z3, Z3
	VMAXPS        Z3, Z1, Z1
	VEXTRACTF32X8 $1, Z1, Y2
	VMAXPS        Y2, Y1, Y1
	VEXTRACTF128  $1, Y1, X2
	VMAXPS        X2, X1, X1
	VPERMILPS     $0x4e, X1, X2
	VMAXPS        X2, X1, X1
	VPERMILPS     $0xb1, X1, X2
	VMAXPS        X2, X1, X1
	VMOVSS        X1, ret+24(FP)
	VZEROUPPER
	RET

// func scaleMaxAVX2(n int, x *float32, s float32) float32
// n a multiple of 8: x[i] *= s in place; returns the largest product.
TEXT ·scaleMaxAVX2(SB), NOSPLIT, $0-28
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Y0
	MOVL         $0xff800000, AX // −∞
	MOVL         AX, X1
	VBROADCASTSS X1, Y1
	VMOVAPS      Y1, Y2

sma32:
	CMPQ    CX, $32
	JL      sma8
	VMULPS  (SI), Y0, Y4
	VMULPS  32(SI), Y0, Y5
	VMULPS  64(SI), Y0, Y6
	VMULPS  96(SI), Y0, Y7
	VMOVUPS Y4, (SI)
	VMOVUPS Y5, 32(SI)
	VMOVUPS Y6, 64(SI)
	VMOVUPS Y7, 96(SI)
	VMAXPS  Y4, Y1, Y1
	VMAXPS  Y5, Y2, Y2
	VMAXPS  Y6, Y1, Y1
	VMAXPS  Y7, Y2, Y2
	ADDQ    $128, SI
	SUBQ    $32, CX
	JMP     sma32

sma8:
	CMPQ    CX, $8
	JL      smadone
	VMULPS  (SI), Y0, Y4
	VMOVUPS Y4, (SI)
	VMAXPS  Y4, Y1, Y1
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     sma8

smadone:
	VMAXPS       Y2, Y1, Y1
	VEXTRACTF128 $1, Y1, X2
	VMAXPS       X2, X1, X1
	VPERMILPS    $0x4e, X1, X2
	VMAXPS       X2, X1, X1
	VPERMILPS    $0xb1, X1, X2
	VMAXPS       X2, X1, X1
	VMOVSS       X1, ret+24(FP)
	VZEROUPPER
	RET

// func scaleRoundF16AVX512(n int, x *float32, s float32)
// x[i] = F16(x[i]·s) (nearest even) back in float32 for i < n.
TEXT ·scaleRoundF16AVX512(SB), NOSPLIT, $0-20
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Z0

srz32:
	CMPQ      CX, $32
	JL        srz16
	VMULPS    (SI), Z0, Z4
	VMULPS    64(SI), Z0, Z5
	VCVTPS2PH $0, Z4, Y6
	VCVTPS2PH $0, Z5, Y7
	VCVTPH2PS Y6, Z4
	VCVTPH2PS Y7, Z5
	VMOVUPS   Z4, (SI)
	VMOVUPS   Z5, 64(SI)
	ADDQ      $128, SI
	SUBQ      $32, CX
	JMP       srz32

srz16:
	CMPQ      CX, $16
	JL        srztail
	VMULPS    (SI), Z0, Z4
	VCVTPS2PH $0, Z4, Y6
	VCVTPH2PS Y6, Z4
	VMOVUPS   Z4, (SI)
	ADDQ      $64, SI
	SUBQ      $16, CX
	JMP       srz16

srztail: // the last n%16 under a mask: nothing else is read or written
	TESTQ     CX, CX
	JZ        srzdone
	MOVL      $1, AX
	SHLL      CX, AX
	DECL      AX
	KMOVW     AX, K1
	VMOVUPS.Z (SI), K1, Z4
	VMULPS    Z4, Z0, Z4
	VCVTPS2PH $0, Z4, Y6
	VCVTPH2PS Y6, Z4
	VMOVUPS   Z4, K1, (SI)

srzdone:
	VZEROUPPER
	RET

// func scaleRoundF16AVX2(n int, x *float32, s float32)
// n a multiple of 8: x[i] = F16(x[i]·s) (nearest even) back in float32.
TEXT ·scaleRoundF16AVX2(SB), NOSPLIT, $0-20
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	VBROADCASTSS s+16(FP), Y0

sry8:
	CMPQ      CX, $8
	JL        srydone
	VMULPS    (SI), Y0, Y4
	VCVTPS2PH $0, Y4, X6
	VCVTPH2PS X6, Y4
	VMOVUPS   Y4, (SI)
	ADDQ      $32, SI
	SUBQ      $8, CX
	JMP       sry8

srydone:
	VZEROUPPER
	RET

// func dequantQ8_0AVX512(nb int, x *byte, y *float32)
// nb Q8_0 blocks (an F16 scale d, then 32 int8 quants) to 32·nb floats
// q·d.
TEXT ·dequantQ8_0AVX512(SB), NOSPLIT, $0-24
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI

dq8loop:
	TESTQ        CX, CX
	JZ           dq8done
	MOVWLZX      (SI), AX
	VMOVD        AX, X0
	VCVTPH2PS    X0, X0
	VBROADCASTSS X0, Z0
	VPMOVSXBD    2(SI), Z1
	VPMOVSXBD    18(SI), Z2
	VCVTDQ2PS    Z1, Z1
	VCVTDQ2PS    Z2, Z2
	VMULPS       Z0, Z1, Z1
	VMULPS       Z0, Z2, Z2
	VMOVUPS      Z1, (DI)
	VMOVUPS      Z2, 64(DI)
	ADDQ         $34, SI
	ADDQ         $128, DI
	DECQ         CX
	JMP          dq8loop

dq8done:
	VZEROUPPER
	RET
