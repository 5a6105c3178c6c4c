//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Q4_0 × Q8_0 in the order of llama.cpp's repacked Q4_0 (repackedOrder):
// per block the exact int32 Σ q·a, then acc = fma(float(Σ), d_w·d_a, acc),
// blocks in order — for CPUs with AVX2 but without the AVX-512 VNNI packed
// kernels. The int8 products go as in ggml's AVX2 vec_dot (VPMADDUBSW on
// |w| and sign-adjusted a, VPMADDWD into eight int32 lanes); the lanes are
// then summed as integers (exact in any order) and only the per-block
// FMA is float. The four-lane kernels keep one output in each lane of X0.

// R4SETUP: Y15 = int16 ones, Y14 = bytes 0x0F, Y13 = bytes 0x08, X0 = 0.
#define R4SETUP \
	VXORPS       Y0, Y0, Y0 \
	VPCMPEQW     Y15, Y15, Y15 \
	VPSRLW       $15, Y15, Y15 \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14 \
	MOVL         $0x08080808, AX \
	VMOVD        AX, X13 \
	VPBROADCASTD X13, Y13

// R4UNPACK: the block at (Rw) unpacked: Y2 = the 32 signed values (low
// nibbles are elements 0..15, high 16..31), Y4 = |Y2|.
#define R4UNPACK(Rw) \
	VMOVDQU     2(Rw), X2 \
	VPSRLW      $4, X2, X3 \
	VINSERTI128 $1, X3, Y2, Y2 \
	VPAND       Y14, Y2, Y2 \
	VPSUBB      Y13, Y2, Y2 \
	VPSIGNB     Y2, Y2, Y4

// R4ISUM: dst = eight int32 lanes summing to Σ Y2·act for the Q8_0
// block whose 32 values are in ya (clobbered).
#define R4ISUM(ya, dst) \
	VPSIGNB    Y2, ya, ya \
	VPMADDUBSW ya, Y4, dst \
	VPMADDWD   Y15, dst, dst

// R4ROWU(Rw, dst): dst = eight int32 lanes summing to Σ (q−8)·a for the
// block at (Rw) and the Q8_0 block in Y5, with Y12 = the lanes of 8·Σ a
// (VPMADDUBSW of the 0x08 bytes): the unsigned nibbles q multiply the
// activations directly and 8·Σ a is subtracted lane by lane, the same
// integers as R4UNPACK + R4ISUM's sign trick with three instructions
// fewer a row (no bias, no VPSIGNBs, no copy of the activations).
#define R4ROWU(Rw, dst) \
	VMOVDQU     2(Rw), X2 \
	VPSRLW      $4, X2, X3 \
	VINSERTI128 $1, X3, Y2, Y2 \
	VPAND       Y14, Y2, Y2 \
	VPMADDUBSW  Y5, Y2, dst \
	VPMADDWD    Y15, dst, dst \
	VPSUBD      Y12, dst, dst

// R4FOLD: X6 = the four blocks' int32 sums of Y6..Y9 (lane i from Y6+i),
// converted to float. Clobbers Y7, Y8.
#define R4FOLD \
	VPHADDD      Y7, Y6, Y6 \
	VPHADDD      Y9, Y8, Y8 \
	VPHADDD      Y8, Y6, Y6 \
	VEXTRACTI128 $1, Y6, X7 \
	VPADDD       X7, X6, X6 \
	VCVTDQ2PS    X6, X6

// R4SCALES(r0, r1, r2, r3, xx): xx = the four blocks' f16 scales at
// (r0)…(r3) as float32.
#define R4SCALES(r0, r1, r2, r3, xx) \
	MOVWLZX   (r0), AX \
	VMOVD     AX, xx \
	MOVWLZX   (r1), AX \
	VPINSRW   $1, AX, xx, xx \
	MOVWLZX   (r2), AX \
	VPINSRW   $2, AX, xx, xx \
	MOVWLZX   (r3), AX \
	VPINSRW   $3, AX, xx, xx \
	VCVTPH2PS xx, xx

// func dotQ4_0RAVX2(nb int, x, y *byte) float32
TEXT ·dotQ4_0RAVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	R4SETUP

q4rloop:
	TESTQ CX, CX
	JZ    q4rdone
	R4UNPACK(SI)
	VMOVDQU 2(DI), Y5
	R4ISUM(Y5, Y6)
	HSUMD(Y6, X6, X7)
	VCVTDQ2PS X6, X6
	MOVWLZX   (SI), AX
	MOVWLZX   (DI), BX
	VMOVD     AX, X1
	VMOVD     BX, X3
	VCVTPH2PS X1, X1
	VCVTPH2PS X3, X3
	VMULSS    X3, X1, X1
	VFMADD231SS X1, X6, X0
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JMP  q4rloop

q4rdone:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ4_0Rx4AVX2(nb int, x, y *byte, ystride int, out *float32)
// One weight row, four activation rows ystride bytes apart: out[0:4].
TEXT ·dotQ4_0Rx4AVX2(SB), NOSPLIT, $0-40
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ ystride+24(FP), AX
	MOVQ out+32(FP), R11
	LEAQ (DI)(AX*1), R8
	LEAQ (R8)(AX*1), R9
	LEAQ (R9)(AX*1), R10
	R4SETUP

q4rx4loop:
	TESTQ CX, CX
	JZ    q4rx4done
	R4UNPACK(SI)
	VMOVDQU 2(DI), Y6
	VMOVDQU 2(R8), Y7
	VMOVDQU 2(R9), Y8
	VMOVDQU 2(R10), Y9
	R4ISUM(Y6, Y6)
	R4ISUM(Y7, Y7)
	R4ISUM(Y8, Y8)
	R4ISUM(Y9, Y9)
	R4FOLD
	R4SCALES(DI, R8, R9, R10, X3)
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, X1
	VMULPS       X3, X1, X1
	VFMADD231PS  X1, X6, X0
	ADDQ $18, SI
	ADDQ $34, DI
	ADDQ $34, R8
	ADDQ $34, R9
	ADDQ $34, R10
	DECQ CX
	JMP  q4rx4loop

q4rx4done:
	VMOVUPS X0, (R11)
	VZEROUPPER
	RET

// func rowsQ4_0RAVX2(nb int, x0, x1, x2, x3, y *byte, out *float32)
// Four weight rows, one activation row: out[0:4].
TEXT ·rowsQ4_0RAVX2(SB), NOSPLIT, $0-56
	ROWS4ARGS
	R4SETUP

q4rr4loop:
	TESTQ CX, CX
	JZ    q4rr4done
	VMOVDQU    2(DI), Y5
	VPMADDUBSW Y5, Y13, Y12
	VPMADDWD   Y15, Y12, Y12
	R4ROWU(SI, Y6)
	R4ROWU(R8, Y7)
	R4ROWU(R9, Y8)
	R4ROWU(R10, Y9)
	R4FOLD
	R4SCALES(SI, R8, R9, R10, X1)
	VPBROADCASTW (DI), X3
	VCVTPH2PS    X3, X3
	VMULPS       X3, X1, X1
	VFMADD231PS  X1, X6, X0
	ADDQ $18, SI
	ADDQ $18, R8
	ADDQ $18, R9
	ADDQ $18, R10
	ADDQ $34, DI
	DECQ CX
	JMP  q4rr4loop

q4rr4done:
	VMOVUPS X0, (R11)
	VZEROUPPER
	RET
