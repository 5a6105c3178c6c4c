//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Dot products of quantized weight rows with Q8_0 activations, AVX2 + FMA +
// F16C. Per 32-element block: the int8 products are summed in eight int32
// lanes (VPMADDUBSW on |w| and sign-adjusted a, then VPMADDWD), converted to
// float and accumulated as acc += (d_w·d_a)·lanes, and the eight lanes are
// reduced as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)): the order of ggml's
// AVX2 ggml_vec_dot_q8_0_q8_0 / q4_0_q8_0, so results match llama.cpp's.

// BLOCKSCALE broadcasts f16(xoff(SI)) · f16(0(DI)) to Y1.
#define BLOCKSCALE \
	MOVWLZX      (SI), AX \
	MOVWLZX      (DI), BX \
	VMOVD        AX, X1 \
	VMOVD        BX, X2 \
	VCVTPH2PS    X1, X1 \
	VCVTPH2PS    X2, X2 \
	VMULSS       X2, X1, X1 \
	VBROADCASTSS X1, Y1

// MULSUMI: Y6 = int32 lanes of Σ Y2[i]·Y3[i] for signed bytes; Y15 = int16 ones.
#define MULSUMI \
	VPSIGNB    Y2, Y2, Y4 \
	VPSIGNB    Y2, Y3, Y5 \
	VPMADDUBSW Y5, Y4, Y6 \
	VPMADDWD   Y15, Y6, Y6

// MULSUM: MULSUMI converted to float.
#define MULSUM \
	MULSUMI \
	VCVTDQ2PS  Y6, Y6

// DOTSETUP: the one-token kernels' arguments (CX blocks, SI weights, DI
// activations), Y0 = 0, Y15 = int16 ones, Y14 = bytes 0x0F.
#define DOTSETUP \
	MOVQ         nb+0(FP), CX \
	MOVQ         x+8(FP), SI \
	MOVQ         y+16(FP), DI \
	VXORPS       Y0, Y0, Y0 \
	VPCMPEQW     Y15, Y15, Y15 \
	VPSRLW       $15, Y15, Y15 \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X14 \
	VPBROADCASTD X14, Y14

// R4ZERO: the four-token and four-row kernels' accumulators Y7-Y10
// zeroed, Y15 int16 ones.
#define R4ZERO \
	VXORPS   Y7, Y7, Y7 \
	VXORPS   Y8, Y8, Y8 \
	VXORPS   Y9, Y9, Y9 \
	VXORPS   Y10, Y10, Y10 \
	VPCMPEQW Y15, Y15, Y15 \
	VPSRLW   $15, Y15, Y15

// X4SETUP loads the four-token kernels' arguments: SI weights, DI/R8/R9/R10
// the four activation rows, R11 out; zeroes accumulators Y7-Y10; Y15 = int16 ones.
#define X4SETUP \
	MOVQ nb+0(FP), CX \
	MOVQ x+8(FP), SI \
	MOVQ y+16(FP), DI \
	MOVQ ystride+24(FP), AX \
	MOVQ out+32(FP), R11 \
	LEAQ (DI)(AX*1), R8 \
	LEAQ (R8)(AX*1), R9 \
	LEAQ (R9)(AX*1), R10 \
	R4ZERO

// X4DONE stores the four reduced accumulators to out[0:4] and returns.
#define X4DONE \
	X4REDUCE(Y7, 0) \
	X4REDUCE(Y8, 4) \
	X4REDUCE(Y9, 8) \
	X4REDUCE(Y10, 12) \
	VZEROUPPER \
	RET

// func dotQ8_0AVX2(nb int, x, y *byte) float32
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-28
	MOVQ nb+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	VXORPS   Y0, Y0, Y0
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15

q80loop:
	TESTQ CX, CX
	JZ    q80done
	BLOCKSCALE
	VMOVDQU 2(SI), Y2
	VMOVDQU 2(DI), Y3
	MULSUM
	VFMADD231PS Y6, Y1, Y0
	ADDQ $34, SI
	ADDQ $34, DI
	DECQ CX
	JMP  q80loop

q80done:
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ4_0AVX2(nb int, x, y *byte) float32
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-28
	DOTSETUP
	MOVL     $0x08080808, AX
	VMOVD    AX, X13
	VPBROADCASTD X13, Y13

q40loop:
	TESTQ CX, CX
	JZ    q40done
	BLOCKSCALE
	// Low nibbles are elements 0..15, high nibbles 16..31.
	VMOVDQU     2(SI), X2
	VPSRLW      $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND       Y14, Y2, Y2
	VPSUBB      Y13, Y2, Y2
	VMOVDQU     2(DI), Y3
	MULSUM
	VFMADD231PS Y6, Y1, Y0
	ADDQ $18, SI
	ADDQ $34, DI
	DECQ CX
	JMP  q40loop

q40done:
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF16F32AVX2(n int, x *byte, y *float32) float32
// Σ f16(x[i])·y[i] over n elements (n a multiple of 8): four 8-lane
// accumulators, like ggml's F16 vec_dot with F16C.
TEXT ·dotF16F32AVX2(SB), NOSPLIT, $0-28
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ ·prefetchAhead(SB), R15
	VXORPS Y0, Y0, Y0
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

f16loop32:
	CMPQ CX, $32
	JL   f16loop8
	// Weights prefetchAhead bytes ahead (rows are contiguous, so this runs
	// into the next row; see prefetch_amd64.go).
	PREFETCHT0  (SI)(R15*1)
	VCVTPH2PS   (SI), Y1
	VCVTPH2PS   16(SI), Y2
	VCVTPH2PS   32(SI), Y3
	VCVTPH2PS   48(SI), Y4
	VFMADD231PS (DI), Y1, Y0
	VFMADD231PS 32(DI), Y2, Y7
	VFMADD231PS 64(DI), Y3, Y8
	VFMADD231PS 96(DI), Y4, Y9
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP  f16loop32

f16loop8:
	CMPQ CX, $8
	JL   f16done
	VCVTPH2PS   (SI), Y1
	VFMADD231PS (DI), Y1, Y0
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP  f16loop8

f16done:
	// GGML_F32x8_REDUCE: (a0+a2) + (a1+a3), then the lanes.
	VADDPS Y8, Y0, Y0
	VADDPS Y9, Y7, Y7
	VADDPS Y7, Y0, Y0
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// X4TOKEN: one token's block: act at aoff(Rp) times the unpacked weights
// (Y2 signed values, Y4 = |Y2|), scaled by d_w (Y1) · d_a, into acc.
#define X4TOKEN(Rp, acc) \
	VPBROADCASTW (Rp), X3 \
	VCVTPH2PS    X3, Y3 \
	VMULPS       Y3, Y1, Y3 \
	VMOVDQU      2(Rp), Y5 \
	VPSIGNB      Y2, Y5, Y5 \
	VPMADDUBSW   Y5, Y4, Y6 \
	VPMADDWD     Y15, Y6, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	VFMADD231PS  Y6, Y3, acc

// X4REDUCE stores HSUM(acc) to off(R11).
#define X4REDUCE(acc, off) \
	VMOVAPS acc, Y0 \
	HSUM \
	VMOVSS  X0, off(R11)

// func dotQ4_0x4AVX2(nb int, x, y *byte, ystride int, out *float32)
// Four dot products of one Q4_0 row with four Q8_0 activation rows (y,
// y+ystride, ...): the weights are unpacked once per block for all four,
// and each (row, token) pair keeps its own accumulator, so every result is
// bit-identical to dotQ4_0AVX2 (ggml's order).
TEXT ·dotQ4_0x4AVX2(SB), NOSPLIT, $0-40
	X4SETUP
	MOVL     $0x0f0f0f0f, AX
	VMOVD    AX, X14
	VPBROADCASTD X14, Y14
	MOVL     $0x08080808, AX
	VMOVD    AX, X13
	VPBROADCASTD X13, Y13

q40x4loop:
	TESTQ CX, CX
	JZ    q40x4done
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, Y1
	VMOVDQU      2(SI), X2
	VPSRLW       $4, X2, X3
	VINSERTI128  $1, X3, Y2, Y2
	VPAND        Y14, Y2, Y2
	VPSUBB       Y13, Y2, Y2
	VPSIGNB      Y2, Y2, Y4
	X4TOKEN(DI, Y7)
	X4TOKEN(R8, Y8)
	X4TOKEN(R9, Y9)
	X4TOKEN(R10, Y10)
	ADDQ $18, SI
	ADDQ $34, DI
	ADDQ $34, R8
	ADDQ $34, R9
	ADDQ $34, R10
	DECQ CX
	JMP  q40x4loop

q40x4done:
	X4DONE

// func dotQ8_0x4AVX2(nb int, x, y *byte, ystride int, out *float32)
TEXT ·dotQ8_0x4AVX2(SB), NOSPLIT, $0-40
	X4SETUP

q80x4loop:
	TESTQ CX, CX
	JZ    q80x4done
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, Y1
	VMOVDQU      2(SI), Y2
	VPSIGNB      Y2, Y2, Y4
	X4TOKEN(DI, Y7)
	X4TOKEN(R8, Y8)
	X4TOKEN(R9, Y9)
	X4TOKEN(R10, Y10)
	ADDQ $34, SI
	ADDQ $34, DI
	ADDQ $34, R8
	ADDQ $34, R9
	ADDQ $34, R10
	DECQ CX
	JMP  q80x4loop

q80x4done:
	X4DONE

// R4SCALE: Y1 = the f16 scale of the block at Rp times d_a (Y12).
#define R4SCALE(Rp) \
	VPBROADCASTW (Rp), X1 \
	VCVTPH2PS    X1, Y1 \
	VMULPS       Y12, Y1, Y1

// R4DOT: acc += Y1 · the eight int32 lanes of Σ Y2·Y3 (signed bytes, the
// sign moved onto the activations as MULSUMI does).
#define R4DOT(acc) \
	VPSIGNB      Y2, Y2, Y4 \
	VPSIGNB      Y2, Y3, Y5 \
	VPMADDUBSW   Y5, Y4, Y6 \
	VPMADDWD     Y15, Y6, Y6 \
	VCVTDQ2PS    Y6, Y6 \
	VFMADD231PS  Y6, Y1, acc

// R8ROW: one Q8_0 row's block (at Rp) against the activations in Y3
// (their f16 scale as float in Y12): MULSUM, then acc += (d_w·d_a)·lanes,
// dotQ8_0AVX2's operations for that row.
#define R8ROW(Rp, acc) \
	R4SCALE(Rp) \
	VMOVDQU      2(Rp), Y2 \
	R4DOT(acc)

// R4LOOP: the four-row loop over Q8_0 activation blocks (scale in Y12,
// values in Y3), ROW(row, acc) for each row's block of wb bytes; loop and
// done name its labels; returns with the four results at out.
#define R4LOOP(ROW, wb, loop, done) \
loop: \
	TESTQ CX, CX \
	JZ    done \
	VPBROADCASTW (DI), X12 \
	VCVTPH2PS    X12, Y12 \
	VMOVDQU      2(DI), Y3 \
	ROW(SI, Y7) \
	ROW(R8, Y8) \
	ROW(R9, Y9) \
	ROW(R10, Y10) \
	ADDQ $wb, SI \
	ADDQ $wb, R8 \
	ADDQ $wb, R9 \
	ADDQ $wb, R10 \
	ADDQ $34, DI \
	DECQ CX \
	JMP  loop \
done: \
	X4DONE

