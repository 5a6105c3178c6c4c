//go:build amd64 && !purego

#include "textflag.h"
#include "packed_amd64.h"

// Q4_0 in the order of llama.cpp's repacked kernels (ggml_gemv/gemm_q4_0_8x8_q8_0,
// which llama.cpp runs on AVX2/AVX-512 CPUs for Q4_0 weights with a
// multiple of 8 rows): per block the whole int32 Σ (q−8)·a, converted to
// float, then acc = fma(float, d_w·d_a, acc), blocks in order. The weights
// use the packed Q4_0 layout (packQ4_0); the activation tail holds per
// block float32 d_a and int32 −8·Σa (8 bytes; q4rTail).

// Q4RBLOCK: int32 Σ over one block for one token into i0 (starting from
// the correction at coff(cp)), using i1 for the high halves; then acc +=
// float(i0)·d. The weight nibbles are split into Z9..Z16 beforehand.
#define Q4RBLOCKW(w, ap, cp, d, i0, i1, acc) \
	VCVTPH2PS      (w), d \
	VMULPS.BCST    (cp), d, d \
	VPBROADCASTD   4(cp), i0 \
	VPXORD         i1, i1, i1 \
	VPDPBUSD.BCST  2(ap), Z9, i0 \
	VPDPBUSD.BCST  18(ap), Z10, i1 \
	VPDPBUSD.BCST  6(ap), Z11, i0 \
	VPDPBUSD.BCST  22(ap), Z12, i1 \
	VPDPBUSD.BCST  10(ap), Z13, i0 \
	VPDPBUSD.BCST  26(ap), Z14, i1 \
	VPDPBUSD.BCST  14(ap), Z15, i0 \
	VPDPBUSD.BCST  30(ap), Z16, i1 \
	VPADDD         i1, i0, i0 \
	VCVTDQ2PS      i0, i0 \
	VFMADD231PS    d, i0, acc

#define Q4RBLOCK(ap, cp, d, i0, i1, acc) Q4RBLOCKW(SI, ap, cp, d, i0, i1, acc)

// Q4RSPLITW: the block's 16 rows' nibbles (weights at w), lanes j (low)
// in Z9+2j, lanes 4+j (high) in Z10+2j.
#define Q4RSPLITW(w) \
	VMOVDQU64 32(w), Z17 \
	VPANDD    Z31, Z17, Z9 \
	VPSRLW    $4, Z17, Z10 \
	VPANDD    Z31, Z10, Z10 \
	VMOVDQU64 96(w), Z17 \
	VPANDD    Z31, Z17, Z11 \
	VPSRLW    $4, Z17, Z12 \
	VPANDD    Z31, Z12, Z12 \
	VMOVDQU64 160(w), Z17 \
	VPANDD    Z31, Z17, Z13 \
	VPSRLW    $4, Z17, Z14 \
	VPANDD    Z31, Z14, Z14 \
	VMOVDQU64 224(w), Z17 \
	VPANDD    Z31, Z17, Z15 \
	VPSRLW    $4, Z17, Z16 \
	VPANDD    Z31, Z16, Z16

#define Q4RSPLIT Q4RSPLITW(SI)

// Q4RSPLITGW: Q4RSPLITW's registers with each high nibble taken by one
// VGF2P8AFFINEQB (Z30: the bit matrix of x >> 4 within each byte) in
// place of a shift and a mask.
#define Q4RSPLITGW(w) \
	VMOVDQU64      32(w), Z17 \
	VPANDD         Z31, Z17, Z9 \
	VGF2P8AFFINEQB $0, Z30, Z17, Z10 \
	VMOVDQU64      96(w), Z17 \
	VPANDD         Z31, Z17, Z11 \
	VGF2P8AFFINEQB $0, Z30, Z17, Z12 \
	VMOVDQU64      160(w), Z17 \
	VPANDD         Z31, Z17, Z13 \
	VGF2P8AFFINEQB $0, Z30, Z17, Z14 \
	VMOVDQU64      224(w), Z17 \
	VPANDD         Z31, Z17, Z15 \
	VGF2P8AFFINEQB $0, Z30, Z17, Z16

