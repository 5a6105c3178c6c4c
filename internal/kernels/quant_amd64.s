//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

DATA q8perm<>+0(SB)/4, $0
DATA q8perm<>+4(SB)/4, $4
DATA q8perm<>+8(SB)/4, $1
DATA q8perm<>+12(SB)/4, $5
DATA q8perm<>+16(SB)/4, $2
DATA q8perm<>+20(SB)/4, $6
DATA q8perm<>+24(SB)/4, $3
DATA q8perm<>+28(SB)/4, $7
GLOBL q8perm<>(SB), RODATA|NOPTR, $32

// func quantQ8_0AVX2(nb int, x *float32, y *byte)
// ggml's AVX2 quantize_row_q8_0: per 32 floats, amax; d = amax/127 stored
// as f16; q = round-half-even(x·(127/amax)) (0 when amax is 0) as int8.
TEXT ·quantQ8_0AVX2(SB), NOSPLIT, $0-24
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	// Y15 = abs mask, X14 = 127.0
	VPCMPEQD Y15, Y15, Y15
	VPSRLD   $1, Y15, Y15
	MOVL     $0x42fe0000, AX
	VMOVD    AX, X14
	VMOVDQU  q8perm<>(SB), Y13

qloop:
	TESTQ CX, CX
	JZ    qdone
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VANDPS  Y15, Y0, Y4
	VANDPS  Y15, Y1, Y5
	VANDPS  Y15, Y2, Y6
	VANDPS  Y15, Y3, Y7
	VMAXPS  Y5, Y4, Y4
	VMAXPS  Y7, Y6, Y6
	VMAXPS  Y6, Y4, Y4
	VEXTRACTF128 $1, Y4, X5
	VMAXPS  X5, X4, X4
	VMOVHLPS X4, X4, X5
	VMAXPS  X5, X4, X4
	VMOVSHDUP X4, X5
	VMAXSS  X5, X4, X4
	// d = amax/127 → f16
	VDIVSS    X14, X4, X5
	VCVTPS2PH $0, X5, X5
	VPEXTRW   $0, X5, AX
	MOVW      AX, (DI)
	// id = amax != 0 ? 127/amax : 0
	VXORPS    X6, X6, X6
	VUCOMISS  X6, X4
	JNE       qnonzero
	VXORPS    Y8, Y8, Y8
	JMP       qscale
qnonzero:
	VDIVSS    X4, X14, X8
	VBROADCASTSS X8, Y8
qscale:
	VMULPS    Y8, Y0, Y0
	VMULPS    Y8, Y1, Y1
	VMULPS    Y8, Y2, Y2
	VMULPS    Y8, Y3, Y3
	VROUNDPS  $0, Y0, Y0
	VROUNDPS  $0, Y1, Y1
	VROUNDPS  $0, Y2, Y2
	VROUNDPS  $0, Y3, Y3
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y13, Y0
	VMOVDQU   Y0, 2(DI)
	ADDQ $128, SI
	ADDQ $34, DI
	DECQ CX
	JMP  qloop

qdone:
	VZEROUPPER
	RET

// Q8KMAX4: X0 lane 0 = the max of X0's four lanes (amax); on to zero
// when it is 0.
#define Q8KMAX4(zero) \
	VPSHUFD $0x4e, X0, X1 \
	VMAXPS  X1, X0, X0 \
	VPSHUFD $0xb1, X0, X1 \
	VMAXPS  X1, X0, X0 \
	VMOVD   X0, AX \
	TESTL   AX, AX \
	JZ      zero

// Q8KSCALE: with AX the lane of the first |x| = amax in the vector at
// R8 bytes into the block (SI), iscale = −127/mx in X3 and d = 1/iscale
// stored at (DI).
#define Q8KSCALE \
	BSFL   AX, AX \
	LEAQ   (R8)(AX*4), R8 \
	VMOVSS (SI)(R8*1), X2 \
	MOVL   $0xc2fe0000, AX \
	VMOVD  AX, X3 \
	VDIVSS X2, X3, X3 \
	MOVL   $0x3f800000, AX \
	VMOVD  AX, X4 \
	VDIVSS X3, X4, X4 \
	VMOVSS X4, (DI)

// func quantQ8KAVX512(nb int, x *float32, y *byte)
// quant's quantizeQ8K (ggml's quantize_row_q8_K_ref) on nb blocks of 256:
// amax = max |x| skipping NaNs (the reference's strict a > amax from 0),
// mx the first x with |x| = amax, iscale = −127/mx, q = min(127,
// nearest_int(iscale·x)) by the same magic-number bits (NaN and infinite
// inputs included), stored as its low byte, bsums the sixteen sums of 16
// of those bytes as int8, d = 1/iscale; a block with amax 0 all zero.
TEXT ·quantQ8KAVX512(SB), NOSPLIT, $0-24
	MOVQ         nb+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	MOVL         $0x7fffffff, AX
	VPBROADCASTD AX, Z31
	MOVL         $0x4b400000, AX // 12582912 = 1.5·2^23
	VPBROADCASTD AX, Z29
	MOVL         $0x007fffff, AX
	VPBROADCASTD AX, Z28
	MOVL         $0x00400000, AX
	VPBROADCASTD AX, Z27
	MOVL         $127, AX
	VPBROADCASTD AX, Z26

q8kloop:
	TESTQ CX, CX
	JZ    q8kdone

	// amax: VMAXPS returns its second source (the running maximum) when
	// either is NaN, so NaNs are skipped as the reference skips them.
	VPXORD Z30, Z30, Z30
	XORQ   R8, R8

q8kmax:
	VANDPS (SI)(R8*1), Z31, Z0
	VMAXPS Z30, Z0, Z30
	ADDQ   $64, R8
	CMPQ   R8, $1024
	JB     q8kmax
	VEXTRACTF64X4 $1, Z30, Y0
	VMAXPS        Y30, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	Q8KMAX4(q8kzero)

	// mx: the first element whose |x| is amax.
	VBROADCASTSS X0, Z1
	XORQ         R8, R8

q8kfind:
	VANDPS (SI)(R8*1), Z31, Z2
	VCMPPS $0, Z1, Z2, K1
	KMOVW  K1, AX
	TESTL  AX, AX
	JNZ    q8kfound
	ADDQ   $64, R8
	CMPQ   R8, $1024
	JB     q8kfind
	JMP    q8kzero // not reached: amax is one of the block's values

q8kfound:
	Q8KSCALE
	VBROADCASTSS X3, Z3

	// Sixteen elements a step: x at SI+64i, their quants at DI+4+16i,
	// their sum (bsum i) at DI+260+2i.
	XORQ R8, R8
	XORQ R9, R9

q8kquant:
	VMULPS        (SI)(R8*4), Z3, Z0
	VADDPS        Z29, Z0, Z0
	VPANDD        Z28, Z0, Z0
	VPSUBD        Z27, Z0, Z0
	VPMINSD       Z26, Z0, Z0
	VPMOVDB       Z0, 4(DI)(R8*1)
	VPSLLD        $24, Z0, Z0
	VPSRAD        $24, Z0, Z0
	VEXTRACTI64X4 $1, Z0, Y1
	VPADDD        Y1, Y0, Y1
	HSUMD(Y1, X1, X2)
	VMOVD         X1, AX
	MOVW          AX, 260(DI)(R9*2)
	ADDQ          $16, R8
	INCQ          R9
	CMPQ          R9, $16
	JB            q8kquant

q8knext:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q8kloop

q8kzero:
	VPXORD    Z0, Z0, Z0
	VMOVDQU32 Z0, (DI)
	VMOVDQU32 Z0, 64(DI)
	VMOVDQU32 Z0, 128(DI)
	VMOVDQU32 Z0, 192(DI)
	VMOVDQU32 Z0, 228(DI)
	JMP       q8knext

q8kdone:
	VZEROUPPER
	RET

// Byte 0 of each dword of a 128-bit lane into bytes 0-3 (q8klo) or 4-7
// (q8khi) of that lane, the rest zero (VPSHUFB controls).
DATA q8klo<>+0(SB)/8, $0x808080800c080400
DATA q8klo<>+8(SB)/8, $0x8080808080808080
DATA q8klo<>+16(SB)/8, $0x808080800c080400
DATA q8klo<>+24(SB)/8, $0x8080808080808080
GLOBL q8klo<>(SB), RODATA|NOPTR, $32
DATA q8khi<>+0(SB)/8, $0x0c08040080808080
DATA q8khi<>+8(SB)/8, $0x8080808080808080
DATA q8khi<>+16(SB)/8, $0x0c08040080808080
DATA q8khi<>+24(SB)/8, $0x8080808080808080
GLOBL q8khi<>(SB), RODATA|NOPTR, $32