// func rowsQ8_0AVX2(nb int, x0, x1, x2, x3, y *byte, out *float32)
// One token against four Q8_0 rows (decode): the activation block and its
// scale loaded once for the four, each row's accumulator its own, so each
// result is dotQ8_0AVX2's bit for bit (TestRows4Exact), in a quarter of
// the calls.
TEXT ·rowsQ8_0AVX2(SB), NOSPLIT, $0-56
	ROWS4ARGS
	R4ZERO
	R4LOOP(R8ROW, 34, q8r4loop, q8r4done)

// bytes_from_bits_32 constants: broadcast the 32 qh bits, spread byte k of
// them to lanes 8k..8k+7, and test one bit per lane.
DATA q5shuf<>+0(SB)/8, $0x0000000000000000
DATA q5shuf<>+8(SB)/8, $0x0101010101010101
DATA q5shuf<>+16(SB)/8, $0x0202020202020202
DATA q5shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5shuf<>(SB), RODATA|NOPTR, $32
DATA q5bits<>+0(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+8(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+16(SB)/8, $0x7fbfdfeff7fbfdfe
DATA q5bits<>+24(SB)/8, $0x7fbfdfeff7fbfdfe
GLOBL q5bits<>(SB), RODATA|NOPTR, $32

// Q5UNPACK: Y2 = the Q5_0 block at Rw as ggml's AVX2 kernel unpacks it,
// q − 16 = nibble | (0xF0 where the fifth bit is clear) as signed bytes;
// t and x3 are scratch, ones all ones, Y13 0xF0 bytes, Y14 0x0F bytes.
#define Q5UNPACK(Rw, t, x3, ones) \
	VPBROADCASTD 2(Rw), t \
	VPSHUFB      q5shuf<>(SB), t, t \
	VPOR         q5bits<>(SB), t, t \
	VPCMPEQB     ones, t, t \
	VPANDN       Y13, t, t \
	VMOVDQU      6(Rw), X2 \
	VPSRLW       $4, X2, x3 \
	VINSERTI128  $1, x3, Y2, Y2 \
	VPAND        Y14, Y2, Y2 \
	VPOR         t, Y2, Y2

// func dotQ5_0AVX2(nb int, x, y *byte) float32
// ggml's AVX2 ggml_vec_dot_q5_0_q8_0: q − 16 = nibble | (0xF0 where the
// fifth bit is clear), as a signed byte.
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $0-28
	DOTSETUP
	VPCMPEQB Y12, Y12, Y12 // all ones
	MOVL     $0xf0f0f0f0, AX
	VMOVD    AX, X13
	VPBROADCASTD X13, Y13

q50loop:
	TESTQ CX, CX
	JZ    q50done
	BLOCKSCALE
	Q5UNPACK(SI, Y8, X3, Y12)
	VMOVDQU      2(DI), Y3
	MULSUM
	VFMADD231PS  Y6, Y1, Y0
	ADDQ $22, SI
	ADDQ $34, DI
	DECQ CX
	JMP  q50loop

q50done:
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_0x4AVX2(nb int, x, y *byte, ystride int, out *float32)
// dotQ5_0AVX2 for four activation rows, as dotQ4_0x4AVX2: the block's
// q − 16 unpacked once (Y2, |Y2| in Y4), each token's accumulator its
// own, so each result is dotQ5_0AVX2's bit for bit.
TEXT ·dotQ5_0x4AVX2(SB), NOSPLIT, $0-40
	X4SETUP
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	VPCMPEQB     Y12, Y12, Y12 // all ones
	MOVL         $0xf0f0f0f0, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q50x4loop:
	TESTQ CX, CX
	JZ    q50x4done
	VPBROADCASTW (SI), X1
	VCVTPH2PS    X1, Y1
	Q5UNPACK(SI, Y11, X3, Y12)
	VPSIGNB      Y2, Y2, Y4
	X4TOKEN(DI, Y7)
	X4TOKEN(R8, Y8)
	X4TOKEN(R9, Y9)
	X4TOKEN(R10, Y10)
	ADDQ $22, SI
	ADDQ $34, DI
	ADDQ $34, R8
	ADDQ $34, R9
	ADDQ $34, R10
	DECQ CX
	JMP  q50x4loop

q50x4done:
	X4DONE


// R5ROW: one Q5_0 row's block (at Rp) against the activations in Y3
// (scale in Y12): dotQ5_0AVX2's unpacking and products for that row.
// Y0 all ones, Y13 0xF0 bytes, Y14 0x0F bytes.
#define R5ROW(Rp, acc) \
	R4SCALE(Rp) \
	Q5UNPACK(Rp, Y11, X6, Y0) \
	R4DOT(acc)

// func rowsQ5_0AVX2(nb int, x0, x1, x2, x3, y *byte, out *float32)
// One token against four Q5_0 rows, as rowsQ8_0AVX2: each result is
// dotQ5_0AVX2's bit for bit (TestRows4Exact).
TEXT ·rowsQ5_0AVX2(SB), NOSPLIT, $0-56
	ROWS4ARGS
	R4ZERO
	VPCMPEQB     Y0, Y0, Y0
	MOVL         $0xf0f0f0f0, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	R4LOOP(R5ROW, 22, q5r4loop, q5r4done)

// Q4_1 / Q5_1 × Q8_1 and Q5_K × Q8_K, AVX2: ggml's AVX2 vec_dot kernels
// operation for operation (see dot_order.go for the portable reference).
// Q4_1/Q5_1 per block: summs = fma(m_x, s_y, summs) (GCC contracts
// ggml's summs += m·s); unsigned q times signed a in eight int32 lanes
// (VPMADDUBSW, VPMADDWD by ones); acc = fma(d_x·d_y, lanes, acc). The
// result is hsum8(acc) + summs.

// X1SUMS: X10 = fma(f16(2(SI)), f16(2(DI)), X10); Y1 = d_x·d_y broadcast.
#define X1SUMS \
	MOVWLZX      2(SI), AX \
	MOVWLZX      2(DI), BX \
	VMOVD        AX, X4 \
	VMOVD        BX, X5 \
	VCVTPH2PS    X4, X4 \
	VCVTPH2PS    X5, X5 \
	VFMADD231SS  X5, X4, X10 \
	MOVWLZX      (SI), AX \
	MOVWLZX      (DI), BX \
	VMOVD        AX, X1 \
	VMOVD        BX, X2 \
	VCVTPH2PS    X1, X1 \
	VCVTPH2PS    X2, X2 \
	VMULSS       X2, X1, X1 \
	VBROADCASTSS X1, Y1

// X1ACC: lanes of unsigned Y2 × signed 4(DI), acc Y0 += Y1·lanes.
#define X1ACC \
	VMOVDQU     4(DI), Y3 \
	VPMADDUBSW  Y3, Y2, Y6 \
	VPMADDWD    Y15, Y6, Y6 \
	VCVTDQ2PS   Y6, Y6 \
	VFMADD231PS Y6, Y1, Y0

#define X1SETUP \
	DOTSETUP \
	VXORPS X10, X10, X10

// func dotQ4_1AVX2(nb int, x, y *byte) float32
TEXT ·dotQ4_1AVX2(SB), NOSPLIT, $0-28
	X1SETUP

q41loop:
	TESTQ       CX, CX
	JZ          q41done
	X1SUMS
	VMOVDQU     4(SI), X2
	VPSRLW      $4, X2, X3
	VINSERTI128 $1, X3, Y2, Y2
	VPAND       Y14, Y2, Y2
	X1ACC
	ADDQ        $20, SI
	ADDQ        $36, DI
	DECQ        CX
	JMP         q41loop

q41done:
	HSUM
	VADDSS X10, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotQ5_1AVX2(nb int, x, y *byte) float32
// The fifth bits (qh at 4(SI)) spread to one byte per element
// (bytes_from_bits_32, q5shuf/q5bits as for Q5_0), as 0x10.
TEXT ·dotQ5_1AVX2(SB), NOSPLIT, $0-28
	X1SETUP
	VPCMPEQB     Y12, Y12, Y12
	MOVL         $0x10101010, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13

q51loop:
	TESTQ        CX, CX
	JZ           q51done
	X1SUMS
	VPBROADCASTD 4(SI), Y8
	VPSHUFB      q5shuf<>(SB), Y8, Y8
	VPOR         q5bits<>(SB), Y8, Y8
	VPCMPEQB     Y12, Y8, Y8
	VPAND        Y13, Y8, Y8
	VMOVDQU      8(SI), X2
	VPSRLW       $4, X2, X3
	VINSERTI128  $1, X3, Y2, Y2
	VPAND        Y14, Y2, Y2
	VPOR         Y8, Y2, Y2
	X1ACC
	ADDQ         $24, SI
	ADDQ         $36, DI
	DECQ         CX
	JMP          q51loop

q51done:
	HSUM
	VADDSS X10, X0, X0
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// IQ4_NL × Q8_0: the codebook lookup by VPSHUFB, then Q4_0's signed
// product lanes. One token follows ggml's AVX2 ggml_vec_dot_iq4_nl_q8_0
// (even and odd blocks in two accumulators, a last odd block added as a
// scalar FMA); two or more tokens follow llamafile's tinyBLAS_Q0_AVX (one
// accumulator). See dotIQ4_NLOrder / dotIQ4_NLBatchOrder.
DATA iq4tab<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4tab<>+8(SB)/8, $0x7159453526190d01
GLOBL iq4tab<>(SB), RODATA|NOPTR, $16

// IQ4LANES: Y6 = int32 lanes of the block at (SI) against (DI); Y1 = d.
#define IQ4LANES \
	BLOCKSCALE \
	VMOVDQU     2(SI), X2 \
	VPSRLW      $4, X2, X3 \
	VINSERTI128 $1, X3, Y2, Y2 \
	VPAND       Y14, Y2, Y2 \
	VPSHUFB     Y2, Y13, Y2 \
	VMOVDQU     2(DI), Y3 \
	MULSUMI

#define IQ4SETUP \
	DOTSETUP \
	VXORPS         Y7, Y7, Y7 \
	VBROADCASTI128 iq4tab<>(SB), Y13

// func dotIQ4_NLAVX2(nb int, x, y *byte) float32
TEXT ·dotIQ4_NLAVX2(SB), NOSPLIT, $0-28
	IQ4SETUP

iq4loop:
	CMPQ        CX, $2
	JL          iq4pairs
	IQ4LANES
	VCVTDQ2PS   Y6, Y6
	VFMADD231PS Y6, Y1, Y0
	ADDQ        $18, SI
	ADDQ        $34, DI
	IQ4LANES
	VCVTDQ2PS   Y6, Y6
	VFMADD231PS Y6, Y1, Y7
	ADDQ        $18, SI
	ADDQ        $34, DI
	SUBQ        $2, CX
	JMP         iq4loop

iq4pairs:
	VADDPS Y7, Y0, Y0
	HSUM
	TESTQ  CX, CX
	JZ     iq4done
	VMOVAPS X0, X8
	IQ4LANES
	VEXTRACTI128 $1, Y6, X7
	VPADDD       X7, X6, X6
	VPHADDD      X6, X6, X6
	VPHADDD      X6, X6, X6
	VCVTDQ2PS    X6, X6
	VFMADD231SS  X6, X1, X8
	VMOVAPS      X8, X0

iq4done:
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotIQ4_NLBatchAVX2(nb int, x, y *byte) float32
TEXT ·dotIQ4_NLBatchAVX2(SB), NOSPLIT, $0-28
	IQ4SETUP

iq4bloop:
	TESTQ       CX, CX
	JZ          iq4bdone
	IQ4LANES
	VCVTDQ2PS   Y6, Y6
	VFMADD231PS Y6, Y1, Y0
	ADDQ        $18, SI
	ADDQ        $34, DI
	DECQ        CX
	JMP         iq4bloop

iq4bdone:
	HSUM
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET
