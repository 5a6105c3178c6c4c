//go:build amd64 && !purego

#include "textflag.h"

// The float GEMM's packing (see gemm_float.go): a worker copies each 4-row
// weight tile into one stream, per chunk the four rows side by side, and
// the input conversion writes each token's activations into its slot of a
// six-token panel (64 bytes per chunk, F16 32).

// bf16PairPerm: VPERMW indices putting a 32-element BF16 chunk into
// bf16Pairs' layout: word 2l = element l+16, word 2l+1 = element l.
DATA ·bf16PairPerm+0(SB)/8, $0x0001001100000010
DATA ·bf16PairPerm+8(SB)/8, $0x0003001300020012
DATA ·bf16PairPerm+16(SB)/8, $0x0005001500040014
DATA ·bf16PairPerm+24(SB)/8, $0x0007001700060016
DATA ·bf16PairPerm+32(SB)/8, $0x0009001900080018
DATA ·bf16PairPerm+40(SB)/8, $0x000b001b000a001a
DATA ·bf16PairPerm+48(SB)/8, $0x000d001d000c001c
DATA ·bf16PairPerm+56(SB)/8, $0x000f001f000e001e
GLOBL ·bf16PairPerm(SB), RODATA|NOPTR, $64

// LOADROWS loads the four row pointers of rows (a *[4]*byte in AX).
#define LOADROWS \
	MOVQ 0(AX), SI  \
	MOVQ 8(AX), R8  \
	MOVQ 16(AX), R9 \
	MOVQ 24(AX), R10

// WIDENBF16X4 widens 16 BF16 values of each of the four rows (SI, R8, R9,
// R10) to float32, exactly, and stores them at (DI), 64 bytes a row.
#define WIDENBF16X4 \
	VPMOVZXWD (SI), Z0   \
	VPMOVZXWD (R8), Z1   \
	VPMOVZXWD (R9), Z2   \
	VPMOVZXWD (R10), Z3  \
	VPSLLD    $16, Z0, Z0 \
	VPSLLD    $16, Z1, Z1 \
	VPSLLD    $16, Z2, Z2 \
	VPSLLD    $16, Z3, Z3 \
	VMOVDQU32 Z0, (DI)   \
	VMOVDQU32 Z1, 64(DI) \
	VMOVDQU32 Z2, 128(DI) \
	VMOVDQU32 Z3, 192(DI)

// func packF16x4(k int, rows *[4]*byte, dst *byte)
// k a positive multiple of 16: per 16 elements, the rows' 32 bytes in turn.
TEXT ·packF16x4(SB), NOSPLIT, $0-24
	MOVQ k+0(FP), CX
	MOVQ rows+8(FP), AX
	MOVQ dst+16(FP), DI
	LOADROWS
	SHRQ $4, CX

pf16loop:
	VMOVDQU (SI), Y0
	VMOVDQU (R8), Y1
	VMOVDQU (R9), Y2
	VMOVDQU (R10), Y3
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ    $32, SI
	ADDQ    $32, R8
	ADDQ    $32, R9
	ADDQ    $32, R10
	ADDQ    $128, DI
	DECQ    CX
	JNZ     pf16loop
	VZEROUPPER
	RET

// func packF32x4(k int, rows *[4]*byte, dst *byte)
// k a positive multiple of 16: per 16 elements, the rows' 64 bytes in turn.
TEXT ·packF32x4(SB), NOSPLIT, $0-24
	MOVQ k+0(FP), CX
	MOVQ rows+8(FP), AX
	MOVQ dst+16(FP), DI
	LOADROWS
	SHRQ $4, CX

pf32loop:
	VMOVUPS (SI), Z0
	VMOVUPS (R8), Z1
	VMOVUPS (R9), Z2
	VMOVUPS (R10), Z3
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	ADDQ    $64, SI
	ADDQ    $64, R8
	ADDQ    $64, R9
	ADDQ    $64, R10
	ADDQ    $256, DI
	DECQ    CX
	JNZ     pf32loop
	VZEROUPPER
	RET

// func packBF16x4(k int, rows *[4]*byte, dst *byte)
// k a positive multiple of 16: per 32 elements, the rows' chunks in
// bf16Pairs' layout (64 bytes each); a last chunk of 16 elements with zero
// low halves.
TEXT ·packBF16x4(SB), NOSPLIT, $0-24
	MOVQ      k+0(FP), CX
	MOVQ      rows+8(FP), AX
	MOVQ      dst+16(FP), DI
	LOADROWS
	VMOVDQU64 ·bf16PairPerm(SB), Z31
	MOVQ      CX, DX
	SHRQ      $5, DX
	JZ        pbf16half

pbf16loop:
	VPERMW    (SI), Z31, Z0
	VPERMW    (R8), Z31, Z1
	VPERMW    (R9), Z31, Z2
	VPERMW    (R10), Z31, Z3
	VMOVDQU32 Z0, (DI)
	VMOVDQU32 Z1, 64(DI)
	VMOVDQU32 Z2, 128(DI)
	VMOVDQU32 Z3, 192(DI)
	ADDQ      $64, SI
	ADDQ      $64, R8
	ADDQ      $64, R9
	ADDQ      $64, R10
	ADDQ      $256, DI
	DECQ      DX
	JNZ       pbf16loop

pbf16half:
	TESTQ     $16, CX
	JZ        pbf16done
	WIDENBF16X4

pbf16done:
	VZEROUPPER
	RET

// func f32PanelAVX512(n int, x *float32, dst *byte)
// n a positive multiple of 16: chunk c of x at dst + 384c.
TEXT ·f32PanelAVX512(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ dst+16(FP), DI
	SHRQ $4, CX

f32ploop:
	VMOVUPS (SI), Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, SI
	ADDQ    $384, DI
	DECQ    CX
	JNZ     f32ploop
	VZEROUPPER
	RET

// func f16PanelAVX512(n int, x *float32, dst *byte)
// n a positive multiple of 16: chunk c of x rounded to F16 (nearest even,
// as F32ToF16) and widened back to float32 at dst + 384c.
TEXT ·f16PanelAVX512(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ dst+16(FP), DI
	SHRQ $4, CX

f16ploop:
	VMOVUPS   (SI), Z0
	VCVTPS2PH $0, Z0, Y1
	VCVTPH2PS Y1, Z1
	VMOVUPS   Z1, (DI)
	ADDQ      $64, SI
	ADDQ      $384, DI
	DECQ      CX
	JNZ       f16ploop
	VZEROUPPER
	RET

// BF16ROUND rounds the float32 bits in z to BF16 in the high half, as
// ggml_compute_fp32_to_bf16 does: u + 0x7fff + ((u >> 16) & 1), NaNs
// quieted (u | 0x400000) instead. Z20 = 1, Z21 = 0x7fff, Z22 = 0x7fffffff,
// Z23 = 0x7f800000, Z24 = 0x400000. Clobbers Z25, Z26, K1; the low half of
// the result is garbage.
#define BF16ROUND(z) \
	VPSRLD  $16, z, Z25       \
	VPANDD  Z20, Z25, Z25     \
	VPADDD  Z21, Z25, Z25     \
	VPANDD  Z22, z, Z26       \
	VPCMPUD $6, Z23, Z26, K1  \
	VPADDD  z, Z25, Z25       \
	VPORD   Z24, z, K1, Z25   \
	VMOVDQA32 Z25, z

// BF16CONSTS loads BF16ROUND's constants (Z20-Z24) and the high-half
// mask 0xffff0000 (Z27). Clobbers AX.
#define BF16CONSTS \
	MOVL         $1, AX           \
	VPBROADCASTD AX, Z20          \
	MOVL         $0x7fff, AX      \
	VPBROADCASTD AX, Z21          \
	MOVL         $0x7fffffff, AX  \
	VPBROADCASTD AX, Z22          \
	MOVL         $0x7f800000, AX  \
	VPBROADCASTD AX, Z23          \
	MOVL         $0x400000, AX    \
	VPBROADCASTD AX, Z24          \
	MOVL         $0xffff0000, AX  \
	VPBROADCASTD AX, Z27

// func bf16PanelAVX512(n int, x *float32, dst *byte)
// n a positive multiple of 16: x rounded to BF16 in bf16Pairs' layout,
// chunk c (32 elements; a last one of 16 with zero low halves) at
// dst + 384c.
TEXT ·bf16PanelAVX512(SB), NOSPLIT, $0-24
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         dst+16(FP), DI
	BF16CONSTS
	MOVQ         CX, DX
	SHRQ         $5, DX
	JZ           bf16phalf

bf16ploop:
	VMOVDQU32 (SI), Z0
	VMOVDQU32 64(SI), Z1
	BF16ROUND(Z0)
	BF16ROUND(Z1)
	VPANDD    Z27, Z0, Z0
	VPSRLD    $16, Z1, Z1
	VPORD     Z1, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $128, SI
	ADDQ      $384, DI
	DECQ      DX
	JNZ       bf16ploop

bf16phalf:
	TESTQ     $16, CX
	JZ        bf16pdone
	VMOVDQU32 (SI), Z0
	BF16ROUND(Z0)
	VPANDD    Z27, Z0, Z0
	VMOVDQU32 Z0, (DI)

bf16pdone:
	VZEROUPPER
	RET

// func prefetchRows(rows *[4]*byte, off, n int)
// Asks for bytes [off, off+n) (n a positive multiple of 64) of each of four
// rows in L2 (PREFETCHT1), without waiting: the next weight tile, while
// this one runs.
TEXT ·prefetchRows(SB), NOSPLIT, $0-24
	MOVQ rows+0(FP), AX
	MOVQ off+8(FP), DX
	MOVQ n+16(FP), CX
	LOADROWS
	ADDQ DX, CX

prefloop:
	PREFETCHT1 (SI)(DX*1)
	PREFETCHT1 (R8)(DX*1)
	PREFETCHT1 (R9)(DX*1)
	PREFETCHT1 (R10)(DX*1)
	ADDQ       $64, DX
	CMPQ       DX, CX
	JLT        prefloop
	RET

// func roundF16AVX512(n int, x *float32, y *byte)
// The one-token activations of F16 weights: y[i] = float32(F16(x[i]))
// (nearest even), n a positive multiple of 16.
TEXT ·roundF16AVX512(SB), NOSPLIT, $0-24
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	SHRQ $4, CX

rf16loop:
	VMOVUPS   (SI), Z0
	VCVTPS2PH $0, Z0, Y1
	VCVTPH2PS Y1, Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       rf16loop
	VZEROUPPER
	RET

// func roundBF16AVX512(n int, x *float32, y *byte)
// The one-token activations of BF16 weights: y[i] = float32(BF16(x[i]))
// (ggml's rounding), n a positive multiple of 16.
TEXT ·roundBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	BF16CONSTS
	SHRQ         $4, CX

rbf16loop:
	VMOVDQU32 (SI), Z0
	BF16ROUND(Z0)
	VPANDD    Z27, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       rbf16loop
	VZEROUPPER
	RET

// func packF16x4W(k int, rows *[4]*byte, dst *byte)
// k a positive multiple of 16: per 16 elements, the rows' values widened
// to float32 (exact), 64 bytes each in turn: the float32 tiles' layout.
TEXT ·packF16x4W(SB), NOSPLIT, $0-24
	MOVQ k+0(FP), CX
	MOVQ rows+8(FP), AX
	MOVQ dst+16(FP), DI
	LOADROWS
	SHRQ $4, CX

pf16wloop:
	VCVTPH2PS (SI), Z0
	VCVTPH2PS (R8), Z1
	VCVTPH2PS (R9), Z2
	VCVTPH2PS (R10), Z3
	VMOVUPS   Z0, (DI)
	VMOVUPS   Z1, 64(DI)
	VMOVUPS   Z2, 128(DI)
	VMOVUPS   Z3, 192(DI)
	ADDQ      $32, SI
	ADDQ      $32, R8
	ADDQ      $32, R9
	ADDQ      $32, R10
	ADDQ      $256, DI
	DECQ      CX
	JNZ       pf16wloop
	VZEROUPPER
	RET

// func packBF16x4W(k int, rows *[4]*byte, dst *byte)
// As packF16x4W for BF16 rows: each value's bits shifted into the high
// half of a float32 (exact).
TEXT ·packBF16x4W(SB), NOSPLIT, $0-24
	MOVQ k+0(FP), CX
	MOVQ rows+8(FP), AX
	MOVQ dst+16(FP), DI
	LOADROWS
	SHRQ $4, CX

pbf16wloop:
	WIDENBF16X4
	ADDQ      $32, SI
	ADDQ      $32, R8
	ADDQ      $32, R9
	ADDQ      $32, R10
	ADDQ      $256, DI
	DECQ      CX
	JNZ       pbf16wloop
	VZEROUPPER
	RET

// func bf16WPanelAVX512(n int, x *float32, dst *byte)
// n a positive multiple of 16: chunk c of x rounded to BF16 (as
// bf16PanelAVX512 rounds it) and held as float32 at dst + 384c.
TEXT ·bf16WPanelAVX512(SB), NOSPLIT, $0-24
	MOVQ         n+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         dst+16(FP), DI
	BF16CONSTS
	SHRQ         $4, CX

bf16wploop:
	VMOVDQU32 (SI), Z0
	BF16ROUND(Z0)
	VPANDD    Z27, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $64, SI
	ADDQ      $384, DI
	DECQ      CX
	JNZ       bf16wploop
	VZEROUPPER
	RET
