//go:build amd64 && !purego

#include "textflag.h"

// ggml_v_expf (AVX-512) on 16 lanes; see expf.go for the reference.
// Constants, one float32 each, broadcast by EXPCONST.
DATA expc<>+0(SB)/4, $0x4b400000  // 0x1.8p23 shifter
DATA expc<>+4(SB)/4, $0x3fb8aa3b  // log2(e)
DATA expc<>+8(SB)/4, $0x3f317200  // ln2 high
DATA expc<>+12(SB)/4, $0x35bfbe8e // ln2 low
DATA expc<>+16(SB)/4, $0x3c072010 // c5
DATA expc<>+20(SB)/4, $0x3d2b9f17 // c4
DATA expc<>+24(SB)/4, $0x3e2aaf33 // c3
DATA expc<>+28(SB)/4, $0x3efffedb // c2
DATA expc<>+32(SB)/4, $0x3f7ffff6 // c1
DATA expc<>+36(SB)/4, $0x3f800000 // 1
DATA expc<>+40(SB)/4, $0x43400000 // 192
DATA expc<>+44(SB)/4, $0x7fffffff // |x| mask
DATA expc<>+48(SB)/4, $0x7f800000 // +Inf
GLOBL expc<>(SB), RODATA|NOPTR, $52

// EXPCONST loads the constants: Z16 shifter, Z17 log2e, Z18/Z19 ln2
// hi/lo, Z20..Z24 c5..c1, Z25 1, Z27 192, Z28 abs mask, Z29 +Inf; Z26 = 0.
#define EXPCONST \
	VBROADCASTSS expc<>+0(SB), Z16  \
	VBROADCASTSS expc<>+4(SB), Z17  \
	VBROADCASTSS expc<>+8(SB), Z18  \
	VBROADCASTSS expc<>+12(SB), Z19 \
	VBROADCASTSS expc<>+16(SB), Z20 \
	VBROADCASTSS expc<>+20(SB), Z21 \
	VBROADCASTSS expc<>+24(SB), Z22 \
	VBROADCASTSS expc<>+28(SB), Z23 \
	VBROADCASTSS expc<>+32(SB), Z24 \
	VBROADCASTSS expc<>+36(SB), Z25 \
	VBROADCASTSS expc<>+40(SB), Z27 \
	VBROADCASTSS expc<>+44(SB), Z28 \
	VBROADCASTSS expc<>+48(SB), Z29 \
	VPXORD       Z26, Z26, Z26

// EXPF: Z0 = e^Z0, ggml's operation order (fnmadd(a,b,c) = c − a·b with
// one rounding; scalef(j, n) = j·2ⁿ). Lanes with |n| > 192 become 0
// (n ≤ 0) or +Inf, as ggml's blend does, without a branch. Clobbers
// Z1..Z9, K1, K2.
#define EXPF \
	VMOVAPS      Z16, Z1          \ // z = x·log2e + shifter
	VFMADD231PS  Z17, Z0, Z1      \
	VSUBPS       Z16, Z1, Z2      \ // n = z − shifter
	VMOVAPS      Z0, Z3           \
	VFNMADD231PS Z18, Z2, Z3      \ // b = x − n·ln2hi
	VFNMADD231PS Z19, Z2, Z3      \ // b = b − n·ln2lo
	VPANDD       Z28, Z2, Z4      \
	VCMPPS       $0x1e, Z27, Z4, K1 \ // |n| > 192 (ordered)
	VMULPS       Z3, Z3, Z5       \ // u = b²
	VMOVAPS      Z21, Z6          \
	VFMADD231PS  Z20, Z3, Z6      \ // c5·b + c4
	VMOVAPS      Z23, Z7          \
	VFMADD231PS  Z22, Z3, Z7      \ // c3·b + c2
	VFMADD231PS  Z5, Z6, Z7       \ // (c5·b + c4)·u + (c3·b + c2)
	VMOVAPS      Z25, Z8          \
	VFMADD231PS  Z24, Z3, Z8      \ // c1·b + 1
	VFMADD231PS  Z5, Z7, Z8       \ // j
	VSCALEFPS    Z2, Z8, Z0       \ // j·2ⁿ
	VCMPPS       $2, Z26, Z2, K2  \ // n ≤ 0 (ordered)
	VMOVAPS      Z29, Z9          \
	VMOVAPS      Z26, K2, Z9      \
	VMOVAPS      Z9, K1, Z0

// func siluMulAVX512(n int, gate, up *float32)
// gate[i] = gate[i]/(1 + e^−gate[i]) · up[i] for n a multiple of 16.
TEXT ·siluMulAVX512(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ gate+8(FP), DI
	MOVQ up+16(FP), SI
	EXPCONST

siluloop:
	CMPQ    CX, $16
	JL      siludone
	VMOVUPS (DI), Z10
	VSUBPS  Z10, Z26, Z0 // 0 − x
	EXPF
	VADDPS  Z25, Z0, Z0  // 1 + e^−x
	VDIVPS  Z0, Z10, Z0  // x / (1 + e^−x)
	VMULPS  (SI), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    $64, SI
	SUBQ    $16, CX
	JMP     siluloop

siludone:
	VZEROUPPER
	RET

// func expSumAVX512(n int, x, y *float32, max float32) float64
// y[i] = e^(x[i] − max) for n a multiple of 16; returns the float64 sum of
// each vector's float32 sum (_mm512_reduce_add_ps's halving tree).
TEXT ·expSumAVX512(SB), NOSPLIT, $0-40
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	VBROADCASTSS max+24(FP), Z11
	EXPCONST
	VXORPD       X15, X15, X15

exploop:
	CMPQ          CX, $16
	JL            expdone
	VMOVUPS       (SI), Z0
	VSUBPS        Z11, Z0, Z0 // x − max
	EXPF
	VMOVUPS       Z0, (DI)
	VEXTRACTF32X8 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0  // 16 → 8
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0  // 8 → 4
	VMOVHLPS      X0, X0, X1
	VADDPS        X1, X0, X0  // 4 → 2
	VMOVSHDUP     X0, X1
	VADDSS        X1, X0, X0  // 2 → 1
	VCVTSS2SD     X0, X0, X0
	VADDSD        X0, X15, X15
	ADDQ          $64, SI
	ADDQ          $64, DI
	SUBQ          $16, CX
	JMP           exploop

expdone:
	MOVSD X15, ret+32(FP)
	VZEROUPPER
	RET
