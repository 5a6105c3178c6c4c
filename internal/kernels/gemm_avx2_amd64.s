//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The float GEMM's tiles on CPUs with AVX2 but not the AVX-512 tiles
// (gemm_float.go's order: sixteen FMA lanes per output, lane l summing
// elements l, l+16, …, reduced in _mm512_reduce_add_ps's tree). Sixteen
// 8-lane registers cannot hold a 16-lane accumulator for many outputs, so
// a tile runs in two passes over the row: the low halves of the chunks
// (lanes 0-7) for 4 rows × 3 tokens, twelve accumulators, then the high
// halves (lanes 8-15); the halves are added as the tree's first step
// adds them. Both operands are packed halves-major (gemm_avx2_amd64.go):
//
//	weights  [half][chunk][row 0-3][8 float32]   (F16/BF16 widened)
//	panel    [half][chunk][token 0-5][8 float32]
//
// Per 8 elements a pass loads three activation vectors and four weight
// vectors for twelve FMAs.

// TILE43PASS(l): one pass over CX chunks: Y0-Y11 += weights (SI) ×
// activations (DI), accumulator 3r+j for row r, token j; SI and DI end at
// the next half.
#define TILE43PASS(l) \
	MOVQ CX, BX \
	ZEROY8 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
l: \
	VMOVUPS (DI), Y12 \
	VMOVUPS 32(DI), Y13 \
	VMOVUPS 64(DI), Y14 \
	VMOVUPS 0(SI), Y15 \
	VFMADD231PS Y12, Y15, Y0 \
	VFMADD231PS Y13, Y15, Y1 \
	VFMADD231PS Y14, Y15, Y2 \
	VMOVUPS 32(SI), Y15 \
	VFMADD231PS Y12, Y15, Y3 \
	VFMADD231PS Y13, Y15, Y4 \
	VFMADD231PS Y14, Y15, Y5 \
	VMOVUPS 64(SI), Y15 \
	VFMADD231PS Y12, Y15, Y6 \
	VFMADD231PS Y13, Y15, Y7 \
	VFMADD231PS Y14, Y15, Y8 \
	VMOVUPS 96(SI), Y15 \
	VFMADD231PS Y12, Y15, Y9 \
	VFMADD231PS Y13, Y15, Y10 \
	VFMADD231PS Y14, Y15, Y11 \
	ADDQ $128, SI \
	ADDQ $192, DI \
	DECQ BX \
	JNZ  l

// TILE43OUT(y, x, lo, dst): dst = reduce16(lo ‖ y): the low half (lo, on
// the stack) and the high half added, then 4+4, 2+2, 1+1. Clobbers X15.
#define TILE43OUT(y, x, lo, dst) \
	VADDPS       lo(SP), y, y \
	VEXTRACTF128 $1, y, X15 \
	VADDPS       X15, x, x \
	VMOVHLPS     x, x, X15 \
	VADDPS       X15, x, x \
	VMOVSHDUP    x, X15 \
	VADDSS       X15, x, x \
	VMOVSS       x, dst

// PACKHALVESSETUP: the packers' arguments: CX chunks, R8-R11 the four
// rows, DI the tile's low halves and DX its high halves (chunks·128 bytes
// further).
#define PACKHALVESSETUP \
	MOVQ chunks+0(FP), CX \
	MOVQ rows+8(FP), AX \
	MOVQ dst+16(FP), DI \
	MOVQ 0(AX), R8 \
	MOVQ 8(AX), R9 \
	MOVQ 16(AX), R10 \
	MOVQ 24(AX), R11 \
	MOVQ CX, DX \
	SHLQ $7, DX \
	ADDQ DI, DX

// PACKHALVESNEXT(inc): the rows inc bytes on (one chunk of the source
// type), the tile 128 bytes on, one chunk fewer (flags for the JNZ).
#define PACKHALVESNEXT(inc) \
	ADDQ inc, R8 \
	ADDQ inc, R9 \
	ADDQ inc, R10 \
	ADDQ inc, R11 \
	ADDQ $128, DI \
	ADDQ $128, DX \
	DECQ CX

// func gemmTile43AVX2(chunks int, w, b *byte, c *float32, ldc, nt int)
// chunks 16-element chunks (≥ 1); w a packed weight tile, b the first of
// three token slots in a panel (chunks 192 bytes apart); token j < nt's
// four outputs at c + j·ldc bytes.
TEXT ·gemmTile43AVX2(SB), NOSPLIT, $384-48
	MOVQ chunks+0(FP), CX
	MOVQ w+8(FP), SI
	MOVQ b+16(FP), DI
	// The halves' distance in the panel, less the chunks a pass advances.
	MOVQ CX, AX
	IMULQ $192, AX
	MOVQ DI, DX
	ADDQ AX, DX
	TILE43PASS(t43lo)
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y1, 32(SP)
	VMOVUPS Y2, 64(SP)
	VMOVUPS Y3, 96(SP)
	VMOVUPS Y4, 128(SP)
	VMOVUPS Y5, 160(SP)
	VMOVUPS Y6, 192(SP)
	VMOVUPS Y7, 224(SP)
	VMOVUPS Y8, 256(SP)
	VMOVUPS Y9, 288(SP)
	VMOVUPS Y10, 320(SP)
	VMOVUPS Y11, 352(SP)
	MOVQ DX, DI
	TILE43PASS(t43hi)
	MOVQ c+24(FP), R11
	MOVQ ldc+32(FP), R12
	MOVQ nt+40(FP), R13
	TILE43OUT(Y0, X0, 0, 0(R11))
	TILE43OUT(Y3, X3, 96, 4(R11))
	TILE43OUT(Y6, X6, 192, 8(R11))
	TILE43OUT(Y9, X9, 288, 12(R11))
	CMPQ R13, $1
	JLE  t43done
	ADDQ R12, R11
	TILE43OUT(Y1, X1, 32, 0(R11))
	TILE43OUT(Y4, X4, 128, 4(R11))
	TILE43OUT(Y7, X7, 224, 8(R11))
	TILE43OUT(Y10, X10, 320, 12(R11))
	CMPQ R13, $2
	JLE  t43done
	ADDQ R12, R11
	TILE43OUT(Y2, X2, 64, 0(R11))
	TILE43OUT(Y5, X5, 160, 4(R11))
	TILE43OUT(Y8, X8, 256, 8(R11))
	TILE43OUT(Y11, X11, 352, 12(R11))

t43done:
	VZEROUPPER
	RET

// func packHalvesF16AVX2(chunks int, rows *[4]*byte, dst *byte)
// Four rows of chunks 16-element chunks into a halves-major weight tile:
// chunk c of row r, low half at dst + 128c + 32r, high half chunks·128
// bytes further, as float32.
TEXT ·packHalvesF16AVX2(SB), NOSPLIT, $0-24
	PACKHALVESSETUP
packHalvesF16AVX2loop:
	VCVTPH2PS 0(R8), Y0
	VMOVUPS   Y0, 0(DI)
	VCVTPH2PS 16(R8), Y1
	VMOVUPS   Y1, 0(DX)
	VCVTPH2PS 0(R9), Y2
	VMOVUPS   Y2, 32(DI)
	VCVTPH2PS 16(R9), Y3
	VMOVUPS   Y3, 32(DX)
	VCVTPH2PS 0(R10), Y4
	VMOVUPS   Y4, 64(DI)
	VCVTPH2PS 16(R10), Y5
	VMOVUPS   Y5, 64(DX)
	VCVTPH2PS 0(R11), Y6
	VMOVUPS   Y6, 96(DI)
	VCVTPH2PS 16(R11), Y7
	VMOVUPS   Y7, 96(DX)
	PACKHALVESNEXT($32)
	JNZ  packHalvesF16AVX2loop
	VZEROUPPER
	RET

// func packHalvesBF16AVX2(chunks int, rows *[4]*byte, dst *byte)
// Four rows of chunks 16-element chunks into a halves-major weight tile:
// chunk c of row r, low half at dst + 128c + 32r, high half chunks·128
// bytes further, as float32.
TEXT ·packHalvesBF16AVX2(SB), NOSPLIT, $0-24
	PACKHALVESSETUP
packHalvesBF16AVX2loop:
	VPMOVZXWD 0(R8), Y0
	VPSLLD    $16, Y0, Y0
	VMOVUPS   Y0, 0(DI)
	VPMOVZXWD 16(R8), Y1
	VPSLLD    $16, Y1, Y1
	VMOVUPS   Y1, 0(DX)
	VPMOVZXWD 0(R9), Y2
	VPSLLD    $16, Y2, Y2
	VMOVUPS   Y2, 32(DI)
	VPMOVZXWD 16(R9), Y3
	VPSLLD    $16, Y3, Y3
	VMOVUPS   Y3, 32(DX)
	VPMOVZXWD 0(R10), Y4
	VPSLLD    $16, Y4, Y4
	VMOVUPS   Y4, 64(DI)
	VPMOVZXWD 16(R10), Y5
	VPSLLD    $16, Y5, Y5
	VMOVUPS   Y5, 64(DX)
	VPMOVZXWD 0(R11), Y6
	VPSLLD    $16, Y6, Y6
	VMOVUPS   Y6, 96(DI)
	VPMOVZXWD 16(R11), Y7
	VPSLLD    $16, Y7, Y7
	VMOVUPS   Y7, 96(DX)
	PACKHALVESNEXT($32)
	JNZ  packHalvesBF16AVX2loop
	VZEROUPPER
	RET

// func packHalvesF32AVX2(chunks int, rows *[4]*byte, dst *byte)
// Four rows of chunks 16-element chunks into a halves-major weight tile:
// chunk c of row r, low half at dst + 128c + 32r, high half chunks·128
// bytes further, as float32.
TEXT ·packHalvesF32AVX2(SB), NOSPLIT, $0-24
	PACKHALVESSETUP
packHalvesF32AVX2loop:
	VMOVUPS   0(R8), Y0
	VMOVUPS   Y0, 0(DI)
	VMOVUPS   32(R8), Y1
	VMOVUPS   Y1, 0(DX)
	VMOVUPS   0(R9), Y2
	VMOVUPS   Y2, 32(DI)
	VMOVUPS   32(R9), Y3
	VMOVUPS   Y3, 32(DX)
	VMOVUPS   0(R10), Y4
	VMOVUPS   Y4, 64(DI)
	VMOVUPS   32(R10), Y5
	VMOVUPS   Y5, 64(DX)
	VMOVUPS   0(R11), Y6
	VMOVUPS   Y6, 96(DI)
	VMOVUPS   32(R11), Y7
	VMOVUPS   Y7, 96(DX)
	PACKHALVESNEXT($64)
	JNZ  packHalvesF32AVX2loop
	VZEROUPPER
	RET

// func f16HalvesPanelAVX2(chunks int, x *float32, dst *byte)
// One token's activations into its slot of a halves-major panel: chunk c's
// low half at dst + 192c, its high half chunks·192 bytes further, rounded
// to F16 (nearest even) and held as float32.
TEXT ·f16HalvesPanelAVX2(SB), NOSPLIT, $0-24
	MOVQ chunks+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ dst+16(FP), DI
	MOVQ CX, DX
	IMULQ $192, DX
	ADDQ DI, DX
f16HalvesPanelAVX2loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VCVTPS2PH $0, Y0, X0
	VCVTPS2PH $0, Y1, X1
	VCVTPH2PS X0, Y0
	VCVTPH2PS X1, Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (DX)
	ADDQ $64, SI
	ADDQ $192, DI
	ADDQ $192, DX
	DECQ CX
	JNZ  f16HalvesPanelAVX2loop
	VZEROUPPER
	RET

// func f32HalvesPanelAVX2(chunks int, x *float32, dst *byte)
// One token's activations into its slot of a halves-major panel: chunk c's
// low half at dst + 192c, its high half chunks·192 bytes further.
TEXT ·f32HalvesPanelAVX2(SB), NOSPLIT, $0-24
	MOVQ chunks+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ dst+16(FP), DI
	MOVQ CX, DX
	IMULQ $192, DX
	ADDQ DI, DX
f32HalvesPanelAVX2loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, (DX)
	ADDQ $64, SI
	ADDQ $192, DI
	ADDQ $192, DX
	DECQ CX
	JNZ  f32HalvesPanelAVX2loop
	VZEROUPPER
	RET
