//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX-512 VNNI (on 256-bit registers) dot products of Q4_0 / Q8_0 weight
// rows with Q8_0 activations whose block scales were converted once per
// matrix product (ys: float32 d_a per block; yc: 8·d_a·Σa per block, for
// Q4_0's offset). Four independent accumulators break the FMA dependency
// chain that bounds a one-accumulator loop at one block per FMA latency.
//
// Q4_0: Σ (q-8)·a = Σ q·a − 8·Σ a, with q in 0..15 unsigned, so one
// VPDPBUSD does the products (no sign juggling); the −8 term comes from yc.

// WSCALE4: Y1 = f16(weight d at off(SI)) broadcast, times act scale at yoff(R8).
#define WSCALE(woff, yoff) \
	VPBROADCASTW woff(SI), X1 \
	VCVTPH2PS    X1, Y1 \
	VBROADCASTSS yoff(R8), Y2 \
	VMULPS       Y2, Y1, Y2

// Q4BLOCK: lanes of Σ q·a for the Q4_0 block at woff(SI) and act at aoff(DI)
// into Y6 as float; Y1 = d_w (for the correction), Y2 = d_w·d_a.
#define Q4BLOCK(woff, aoff, yoff, acc, cacc) \
	WSCALE(woff, yoff) \
	VMOVDQU      woff+2(SI), X3 \
	VPSRLW       $4, X3, X4 \
	VINSERTI128  $1, X4, Y3, Y3 \
	VPAND        Y14, Y3, Y3 \
	VPXOR        Y6, Y6, Y6 \
	VPDPBUSD     aoff+2(DI), Y3, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	VFMADD231PS  Y6, Y2, acc \
	VBROADCASTSS yoff(R9), Y5 \
	VFMADD231PS  Y5, Y1, cacc

// func dotQ4_0VNNI(nb int, x, y *byte, ys, yc *float32) float32
TEXT ·dotQ4_0VNNI(SB), NOSPLIT, $0-44
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ ys+24(FP), R8
	MOVQ yc+32(FP), R9
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	MOVL     $0x0f0f0f0f, AX
	VMOVD    AX, X14
	VPBROADCASTD X14, Y14

q4v4:
	CMPQ CX, $4
	JL   q4v1
	Q4BLOCK(0, 0, 0, Y0, Y10)
	Q4BLOCK(18, 34, 4, Y7, Y11)
	Q4BLOCK(36, 68, 8, Y8, Y10)
	Q4BLOCK(54, 102, 12, Y9, Y11)
	ADDQ $72, SI
	ADDQ $136, DI
	ADDQ $16, R8
	ADDQ $16, R9
	SUBQ $4, CX
	JMP  q4v4

q4v1:
	TESTQ CX, CX
	JZ    q4vdone
	Q4BLOCK(0, 0, 0, Y0, Y10)
	ADDQ $18, SI
	ADDQ $34, DI
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JMP  q4v1

q4vdone:
	VADDPS Y7, Y0, Y0
	VADDPS Y9, Y8, Y8
	VADDPS Y8, Y0, Y0
	HSUM
	VADDPS       Y11, Y10, Y10
	VSUBSS       X10, X0, X0
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// Q8BLOCK: signed × signed via |w| and sign-adjusted a.
#define Q8BLOCK(off, yoff, acc) \
	WSCALE(off, yoff) \
	VMOVDQU      off+2(SI), Y3 \
	VMOVDQU      off+2(DI), Y4 \
	VPSIGNB      Y3, Y3, Y5 \
	VPSIGNB      Y3, Y4, Y4 \
	VPXOR        Y6, Y6, Y6 \
	VPDPBUSD     Y4, Y5, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	VFMADD231PS  Y6, Y2, acc

// func dotQ8_0VNNI(nb int, x, y *byte, ys *float32) float32
TEXT ·dotQ8_0VNNI(SB), NOSPLIT, $0-36
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ ys+24(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

q8v4:
	CMPQ CX, $4
	JL   q8v1
	Q8BLOCK(0, 0, Y0)
	Q8BLOCK(34, 4, Y7)
	Q8BLOCK(68, 8, Y8)
	Q8BLOCK(102, 12, Y9)
	ADDQ $136, SI
	ADDQ $136, DI
	ADDQ $16, R8
	SUBQ $4, CX
	JMP  q8v4

q8v1:
	TESTQ CX, CX
	JZ    q8vdone
	Q8BLOCK(0, 0, Y0)
	ADDQ $34, SI
	ADDQ $34, DI
	ADDQ $4, R8
	DECQ CX
	JMP  q8v1

q8vdone:
	VADDPS Y7, Y0, Y0
	VADDPS Y9, Y8, Y8
	VADDPS Y8, Y0, Y0
	HSUM
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET
