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

// AVX2 + FMA version of the same ggml_v_expf (AVX-512 variant) on 8 lanes.
// AVX2 has no VSCALEFPS: j·2ⁿ is formed in float64 (j widened exactly,
// 2ⁿ built from n's bits, the product exact) and rounded once to float32,
// which is what scalef computes, subnormal results included.
DATA expc2<>+0(SB)/8, $0x00000000000003ff // float64 exponent bias
GLOBL expc2<>(SB), RODATA|NOPTR, $8

// EXPCONST8: Y-register constants as EXPCONST (Y16.. are not available
// without AVX-512: Y6..Y15 here): Y6 shifter, Y7 log2e, Y8/Y9 ln2 hi/lo,
// Y10 c5, Y11 c4, Y12 c3, Y13 c2, Y14 c1, Y15 1.
#define EXPCONST8 \
	VBROADCASTSS expc<>+0(SB), Y6  \
	VBROADCASTSS expc<>+4(SB), Y7  \
	VBROADCASTSS expc<>+8(SB), Y8  \
	VBROADCASTSS expc<>+12(SB), Y9 \
	VBROADCASTSS expc<>+16(SB), Y10 \
	VBROADCASTSS expc<>+20(SB), Y11 \
	VBROADCASTSS expc<>+24(SB), Y12 \
	VBROADCASTSS expc<>+28(SB), Y13 \
	VBROADCASTSS expc<>+32(SB), Y14 \
	VBROADCASTSS expc<>+36(SB), Y15

// EXPF8: Y0 = e^Y0 (ggml's AVX-512 arithmetic). Clobbers Y1..Y5; reads
// the constants of EXPCONST8.
#define EXPF8 \
	VMOVAPS      Y6, Y1           \ // z = x·log2e + shifter
	VFMADD231PS  Y7, Y0, Y1       \
	VSUBPS       Y6, Y1, Y2       \ // n
	VMOVAPS      Y0, Y3           \
	VFNMADD231PS Y8, Y2, Y3       \ // b = x − n·ln2hi
	VFNMADD231PS Y9, Y2, Y3       \ // b −= n·ln2lo
	VMULPS       Y3, Y3, Y4       \ // u = b²
	VMOVAPS      Y11, Y5          \
	VFMADD231PS  Y10, Y3, Y5      \ // c5·b + c4
	VMOVAPS      Y13, Y1          \
	VFMADD231PS  Y12, Y3, Y1      \ // c3·b + c2
	VFMADD231PS  Y4, Y5, Y1       \ // (c5·b + c4)·u + (c3·b + c2)
	VMOVAPS      Y15, Y5          \
	VFMADD231PS  Y14, Y3, Y5      \ // c1·b + 1
	VFMADD231PS  Y4, Y1, Y5       \ // j
	VCVTPS2DQ    Y2, Y3           \ // n as int32 (exact: n is integral)
	VPBROADCASTQ expc2<>(SB), Y4  \
	VPMOVSXDQ    X3, Y1           \ // low four n as int64
	VPADDQ       Y4, Y1, Y1       \
	VPSLLQ       $52, Y1, Y1      \ // 2ⁿ as float64
	VCVTPS2PD    X5, Y0           \
	VMULPD       Y1, Y0, Y0       \
	VCVTPD2PSY   Y0, X0           \ // low four results, one rounding
	VEXTRACTI128 $1, Y3, X3       \
	VPMOVSXDQ    X3, Y1           \
	VPADDQ       Y4, Y1, Y1       \
	VPSLLQ       $52, Y1, Y1      \
	VEXTRACTF128 $1, Y5, X5       \
	VCVTPS2PD    X5, Y5           \
	VMULPD       Y1, Y5, Y5       \
	VCVTPD2PSY   Y5, X5           \
	VINSERTF128  $1, X5, Y0, Y0   \
	VANDPS       expabs8<>(SB), Y2, Y3 \ // |n| > 192: 0 (n ≤ 0) or +Inf
	VCMPPS       $0x1e, expt192<>(SB), Y3, Y3 \
	VXORPS       Y4, Y4, Y4       \
	VCMPPS       $0x1e, Y4, Y2, Y1 \ // n > 0
	VANDPS       expinf8<>(SB), Y1, Y1 \
	VBLENDVPS    Y3, Y1, Y0, Y0

DATA expabs8<>+0(SB)/8, $0x7fffffff7fffffff
DATA expabs8<>+8(SB)/8, $0x7fffffff7fffffff
DATA expabs8<>+16(SB)/8, $0x7fffffff7fffffff
DATA expabs8<>+24(SB)/8, $0x7fffffff7fffffff
GLOBL expabs8<>(SB), RODATA|NOPTR, $32
DATA expt192<>+0(SB)/8, $0x4340000043400000
DATA expt192<>+8(SB)/8, $0x4340000043400000
DATA expt192<>+16(SB)/8, $0x4340000043400000
DATA expt192<>+24(SB)/8, $0x4340000043400000
GLOBL expt192<>(SB), RODATA|NOPTR, $32
DATA expinf8<>+0(SB)/8, $0x7f8000007f800000
DATA expinf8<>+8(SB)/8, $0x7f8000007f800000
DATA expinf8<>+16(SB)/8, $0x7f8000007f800000
DATA expinf8<>+24(SB)/8, $0x7f8000007f800000
GLOBL expinf8<>(SB), RODATA|NOPTR, $32

// func siluMulAVX2(n int, gate, up *float32)
// As siluMulAVX512 for n a multiple of 16 (ggml's vectors are 16 wide;
// each 8-lane half computes the same lanes).
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ gate+8(FP), DI
	MOVQ up+16(FP), SI
	EXPCONST8

silu2loop:
	CMPQ    CX, $8
	JL      silu2done
	VXORPS  Y0, Y0, Y0
	VSUBPS  (DI), Y0, Y0 // 0 − x
	EXPF8
	VADDPS  Y15, Y0, Y0
	VMOVUPS (DI), Y1
	VDIVPS  Y0, Y1, Y0
	VMULPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     silu2loop

silu2done:
	VZEROUPPER
	RET

// func expSumAVX2(n int, x, y *float32, max float32) float64
// As expSumAVX512 for n a multiple of 16: two 8-lane halves per vector of
// 16, added lane by lane (the first step of the 16-lane tree), then 4+4,
// 2+2, 1+1.
TEXT ·expSumAVX2(SB), NOSPLIT, $8-40
	MOVQ  n+0(FP), CX
	MOVQ  x+8(FP), SI
	MOVQ  y+16(FP), DI
	EXPCONST8
	VXORPD X0, X0, X0
	VMOVSD X0, sum-8(SP)

exp2loop:
	CMPQ         CX, $16
	JL           exp2done
	VBROADCASTSS max+24(FP), Y0
	VMOVUPS      (SI), Y1
	VSUBPS       Y0, Y1, Y0
	EXPF8
	VMOVUPS      Y0, (DI)
	VBROADCASTSS max+24(FP), Y0
	VMOVUPS      32(SI), Y1
	VSUBPS       Y0, Y1, Y0
	EXPF8
	VMOVUPS      Y0, 32(DI)
	VMOVUPS      (DI), Y5
	VADDPS       Y0, Y5, Y0 // 16 → 8
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0 // 8 → 4
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0 // 4 → 2
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0 // 2 → 1
	VCVTSS2SD    X0, X0, X0
	VADDSD       sum-8(SP), X0, X0
	VMOVSD       X0, sum-8(SP)
	ADDQ         $64, SI
	ADDQ         $64, DI
	SUBQ         $16, CX
	JMP          exp2loop

exp2done:
	VMOVSD sum-8(SP), X0
	VMOVSD X0, ret+32(FP)
	VZEROUPPER
	RET