// Q4RBLOCK1W: Q4RBLOCKW with the block's int32 Σ in one register i0, the
// eight VPDPBUSD one after another: integer sums, so the same Σ — one
// zeroing and one add fewer.
#define Q4RBLOCK1W(w, ap, cp, d, i0, acc) \
	VCVTPH2PS      (w), d \
	VMULPS.BCST    (cp), d, d \
	VPBROADCASTD   4(cp), i0 \
	VPDPBUSD.BCST  2(ap), Z9, i0 \
	VPDPBUSD.BCST  18(ap), Z10, i0 \
	VPDPBUSD.BCST  6(ap), Z11, i0 \
	VPDPBUSD.BCST  22(ap), Z12, i0 \
	VPDPBUSD.BCST  10(ap), Z13, i0 \
	VPDPBUSD.BCST  26(ap), Z14, i0 \
	VPDPBUSD.BCST  14(ap), Z15, i0 \
	VPDPBUSD.BCST  30(ap), Z16, i0 \
	VCVTDQ2PS      i0, i0 \
	VFMADD231PS    d, i0, acc

// Q4RCONST: the nibble mask in Z31, Q4RSPLITGW's bit matrix in Z30 (row
// i, byte 7−i of the qword, selects the source bits of result bit i: bit
// i+4 for i < 4, none above), and the accumulators Z0-Z3 zeroed.
#define Q4RCONST \
	MOVL         $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z31 \
	MOVQ         $0x1020408000000000, AX \
	VPBROADCASTQ AX, Z30 \
	VPXORD       Z0, Z0, Z0 \
	VPXORD       Z1, Z1, Z1 \
	VPXORD       Z2, Z2, Z2 \
	VPXORD       Z3, Z3, Z3

// Q4RSTORE4: Z0-Z3 to out, ostride bytes apart, and return.
#define Q4RSTORE4 \
	MOVQ    ostride+40(FP), AX \
	VMOVUPS Z0, (R11) \
	ADDQ    AX, R11 \
	VMOVUPS Z1, (R11) \
	ADDQ    AX, R11 \
	VMOVUPS Z2, (R11) \
	ADDQ    AX, R11 \
	VMOVUPS Z3, (R11) \
	VZEROUPPER \
	RET

// Q4RGEMM4: the four-token loop, each group block split by SPLIT
// (Q4RSPLITW or Q4RSPLITGW, which finds its bit matrix in Z30); loop and
// done name its labels.
#define Q4RGEMM4(SPLIT, loop, done) \
	MOVQ         nb+0(FP), CX \
	MOVQ         w+8(FP), SI \
	MOVQ         a+16(FP), DI \
	MOVQ         astride+24(FP), DX \
	MOVQ         out+32(FP), R11 \
	PFLOAD \
	LEAQ         (DI)(DX*1), R9 \
	LEAQ         (R9)(DX*1), R10 \
	LEAQ         (R10)(DX*1), R12 \
	IMUL3Q       $34, CX, AX \
	LEAQ         (DI)(AX*1), R8 \
	LEAQ         (R9)(AX*1), R13 \
	LEAQ         (R10)(AX*1), R14 \
	LEAQ         (R12)(AX*1), BX \
	Q4RCONST \
loop: \
	TESTQ CX, CX \
	JZ    done \
	PF4(0) \
	PF1(256) \
	SPLIT(SI) \
	Q4RBLOCK(DI, R8, Z8, Z18, Z19, Z0) \
	Q4RBLOCK(R9, R13, Z20, Z21, Z22, Z1) \
	Q4RBLOCK(R10, R14, Z23, Z24, Z25, Z2) \
	Q4RBLOCK(R12, BX, Z26, Z27, Z28, Z3) \
	ADDQ  $288, SI \
	ADDQ  $34, DI \
	ADDQ  $34, R9 \
	ADDQ  $34, R10 \
	ADDQ  $34, R12 \
	ADDQ  $8, R8 \
	ADDQ  $8, R13 \
	ADDQ  $8, R14 \
	ADDQ  $8, BX \
	DECQ  CX \
	JMP   loop \
done: \
	Q4RSTORE4

// PFW: the block's five lines at w, R15 bytes ahead.
#define PFW(w) \
	PREFETCHT0 (w)(R15*1) \
	PREFETCHT0 64(w)(R15*1) \
	PREFETCHT0 128(w)(R15*1) \
	PREFETCHT0 192(w)(R15*1) \
	PREFETCHT0 256(w)(R15*1)

// Q4RS4B and Q4RS4BG: one stream's block into acc, the one-token
// kernels' BLOCK.
#define Q4RS4B(w, acc) Q4RBLOCKW(w, DI, R8, Z8, Z18, Z19, acc)
#define Q4RS4BG(w, acc) Q4RBLOCK1W(w, DI, R8, Z8, Z18, acc)

