//go:build amd64 && !purego

#include "textflag.h"

// The float GEMM's order (gemm_float.go) on CPUs with AVX2 but without the
// AVX-512 tiles: one weight row against four tokens' activation rows
// (float32, ldx bytes apart). Each output keeps sixteen FMA lanes, as
// two 8-lane halves (lane l sums elements l, l+16, …), reduced in
// _mm512_reduce_add_ps's tree: halves added, then 4+4, 2+2, 1+1.

// GRSETUP: SI weights, DI/R8/R9/R10 the four activation rows, R11 out,
// CX chunks of 16; Y0-Y7 = 0 (token t: Y(2t) lanes 0-7, Y(2t+1) 8-15).
#define GRSETUP \
	MOVQ chunks+0(FP), CX \
	MOVQ w+8(FP), SI \
	MOVQ x+16(FP), DI \
	MOVQ ldx+24(FP), AX \
	MOVQ out+32(FP), R11 \
	LEAQ (DI)(AX*1), R8 \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (R9)(AX*1), R10 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7

// GRFMA: the four tokens' chunks times the weights in Y8 (0-7), Y9 (8-15).
#define GRFMA \
	VFMADD231PS (DI), Y8, Y0 \
	VFMADD231PS 32(DI), Y9, Y1 \
	VFMADD231PS (R8), Y8, Y2 \
	VFMADD231PS 32(R8), Y9, Y3 \
	VFMADD231PS (R9), Y8, Y4 \
	VFMADD231PS 32(R9), Y9, Y5 \
	VFMADD231PS (R10), Y8, Y6 \
	VFMADD231PS 32(R10), Y9, Y7 \
	ADDQ $64, DI \
	ADDQ $64, R8 \
	ADDQ $64, R9 \
	ADDQ $64, R10

// GRREDUCE(lo, hi, xlo, xhi, off): out[off] = reduce16(lo ‖ hi).
#define GRREDUCE(lo, hi, xlo, xhi, off) \
	VADDPS       hi, lo, lo \
	VEXTRACTF128 $1, lo, xhi \
	VADDPS       xhi, xlo, xlo \
	VMOVHLPS     xlo, xlo, xhi \
	VADDPS       xhi, xlo, xlo \
	VMOVSHDUP    xlo, xhi \
	VADDSS       xhi, xlo, xlo \
	VMOVSS       xlo, off(R11)

#define GRDONE \
	GRREDUCE(Y0, Y1, X0, X1, 0) \
	GRREDUCE(Y2, Y3, X2, X3, 4) \
	GRREDUCE(Y4, Y5, X4, X5, 8) \
	GRREDUCE(Y6, Y7, X6, X7, 12) \
	VZEROUPPER \
	RET

// func gemmRowF16x4AVX2(chunks int, w *byte, x *byte, ldx int, out *float32)
TEXT ·gemmRowF16x4AVX2(SB), NOSPLIT, $0-40
	GRSETUP
grf16loop:
	VCVTPH2PS (SI), Y8
	VCVTPH2PS 16(SI), Y9
	GRFMA
	ADDQ $32, SI
	DECQ CX
	JNZ  grf16loop
	GRDONE

// func gemmRowBF16x4AVX2(chunks int, w *byte, x *byte, ldx int, out *float32)
TEXT ·gemmRowBF16x4AVX2(SB), NOSPLIT, $0-40
	GRSETUP
grbf16loop:
	VPMOVZXWD (SI), Y8
	VPSLLD    $16, Y8, Y8
	VPMOVZXWD 16(SI), Y9
	VPSLLD    $16, Y9, Y9
	GRFMA
	ADDQ $32, SI
	DECQ CX
	JNZ  grbf16loop
	GRDONE

// func gemmRowF32x4AVX2(chunks int, w *byte, x *byte, ldx int, out *float32)
TEXT ·gemmRowF32x4AVX2(SB), NOSPLIT, $0-40
	GRSETUP
grf32loop:
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	GRFMA
	ADDQ $64, SI
	DECQ CX
	JNZ  grf32loop
	GRDONE
