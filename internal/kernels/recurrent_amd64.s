//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The recurrent layers' float32 kernels (recurrent.go) in the order of
// llama.cpp's AVX-512 build (the recordings'), on AVX-512 and on AVX2
// alike: four accumulators of 16 lanes over 64-element steps, element e in
// lane e mod 64, acc = fma(x, y, acc); then GGML_F32_VEC_REDUCE
// (REDUCE512; REDUCE512Y on AVX2, where each accumulator is two 8-lane
// registers).

// REDUCE512: X0 = GGML_F32x16_REDUCE of Z0..Z3: (Z0+Z2) + (Z1+Z3), then
// _mm512_reduce_add_ps's halving tree. Clobbers Z1.
#define REDUCE512 \
	VADDPS        Z2, Z0, Z0 \
	VADDPS        Z3, Z1, Z1 \
	VADDPS        Z1, Z0, Z0 \
	VEXTRACTF64X4 $1, Z0, Y1 \
	VADDPS        Y1, Y0, Y0 \
	HSUM

// SEQ4(r): X0 += r's lanes 0, 1, 2, 3, one at a time (GCC's in-order
// vectorized reduction of the dot's leftovers). Clobbers X6.
#define SEQ4(r) \
	VADDSS    r, X0, X0     \
	VPERMILPS $1, r, X6     \
	VADDSS    X6, X0, X0    \
	VPERMILPS $2, r, X6     \
	VADDSS    X6, X0, X0    \
	VPERMILPS $3, r, X6     \
	VADDSS    X6, X0, X0

// func dotF32AVX512(n int, x, y *float32) float32
TEXT ·dotF32AVX512(SB), NOSPLIT, $0-28
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3

d512loop:
	CMPQ        CX, $64
	JL          d512reduce
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         d512loop

d512reduce:
	REDUCE512

	// Leftovers: chunks of 16 rounded products added in order, then one
	// of 8, then fused multiply-adds.
d512t16:
	CMPQ          CX, $16
	JL            d512t8
	VMOVUPS       (SI), Z4
	VMULPS        (DI), Z4, Z4
	SEQ4(X4)
	VEXTRACTF32X4 $1, Z4, X5
	SEQ4(X5)
	VEXTRACTF32X4 $2, Z4, X5
	SEQ4(X5)
	VEXTRACTF32X4 $3, Z4, X5
	SEQ4(X5)
	ADDQ          $64, SI
	ADDQ          $64, DI
	SUBQ          $16, CX
	JMP           d512t16

d512t8:
	CMPQ         CX, $8
	JL           d512t1
	VMOVUPS      (SI), Y4
	VMULPS       (DI), Y4, Y4
	SEQ4(X4)
	VEXTRACTF128 $1, Y4, X5
	SEQ4(X5)
	ADDQ         $32, SI
	ADDQ         $32, DI
	SUBQ         $8, CX

d512t1:
	TESTQ       CX, CX
	JZ          d512done
	VMOVSS      (SI), X4
	VFMADD231SS (DI), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         d512t1

d512done:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF32AVX2(n int, x, y *float32) float32
// The AVX-512 build's order in 8-lane registers: Y0..Y7 hold its Z0..Z3
// as halves (element e of a 64-element step in Y(e/8 mod 8)), and the
// leftovers come in chunks of 16 (two halves) before the one of 8.
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ   n+0(FP), CX
	MOVQ   x+8(FP), SI
	MOVQ   y+16(FP), DI
	ZEROY8

dz2loop:
	CMPQ        CX, $64
	JL          dz2reduce
	VMOVUPS     0(SI), Y8
	VFMADD231PS 0(DI), Y8, Y0
	VMOVUPS     32(SI), Y9
	VFMADD231PS 32(DI), Y9, Y1
	VMOVUPS     64(SI), Y10
	VFMADD231PS 64(DI), Y10, Y2
	VMOVUPS     96(SI), Y11
	VFMADD231PS 96(DI), Y11, Y3
	VMOVUPS     128(SI), Y8
	VFMADD231PS 128(DI), Y8, Y4
	VMOVUPS     160(SI), Y9
	VFMADD231PS 160(DI), Y9, Y5
	VMOVUPS     192(SI), Y10
	VFMADD231PS 192(DI), Y10, Y6
	VMOVUPS     224(SI), Y11
	VFMADD231PS 224(DI), Y11, Y7
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         dz2loop

dz2reduce:
	REDUCE512Y

	// Leftovers: chunks of 16 rounded products added in order, then one
	// of 8, then fused multiply-adds.
dz2t16:
	CMPQ         CX, $16
	JL           dz2t8
	VMOVUPS      (SI), Y8
	VMULPS       (DI), Y8, Y8
	VMOVUPS      32(SI), Y9
	VMULPS       32(DI), Y9, Y9
	SEQ4(X8)
	VEXTRACTF128 $1, Y8, X10
	SEQ4(X10)
	SEQ4(X9)
	VEXTRACTF128 $1, Y9, X10
	SEQ4(X10)
	ADDQ         $64, SI
	ADDQ         $64, DI
	SUBQ         $16, CX
	JMP          dz2t16

dz2t8:
	CMPQ         CX, $8
	JL           dz2t1
	VMOVUPS      (SI), Y8
	VMULPS       (DI), Y8, Y8
	SEQ4(X8)
	VEXTRACTF128 $1, Y8, X10
	SEQ4(X10)
	ADDQ         $32, SI
	ADDQ         $32, DI
	SUBQ         $8, CX

dz2t1:
	TESTQ       CX, CX
	JZ          dz2done
	VMOVSS      (SI), X8
	VFMADD231SS (DI), X8, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         dz2t1

dz2done:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func madF32AVX512(n int, y, x *float32, v float32)
// y = fma(x, v, y) per element.
TEXT ·madF32AVX512(SB), NOSPLIT, $0-28
	MOVQ         n+0(FP), CX
	MOVQ         y+8(FP), DI
	MOVQ         x+16(FP), SI
	VBROADCASTSS v+24(FP), Z0

m512loop:
	CMPQ        CX, $64
	JL          m512v16
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD213PS (DI), Z0, Z4
	VFMADD213PS 64(DI), Z0, Z5
	VFMADD213PS 128(DI), Z0, Z6
	VFMADD213PS 192(DI), Z0, Z7
	VMOVUPS     Z4, (DI)
	VMOVUPS     Z5, 64(DI)
	VMOVUPS     Z6, 128(DI)
	VMOVUPS     Z7, 192(DI)
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         m512loop

m512v16:
	CMPQ        CX, $16
	JL          m512t1
	VMOVUPS     (SI), Z4
	VFMADD213PS (DI), Z0, Z4
	VMOVUPS     Z4, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         m512v16

m512t1:
	TESTQ       CX, CX
	JZ          m512done
	VMOVSS      (SI), X4
	VFMADD213SS (DI), X0, X4
	VMOVSS      X4, (DI)
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         m512t1

m512done:
	VZEROUPPER
	RET

// func madF32AVX2(n int, y, x *float32, v float32)
TEXT ·madF32AVX2(SB), NOSPLIT, $0-28
	MOVQ         n+0(FP), CX
	MOVQ         y+8(FP), DI
	MOVQ         x+16(FP), SI
	VBROADCASTSS v+24(FP), Y0

m256loop:
	CMPQ        CX, $32
	JL          m256v8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD213PS (DI), Y0, Y4
	VFMADD213PS 32(DI), Y0, Y5
	VFMADD213PS 64(DI), Y0, Y6
	VFMADD213PS 96(DI), Y0, Y7
	VMOVUPS     Y4, (DI)
	VMOVUPS     Y5, 32(DI)
	VMOVUPS     Y6, 64(DI)
	VMOVUPS     Y7, 96(DI)
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         m256loop

m256v8:
	CMPQ        CX, $8
	JL          m256t1
	VMOVUPS     (SI), Y4
	VFMADD213PS (DI), Y0, Y4
	VMOVUPS     Y4, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         m256v8

m256t1:
	TESTQ       CX, CX
	JZ          m256done
	VMOVSS      (SI), X4
	VFMADD213SS (DI), X0, X4
	VMOVSS      X4, (DI)
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         m256t1

m256done:
	VZEROUPPER
	RET

// func scaleF32AVX512(n int, y *float32, v float32)
TEXT ·scaleF32AVX512(SB), NOSPLIT, $0-20
	MOVQ         n+0(FP), CX
	MOVQ         y+8(FP), DI
	VBROADCASTSS v+16(FP), Z0

s512loop:
	CMPQ    CX, $64
	JL      s512v16
	VMULPS  (DI), Z0, Z4
	VMULPS  64(DI), Z0, Z5
	VMULPS  128(DI), Z0, Z6
	VMULPS  192(DI), Z0, Z7
	VMOVUPS Z4, (DI)
	VMOVUPS Z5, 64(DI)
	VMOVUPS Z6, 128(DI)
	VMOVUPS Z7, 192(DI)
	ADDQ    $256, DI
	SUBQ    $64, CX
	JMP     s512loop

s512v16:
	CMPQ    CX, $16
	JL      s512t1
	VMULPS  (DI), Z0, Z4
	VMOVUPS Z4, (DI)
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     s512v16

s512t1:
	TESTQ  CX, CX
	JZ     s512done
	VMULSS (DI), X0, X4
	VMOVSS X4, (DI)
	ADDQ   $4, DI
	DECQ   CX
	JMP    s512t1

s512done:
	VZEROUPPER
	RET

// func scaleF32AVX2(n int, y *float32, v float32)
TEXT ·scaleF32AVX2(SB), NOSPLIT, $0-20
	MOVQ         n+0(FP), CX
	MOVQ         y+8(FP), DI
	VBROADCASTSS v+16(FP), Y0

s256loop:
	CMPQ    CX, $32
	JL      s256v8
	VMULPS  (DI), Y0, Y4
	VMULPS  32(DI), Y0, Y5
	VMULPS  64(DI), Y0, Y6
	VMULPS  96(DI), Y0, Y7
	VMOVUPS Y4, (DI)
	VMOVUPS Y5, 32(DI)
	VMOVUPS Y6, 64(DI)
	VMOVUPS Y7, 96(DI)
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     s256loop

s256v8:
	CMPQ    CX, $8
	JL      s256t1
	VMULPS  (DI), Y0, Y4
	VMOVUPS Y4, (DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     s256v8

s256t1:
	TESTQ  CX, CX
	JZ     s256done
	VMULSS (DI), X0, X4
	VMOVSS X4, (DI)
	ADDQ   $4, DI
	DECQ   CX
	JMP    s256t1

s256done:
	VZEROUPPER
	RET

// func gatedDeltaAVX512(s int, state, q, k, v, out *float32, decay, beta, scale float32)
// s a positive multiple of 64. Per row j of the state: row *= decay,
// d = (v[j] − row·k)·beta, row = fma(k, d, row), out[j] = (row·q)·scale.
TEXT ·gatedDeltaAVX512(SB), NOSPLIT, $0-60
	MOVQ         s+0(FP), BX
	MOVQ         state+8(FP), DI
	MOVQ         q+16(FP), R9
	MOVQ         k+24(FP), R10
	MOVQ         v+32(FP), R11
	MOVQ         out+40(FP), R12
	VBROADCASTSS decay+48(FP), Z12
	VMOVSS       beta+52(FP), X14
	VMOVSS       scale+56(FP), X13
	MOVQ         BX, R8
	SHLQ         $2, R8               // row bytes
	MOVQ         BX, R13              // rows left

gd512row:
	// Scale the row, and its product with k.
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ   DI, SI
	MOVQ   R10, DX
	MOVQ   BX, CX

gd512p1:
	VMULPS      (SI), Z12, Z4
	VMULPS      64(SI), Z12, Z5
	VMULPS      128(SI), Z12, Z6
	VMULPS      192(SI), Z12, Z7
	VMOVUPS     Z4, (SI)
	VMOVUPS     Z5, 64(SI)
	VMOVUPS     Z6, 128(SI)
	VMOVUPS     Z7, 192(SI)
	VFMADD231PS (DX), Z4, Z0
	VFMADD231PS 64(DX), Z5, Z1
	VFMADD231PS 128(DX), Z6, Z2
	VFMADD231PS 192(DX), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DX
	SUBQ        $64, CX
	JNZ         gd512p1
	REDUCE512

	// d = (v[j] − sum)·beta
	VMOVSS       (R11), X1
	VSUBSS       X0, X1, X1
	VMULSS       X14, X1, X1
	VBROADCASTSS X1, Z8

	// row = fma(k, d, row), and its product with q.
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ   DI, SI
	MOVQ   R10, DX
	MOVQ   R9, AX
	MOVQ   BX, CX

gd512p2:
	VMOVUPS     (DX), Z4
	VMOVUPS     64(DX), Z5
	VMOVUPS     128(DX), Z6
	VMOVUPS     192(DX), Z7
	VFMADD213PS (SI), Z8, Z4
	VFMADD213PS 64(SI), Z8, Z5
	VFMADD213PS 128(SI), Z8, Z6
	VFMADD213PS 192(SI), Z8, Z7
	VMOVUPS     Z4, (SI)
	VMOVUPS     Z5, 64(SI)
	VMOVUPS     Z6, 128(SI)
	VMOVUPS     Z7, 192(SI)
	VFMADD231PS (AX), Z4, Z0
	VFMADD231PS 64(AX), Z5, Z1
	VFMADD231PS 128(AX), Z6, Z2
	VFMADD231PS 192(AX), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DX
	ADDQ        $256, AX
	SUBQ        $64, CX
	JNZ         gd512p2
	REDUCE512
	VMULSS      X13, X0, X0
	VMOVSS      X0, (R12)

	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ R8, DI
	DECQ R13
	JNZ  gd512row
	VZEROUPPER
	RET

// func gatedDeltaAVX2(s int, state, q, k, v, out *float32, decay, beta, scale float32)
// s a positive multiple of 64: gatedDeltaAVX512 with each Z register as
// two Y halves (Y0..Y7, as dotF32AVX2).
TEXT ·gatedDeltaAVX2(SB), NOSPLIT, $0-60
	MOVQ         s+0(FP), BX
	MOVQ         state+8(FP), DI
	MOVQ         q+16(FP), R9
	MOVQ         k+24(FP), R10
	MOVQ         v+32(FP), R11
	MOVQ         out+40(FP), R12
	VBROADCASTSS decay+48(FP), Y12
	VMOVSS       beta+52(FP), X14
	VMOVSS       scale+56(FP), X15
	MOVQ         BX, R8
	SHLQ         $2, R8
	MOVQ         BX, R13

gdz2row:
	ZEROY8
	MOVQ DI, SI
	MOVQ R10, DX
	MOVQ BX, CX

gdz2p1:
	VMULPS      0(SI), Y12, Y8
	VMOVUPS     Y8, 0(SI)
	VFMADD231PS 0(DX), Y8, Y0
	VMULPS      32(SI), Y12, Y9
	VMOVUPS     Y9, 32(SI)
	VFMADD231PS 32(DX), Y9, Y1
	VMULPS      64(SI), Y12, Y10
	VMOVUPS     Y10, 64(SI)
	VFMADD231PS 64(DX), Y10, Y2
	VMULPS      96(SI), Y12, Y11
	VMOVUPS     Y11, 96(SI)
	VFMADD231PS 96(DX), Y11, Y3
	VMULPS      128(SI), Y12, Y8
	VMOVUPS     Y8, 128(SI)
	VFMADD231PS 128(DX), Y8, Y4
	VMULPS      160(SI), Y12, Y9
	VMOVUPS     Y9, 160(SI)
	VFMADD231PS 160(DX), Y9, Y5
	VMULPS      192(SI), Y12, Y10
	VMOVUPS     Y10, 192(SI)
	VFMADD231PS 192(DX), Y10, Y6
	VMULPS      224(SI), Y12, Y11
	VMOVUPS     Y11, 224(SI)
	VFMADD231PS 224(DX), Y11, Y7
	ADDQ        $256, SI
	ADDQ        $256, DX
	SUBQ        $64, CX
	JNZ         gdz2p1
	REDUCE512Y

	VMOVSS       (R11), X8
	VSUBSS       X0, X8, X8
	VMULSS       X14, X8, X8
	VBROADCASTSS X8, Y13

	ZEROY8
	MOVQ DI, SI
	MOVQ R10, DX
	MOVQ R9, AX
	MOVQ BX, CX

gdz2p2:
	VMOVUPS     0(DX), Y8
	VFMADD213PS 0(SI), Y13, Y8
	VMOVUPS     Y8, 0(SI)
	VFMADD231PS 0(AX), Y8, Y0
	VMOVUPS     32(DX), Y9
	VFMADD213PS 32(SI), Y13, Y9
	VMOVUPS     Y9, 32(SI)
	VFMADD231PS 32(AX), Y9, Y1
	VMOVUPS     64(DX), Y10
	VFMADD213PS 64(SI), Y13, Y10
	VMOVUPS     Y10, 64(SI)
	VFMADD231PS 64(AX), Y10, Y2
	VMOVUPS     96(DX), Y11
	VFMADD213PS 96(SI), Y13, Y11
	VMOVUPS     Y11, 96(SI)
	VFMADD231PS 96(AX), Y11, Y3
	VMOVUPS     128(DX), Y8
	VFMADD213PS 128(SI), Y13, Y8
	VMOVUPS     Y8, 128(SI)
	VFMADD231PS 128(AX), Y8, Y4
	VMOVUPS     160(DX), Y9
	VFMADD213PS 160(SI), Y13, Y9
	VMOVUPS     Y9, 160(SI)
	VFMADD231PS 160(AX), Y9, Y5
	VMOVUPS     192(DX), Y10
	VFMADD213PS 192(SI), Y13, Y10
	VMOVUPS     Y10, 192(SI)
	VFMADD231PS 192(AX), Y10, Y6
	VMOVUPS     224(DX), Y11
	VFMADD213PS 224(SI), Y13, Y11
	VMOVUPS     Y11, 224(SI)
	VFMADD231PS 224(AX), Y11, Y7
	ADDQ        $256, SI
	ADDQ        $256, DX
	ADDQ        $256, AX
	SUBQ        $64, CX
	JNZ         gdz2p2
	REDUCE512Y
	VMULSS      X15, X0, X0
	VMOVSS      X0, (R12)

	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ R8, DI
	DECQ R13
	JNZ  gdz2row
	VZEROUPPER
	RET

// func ssmScanAVX512(p, n int, state, x, b, c, y *float32, dA, dt float32)
// p ≥ 1 channels of n ≥ 1 states: per channel xdt = x[i]·dt, each state
// v = fma(s, dA, b·xdt), y[i] = Σ v·c (the vector part REDUCE512'd, then
// the leftovers one fma at a time).
TEXT ·ssmScanAVX512(SB), NOSPLIT, $0-64
	MOVQ         p+0(FP), R13
	MOVQ         n+8(FP), BX
	MOVQ         state+16(FP), DI
	MOVQ         x+24(FP), R11
	MOVQ         b+32(FP), R9
	MOVQ         c+40(FP), R10
	MOVQ         y+48(FP), R12
	VBROADCASTSS dA+56(FP), Z12
	VMOVSS       dt+60(FP), X14

ss512chan:
	VMOVSS       (R11), X1
	VMULSS       X14, X1, X13  // xdt
	VBROADCASTSS X13, Z8
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	MOVQ         R9, SI
	MOVQ         R10, DX
	MOVQ         BX, CX

ss512loop:
	CMPQ        CX, $64
	JL          ss512reduce
	VMULPS      (SI), Z8, Z4
	VMULPS      64(SI), Z8, Z5
	VMULPS      128(SI), Z8, Z6
	VMULPS      192(SI), Z8, Z7
	VFMADD231PS (DI), Z12, Z4
	VFMADD231PS 64(DI), Z12, Z5
	VFMADD231PS 128(DI), Z12, Z6
	VFMADD231PS 192(DI), Z12, Z7
	VMOVUPS     Z4, (DI)
	VMOVUPS     Z5, 64(DI)
	VMOVUPS     Z6, 128(DI)
	VMOVUPS     Z7, 192(DI)
	VFMADD231PS (DX), Z4, Z0
	VFMADD231PS 64(DX), Z5, Z1
	VFMADD231PS 128(DX), Z6, Z2
	VFMADD231PS 192(DX), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DX
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         ss512loop

ss512reduce:
	REDUCE512

ss512tail:
	TESTQ       CX, CX
	JZ          ss512next
	VMULSS      (SI), X13, X4
	VFMADD231SS (DI), X12, X4
	VMOVSS      X4, (DI)
	VFMADD231SS (DX), X4, X0
	ADDQ        $4, SI
	ADDQ        $4, DX
	ADDQ        $4, DI
	DECQ        CX
	JMP         ss512tail

ss512next:
	VMOVSS X0, (R12)
	ADDQ   $4, R11
	ADDQ   $4, R12
	DECQ   R13
	JNZ    ss512chan
	VZEROUPPER
	RET

// func ssmScanAVX2(p, n int, state, x, b, c, y *float32, dA, dt float32)
// ssmScanAVX512 with each Z register as two Y halves (as dotF32AVX2).
TEXT ·ssmScanAVX2(SB), NOSPLIT, $0-64
	MOVQ         p+0(FP), R13
	MOVQ         n+8(FP), BX
	MOVQ         state+16(FP), DI
	MOVQ         x+24(FP), R11
	MOVQ         b+32(FP), R9
	MOVQ         c+40(FP), R10
	MOVQ         y+48(FP), R12
	VBROADCASTSS dA+56(FP), Y12
	VMOVSS       dt+60(FP), X14

ssz2chan:
	VMOVSS       (R11), X8
	VMULSS       X14, X8, X13  // xdt
	VBROADCASTSS X13, Y13
	ZEROY8
	MOVQ         R9, SI
	MOVQ         R10, DX
	MOVQ         BX, CX

ssz2loop:
	CMPQ        CX, $64
	JL          ssz2reduce
	VMULPS      0(SI), Y13, Y8
	VFMADD231PS 0(DI), Y12, Y8
	VMOVUPS     Y8, 0(DI)
	VFMADD231PS 0(DX), Y8, Y0
	VMULPS      32(SI), Y13, Y9
	VFMADD231PS 32(DI), Y12, Y9
	VMOVUPS     Y9, 32(DI)
	VFMADD231PS 32(DX), Y9, Y1
	VMULPS      64(SI), Y13, Y10
	VFMADD231PS 64(DI), Y12, Y10
	VMOVUPS     Y10, 64(DI)
	VFMADD231PS 64(DX), Y10, Y2
	VMULPS      96(SI), Y13, Y11
	VFMADD231PS 96(DI), Y12, Y11
	VMOVUPS     Y11, 96(DI)
	VFMADD231PS 96(DX), Y11, Y3
	VMULPS      128(SI), Y13, Y8
	VFMADD231PS 128(DI), Y12, Y8
	VMOVUPS     Y8, 128(DI)
	VFMADD231PS 128(DX), Y8, Y4
	VMULPS      160(SI), Y13, Y9
	VFMADD231PS 160(DI), Y12, Y9
	VMOVUPS     Y9, 160(DI)
	VFMADD231PS 160(DX), Y9, Y5
	VMULPS      192(SI), Y13, Y10
	VFMADD231PS 192(DI), Y12, Y10
	VMOVUPS     Y10, 192(DI)
	VFMADD231PS 192(DX), Y10, Y6
	VMULPS      224(SI), Y13, Y11
	VFMADD231PS 224(DI), Y12, Y11
	VMOVUPS     Y11, 224(DI)
	VFMADD231PS 224(DX), Y11, Y7
	ADDQ        $256, SI
	ADDQ        $256, DX
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         ssz2loop

ssz2reduce:
	REDUCE512Y

ssz2tail:
	TESTQ       CX, CX
	JZ          ssz2next
	VMULSS      (SI), X13, X8
	VFMADD231SS (DI), X12, X8
	VMOVSS      X8, (DI)
	VFMADD231SS (DX), X8, X0
	ADDQ        $4, SI
	ADDQ        $4, DX
	ADDQ        $4, DI
	DECQ        CX
	JMP         ssz2tail

ssz2next:
	VMOVSS X0, (R12)
	ADDQ   $4, R11
	ADDQ   $4, R12
	DECQ   R13
	JNZ    ssz2chan
	VZEROUPPER
	RET