// Q4RS4: the one-token loop over four streams, each group block split by
// SPLIT and summed by BLOCK; loop, pf and done name its labels.
#define Q4RS4(SPLIT, BLOCK, loop, pf, done) \
	MOVQ         nb+0(FP), CX \
	MOVQ         w+8(FP), SI \
	MOVQ         wstride+16(FP), DX \
	MOVQ         a+24(FP), DI \
	MOVQ         out+32(FP), R11 \
	PFLOAD \
	LEAQ         (SI)(DX*1), R9 \
	LEAQ         (R9)(DX*1), R10 \
	LEAQ         (R10)(DX*1), R12 \
	IMUL3Q       $34, CX, R8 \
	ADDQ         DI, R8 \
	Q4RCONST \
loop: \
	TESTQ CX, CX \
	JZ    done \
	PFSKIP(pf) \
	PFW(SI) \
	PFW(R9) \
	PFW(R10) \
	PFW(R12) \
pf: \
	SPLIT(SI) \
	BLOCK(SI, Z0) \
	SPLIT(R9) \
	BLOCK(R9, Z1) \
	SPLIT(R10) \
	BLOCK(R10, Z2) \
	SPLIT(R12) \
	BLOCK(R12, Z3) \
	ADDQ  $288, SI \
	ADDQ  $288, R9 \
	ADDQ  $288, R10 \
	ADDQ  $288, R12 \
	ADDQ  $34, DI \
	ADDQ  $8, R8 \
	DECQ  CX \
	JMP   loop \
done: \
	Q4RSTORE4

// func gemvQ4_0r16(nb int, w, a *byte, out *float32)
TEXT ·gemvQ4_0r16(SB), NOSPLIT, $0-32
	MOVQ         nb+0(FP), CX
	MOVQ         w+8(FP), SI
	MOVQ         a+16(FP), DI
	MOVQ         out+24(FP), R11
	PFLOAD
	IMUL3Q       $34, CX, R8
	ADDQ         DI, R8
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z31
	VPXORD       Z0, Z0, Z0

q4rloop:
	TESTQ CX, CX
	JZ    q4rdone
	PF4(0)
	PF1(256)
	Q4RSPLIT
	Q4RBLOCK(DI, R8, Z8, Z18, Z19, Z0)
	ADDQ  $288, SI
	ADDQ  $34, DI
	ADDQ  $8, R8
	DECQ  CX
	JMP   q4rloop

q4rdone:
	VMOVUPS Z0, (R11)
	VZEROUPPER
	RET

// func gemmQ4_0r16x4(nb int, w, a *byte, astride int, out *float32, ostride int)
// Four tokens (activation rows astride bytes apart; outputs ostride bytes
// apart), each bit-identical to gemvQ4_0r16.
TEXT ·gemmQ4_0r16x4(SB), NOSPLIT, $0-48
	Q4RGEMM4(Q4RSPLITW, q4r4loop, q4r4done)

// func gemmQ4_0r16x4GFNI(nb int, w, a *byte, astride int, out *float32, ostride int)
// gemmQ4_0r16x4 with the high nibbles by VGF2P8AFFINEQB
// (Q4RSPLITGW), bit-identical.
TEXT ·gemmQ4_0r16x4GFNI(SB), NOSPLIT, $0-48
	Q4RGEMM4(Q4RSPLITGW, q4r4gloop, q4r4gdone)

// func gemvQ4_0r16s4(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)
// One token against four groups (w, w+wstride, …; outputs ostride bytes
// apart), each bit-identical to gemvQ4_0r16. Decode hands it groups a
// quarter of a worker's range apart: four sequential streams keep more of
// the memory's reads in flight than one (see dotF16Vec4RowsAVX512).
TEXT ·gemvQ4_0r16s4(SB), NOSPLIT, $0-48
	Q4RS4(Q4RSPLITW, Q4RS4B, q4rs4loop, q4rs4pf, q4rs4done)

// func gemvQ4_0r16s4GFNI(nb int, w *byte, wstride int, a *byte, out *float32, ostride int)
// gemvQ4_0r16s4 in 25 vector instructions a group block instead of 31,
// its results bit for bit. Why fewer instructions read faster although
// the product is bound by memory: on Zen 5 (one thread) the four streams'
// rate falls with every instruction the loop carries per byte — a pure
// read of the same groups reaches the F16 kernel's rate, and the same
// read with twenty register-only VPANDD a group block falls to the packed
// kernel's (0.80 of it), whatever the software prefetch distance (4.5 to
// 64 KiB); see docs/performance.md, session 37.
TEXT ·gemvQ4_0r16s4GFNI(SB), NOSPLIT, $0-48
	Q4RS4(Q4RSPLITGW, Q4RS4BG, q4rgloop, q4rgpf, q4rgdone)