// Q8KQ8: Yv = min(127, nearest_int(Y3·x)) for the eight floats at xoff(SI)(R8*4)
// by quantQ8KAVX512's magic-number bits (Y13 1.5·2^23, Y12 0x7fffff,
// Y11 0x400000, Y10 127).
#define Q8KQ8(xoff, Yv) \
	VMULPS  xoff(SI)(R8*4), Y3, Yv \
	VADDPS  Y13, Yv, Yv \
	VPAND   Y12, Yv, Yv \
	VPSUBD  Y11, Yv, Yv \
	VPMINSD Y10, Yv, Yv

// func quantQ8KAVX2(nb int, x *float32, y *byte)
// quantQ8KAVX512 in AVX2, the same bytes: amax skipping NaNs, mx the
// first x with |x| = amax, iscale = −127/mx, q's low byte, bsums as int8
// sums of sixteen, d = 1/iscale; a block with amax 0 all zero.
TEXT ·quantQ8KAVX2(SB), NOSPLIT, $0-24
	MOVQ         nb+0(FP), CX
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	VPCMPEQD     Y15, Y15, Y15
	VPSRLD       $1, Y15, Y15 // abs mask
	MOVL         $0x4b400000, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	MOVL         $0x007fffff, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x00400000, AX
	VMOVD        AX, X11
	VPBROADCASTD X11, Y11
	MOVL         $127, AX
	VMOVD        AX, X10
	VPBROADCASTD X10, Y10
	VMOVDQU      q8klo<>(SB), Y9
	VMOVDQU      q8khi<>(SB), Y8
	VMOVDQU      q8perm<>(SB), Y7

q8k2loop:
	TESTQ CX, CX
	JZ    q8k2done
	// amax (VMAXPS keeps its second source, the running maximum, when
	// either is NaN).
	VXORPS Y14, Y14, Y14
	XORQ   R8, R8

q8k2max:
	VANDPS (SI)(R8*1), Y15, Y0
	VMAXPS Y14, Y0, Y14
	ADDQ   $32, R8
	CMPQ   R8, $1024
	JB     q8k2max
	VEXTRACTF128 $1, Y14, X0
	VMAXPS       X14, X0, X0
	Q8KMAX4(q8k2zero)

	// mx: the first element whose |x| is amax.
	VBROADCASTSS X0, Y1
	XORQ         R8, R8

q8k2find:
	VANDPS    (SI)(R8*1), Y15, Y2
	VCMPPS    $0, Y1, Y2, Y2
	VMOVMSKPS Y2, AX
	TESTL     AX, AX
	JNZ       q8k2found
	ADDQ      $32, R8
	CMPQ      R8, $1024
	JB        q8k2find
	JMP       q8k2zero // not reached: amax is one of the block's values

q8k2found:
	Q8KSCALE
	VBROADCASTSS X3, Y3

	// Sixteen elements a step: x at SI+64i, their quants at DI+4+16i,
	// their sum (bsum i) at DI+260+2i.
	XORQ R8, R8
	XORQ R9, R9

q8k2quant:
	Q8KQ8(0, Y0)
	Q8KQ8(32, Y1)
	VPSHUFB Y9, Y0, Y4
	VPSHUFB Y8, Y1, Y5
	VPOR    Y5, Y4, Y4
	VPERMD  Y4, Y7, Y4
	VMOVDQU X4, 4(DI)(R8*1)
	VPSLLD  $24, Y0, Y0
	VPSRAD  $24, Y0, Y0
	VPSLLD  $24, Y1, Y1
	VPSRAD  $24, Y1, Y1
	VPADDD  Y1, Y0, Y1
	HSUMD(Y1, X1, X2)
	VMOVD   X1, AX
	MOVW    AX, 260(DI)(R9*2)
	ADDQ    $16, R8
	INCQ    R9
	CMPQ    R9, $16
	JB      q8k2quant

q8k2next:
	ADDQ $1024, SI
	ADDQ $292, DI
	DECQ CX
	JMP  q8k2loop

q8k2zero:
	VPXOR   Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	VMOVDQU Y0, 256(DI)
	VMOVDQU Y0, 260(DI)
	JMP     q8k2next

q8k2done:
	VZEROUPPER
	RET
