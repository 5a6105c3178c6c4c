//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Four-token F16 kernel: each 32 weights are converted once and fed to
// four tokens' accumulators. AVX-512VL lends the sixteen extra YMM
// registers (Y16-Y31) that hold 4 tokens × 4 accumulators; the arithmetic
// per token is dotF16F32AVX2's, so the results are bit-identical to it.

#define F16X4ACC(off, w, a0, a1, a2, a3) \
	VFMADD231PS off(DI), w, a0 \
	VFMADD231PS off(R8), w, a1 \
	VFMADD231PS off(R9), w, a2 \
	VFMADD231PS off(R10), w, a3

// F16X4DONE reduces one token's accumulators like dotF16F32AVX2 and stores
// the sum at off(R11).
#define F16X4DONE(a0, a1, a2, a3, off) \
	VADDPS  a2, a0, a0 \
	VADDPS  a3, a1, a1 \
	VADDPS  a1, a0, a0 \
	VMOVAPS a0, Y0 \
	HSUM \
	VMOVSS  X0, off(R11)

// func dotF16x4AVX512(n int, x *byte, y *float32, ystride int, out *float32)
// n a multiple of 8; ystride in bytes.
TEXT ·dotF16x4AVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ ystride+24(FP), AX
	MOVQ out+32(FP), R11
	LEAQ (DI)(AX*1), R8
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19
	VPXORD Y20, Y20, Y20
	VPXORD Y21, Y21, Y21
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23
	VPXORD Y24, Y24, Y24
	VPXORD Y25, Y25, Y25
	VPXORD Y26, Y26, Y26
	VPXORD Y27, Y27, Y27
	VPXORD Y28, Y28, Y28
	VPXORD Y29, Y29, Y29
	VPXORD Y30, Y30, Y30
	VPXORD Y31, Y31, Y31

x4loop32:
	CMPQ CX, $32
	JL   x4loop8
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	// token t, accumulator c in Y(16+4t+c)
	F16X4ACC(0, Y0, Y16, Y20, Y24, Y28)
	F16X4ACC(32, Y1, Y17, Y21, Y25, Y29)
	F16X4ACC(64, Y2, Y18, Y22, Y26, Y30)
	F16X4ACC(96, Y3, Y19, Y23, Y27, Y31)
	ADDQ $64, SI
	ADDQ $128, DI
	ADDQ $128, R8
	ADDQ $128, R9
	ADDQ $128, R10
	SUBQ $32, CX
	JMP  x4loop32

x4loop8:
	CMPQ CX, $8
	JL   x4done
	VCVTPH2PS (SI), Y0
	F16X4ACC(0, Y0, Y16, Y20, Y24, Y28)
	ADDQ $16, SI
	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	SUBQ $8, CX
	JMP  x4loop8

x4done:
	F16X4DONE(Y16, Y17, Y18, Y19, 0)
	F16X4DONE(Y20, Y21, Y22, Y23, 4)
	F16X4DONE(Y24, Y25, Y26, Y27, 8)
	F16X4DONE(Y28, Y29, Y30, Y31, 12)
	VZEROUPPER
	RET
