//go:build amd64 && !purego

#include "textflag.h"
#include "packed_amd64.h"

// Packed Q4_K × Q8_K for 16 rows (layout in packed_k.go), AVX-512 VNNI, in
// the order of ggml's AVX2 ggml_vec_dot_q4_K_q8_K so the results are
// bit-identical to dotQ4_KAVX2 (TestPackedExact). Per super-block and lane
// l (elements 4l..4l+3 of each 32-element sub-block) the int32
// sumi_l = Σ_s scale_s · Σ q·a is exact: VPDPBUSD forms the 4-product sum
// of every row, VPDPWSSD multiplies it by the row's scale (the sum fits an
// int16; its high word meets a zero) and adds; then acc_l += d·sumi_l. The
// mins term Σ min·bsum uses VPDPWSSD on (min 2m, min 2m+1) pairs against
// the activation's per-sub-block sums, on four lanes as ggml does.
//
// Registers: Z0-Z7 acc, Z8-Z11 mins acc, Z12-Z19 sumi, Z20 d, Z21 −dmin,
// Z22/Z23 scales of the sub-block pair, Z24-Z29 scratch, Z30 sign bit,
// Z31 0x0f bytes.

// Q4KD: Z20 = f16 d · d_y and Z21 = −(f16 dmin · d_y) of the group at W.
#define Q4KD(W) \
	VCVTPH2PS   (W), Z20 \
	VMULPS.BCST (DI), Z20, Z20 \
	VCVTPH2PS   32(W), Z21 \
	VMULPS.BCST (DI), Z21, Z21 \
	VXORPS      Z30, Z21, Z21

// Q4KMIN: Z27 = float(min 2m · q8s 2m + min 2m+1 · q8s 2m+1), ggml's mins
// lane m, of the group at W.
#define Q4KMIN(W, m) \
	VPMOVZXBW     192+32*m(W), Z24 \
	VPXORD        Z27, Z27, Z27 \
	VPDPWSSD.BCST 4*m(R8), Z24, Z27 \
	VCVTDQ2PS     Z27, Z27

// Q4KLANE: sumi += scale 2j · Σ q·a over lane l of sub-block 2j (low
// nibbles) + scale 2j+1 · the same over sub-block 2j+1 (high nibbles),
// the high nibbles split by HI (Q4KHI or Q4KHIG); FIRST adds the low
// sub-block's scaled sum to sumi (VPDPWSSD) or writes it (VPMADDWD: no
// zeroed sumi needed).
#define Q4KLANE(W, j, l, sumi, HI, FIRST) \
	VMOVDQU64     320+512*j+64*l(W), Z24 \
	VPANDD        Z31, Z24, Z25 \
	HI \
	VPXORD        Z27, Z27, Z27 \
	VPDPBUSD.BCST 4+64*j+4*l(DI), Z25, Z27 \
	FIRST         Z22, Z27, sumi \
	VPXORD        Z28, Z28, Z28 \
	VPDPBUSD.BCST 36+64*j+4*l(DI), Z26, Z28 \
	VPDPWSSD      Z23, Z28, sumi

// Q4KHI: Z26 = the high nibbles of Z24 (a shift and a mask).
#define Q4KHI \
	VPSRLW $4, Z24, Z26 \
	VPANDD Z31, Z26, Z26

// Q4KHIG: Q4KHI in one VGF2P8AFFINEQB (Z29: the bit matrix of x >> 4
// within each byte) where GFNI exists.
#define Q4KHIG VGF2P8AFFINEQB $0, Z29, Z24, Z26

// Q4KPAIR: sub-blocks 2j and 2j+1 of the group at W into Z12-Z19.
#define Q4KPAIR(W, j, HI, FIRST) \
	VPMOVZXBD 64+32*j(W), Z22 \
	VPMOVZXBD 80+32*j(W), Z23 \
	Q4KLANE(W, j, 0, Z12, HI, FIRST) \
	Q4KLANE(W, j, 1, Z13, HI, FIRST) \
	Q4KLANE(W, j, 2, Z14, HI, FIRST) \
	Q4KLANE(W, j, 3, Z15, HI, FIRST) \
	Q4KLANE(W, j, 4, Z16, HI, FIRST) \
	Q4KLANE(W, j, 5, Z17, HI, FIRST) \
	Q4KLANE(W, j, 6, Z18, HI, FIRST) \
	Q4KLANE(W, j, 7, Z19, HI, FIRST)

// Q4KSUMI: Z12-Z19 = the eight lanes' sumi of one super-block of the
// group at W.
#define Q4KSUMI(W) \
	ZERO8(Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19) \
	Q4KPAIR(W, 0, Q4KHI, VPDPWSSD) \
	Q4KPAIR(W, 1, Q4KHI, VPDPWSSD) \
	Q4KPAIR(W, 2, Q4KHI, VPDPWSSD) \
	Q4KPAIR(W, 3, Q4KHI, VPDPWSSD)

// Q4KSUMIG: Q4KSUMI in 296 instructions instead of 336 where GFNI
// exists: the high nibbles by Q4KHIG, and the first pair's scaled sums
// written (VPMADDWD) rather than added to zeroed lanes. Integer sums: the
// same sumi, bit for bit.
#define Q4KSUMIG(W) \
	Q4KPAIR(W, 0, Q4KHIG, VPMADDWD) \
	Q4KPAIR(W, 1, Q4KHIG, VPDPWSSD) \
	Q4KPAIR(W, 2, Q4KHIG, VPDPWSSD) \
	Q4KPAIR(W, 3, Q4KHIG, VPDPWSSD)

// Q4KFOLD: acc += d · float(sumi) for one lane, acc in a register.
#define Q4KFOLD(sumi, acc) \
	VCVTDQ2PS   sumi, sumi \
	VFMADD231PS sumi, Z20, acc

// Q4KBLOCK: one super-block of the group at SI into Z0-Z11, its lanes'
// sums by SUMI (Q4KSUMI, or Q4KSUMIG where GFNI exists).
#define Q4KBLOCK(SUMI) \
	Q4KD(SI) \
	Q4KMIN(SI, 0) \
	VFMADD231PS Z27, Z21, Z8 \
	Q4KMIN(SI, 1) \
	VFMADD231PS Z27, Z21, Z9 \
	Q4KMIN(SI, 2) \
	VFMADD231PS Z27, Z21, Z10 \
	Q4KMIN(SI, 3) \
	VFMADD231PS Z27, Z21, Z11 \
	SUMI(SI) \
	Q4KFOLD(Z12, Z0) \
	Q4KFOLD(Z13, Z1) \
	Q4KFOLD(Z14, Z2) \
	Q4KFOLD(Z15, Z3) \
	Q4KFOLD(Z16, Z4) \
	Q4KFOLD(Z17, Z5) \
	Q4KFOLD(Z18, Z6) \
	Q4KFOLD(Z19, Z7)

// Q4KREDUCE: hsum_float_8 of acc Z0-Z7, plus ((m0+m2)+(m1+m3)), stored at
// off(R11).
#define Q4KREDUCE(off) \
	VADDPS  Z4, Z0, Z0 \
	VADDPS  Z5, Z1, Z1 \
	VADDPS  Z6, Z2, Z2 \
	VADDPS  Z7, Z3, Z3 \
	VADDPS  Z2, Z0, Z0 \
	VADDPS  Z3, Z1, Z1 \
	VADDPS  Z1, Z0, Z0 \
	VADDPS  Z10, Z8, Z8 \
	VADDPS  Z11, Z9, Z9 \
	VADDPS  Z9, Z8, Z8 \
	VADDPS  Z8, Z0, Z0 \
	VMOVUPS Z0, off(R11)

// Q4KCONST: the nibble mask in Z31 and the sign bit in Z30; Q4KGEMV adds
// in Z29 the affine bit matrix of Q4KHIG's x >> 4 (row i, byte 7−i of
// the qword, selects the source bits of result bit i: bit i+4 for i < 4).
#define Q4KCONST \
	MOVL         $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z31 \
	MOVL         $0x80000000, AX \
	VPBROADCASTD AX, Z30

// Q4KGEMV: the one-token loop over nb super-blocks of one group, its
// lanes' sums by SUMI; loop, pf and done name its labels.
#define Q4KGEMV(SUMI, loop, pf, done) \
	KGEMVARGS \
	Q4KCONST \
	MOVQ         $0x1020408000000000, AX \
	VPBROADCASTQ AX, Z29 \
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7) \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
loop: \
	TESTQ CX, CX \
	JZ    done \
	PFSKIP(pf) \
	PF16(0) \
	PF16(1024) \
	PF4(2048) \
	PF1(2304) \
pf: \
	Q4KBLOCK(SUMI) \
	ADDQ $2368, SI \
	ADDQ $292, DI \
	ADDQ $16, R8 \
	DECQ CX \
	JMP  loop \
done: \
	Q4KREDUCE(0) \
	VZEROUPPER \
	RET

// func gemvQ4_Kx16(nb int, w, a *byte, out *float32)
TEXT ·gemvQ4_Kx16(SB), NOSPLIT, $0-32
	Q4KGEMV(Q4KSUMI, q4kx16loop, q4kx16pf, q4kx16done)

// func gemvQ4_Kx16acc(nb int, w, a, tail *byte, acc *float32)
// gemvQ4_Kx16's loop with its accumulators (Z0-Z11) loaded from acc
// (twelve vectors of sixteen rows) on entry and stored back on return,
// the activations' tail at tail: a product can run a super-block or more
// at a time and leave the reduction to reduceQ4_Kx16 (see registerQ4KStreams).
TEXT ·gemvQ4_Kx16acc(SB), NOSPLIT, $0-40
	MOVQ    nb+0(FP), CX
	MOVQ    w+8(FP), SI
	MOVQ    a+16(FP), DI
	MOVQ    tail+24(FP), R8
	MOVQ    acc+32(FP), R11
	Q4KCONST
	VMOVUPS 0(R11), Z0
	VMOVUPS 64(R11), Z1
	VMOVUPS 128(R11), Z2
	VMOVUPS 192(R11), Z3
	VMOVUPS 256(R11), Z4
	VMOVUPS 320(R11), Z5
	VMOVUPS 384(R11), Z6
	VMOVUPS 448(R11), Z7
	VMOVUPS 512(R11), Z8
	VMOVUPS 576(R11), Z9
	VMOVUPS 640(R11), Z10
	VMOVUPS 704(R11), Z11

q4kaccloop:
	TESTQ CX, CX
	JZ    q4kaccdone
	Q4KBLOCK(Q4KSUMI)
	ADDQ $2368, SI
	ADDQ $292, DI
	ADDQ $16, R8
	DECQ CX
	JMP  q4kaccloop

q4kaccdone:
	VMOVUPS Z0, 0(R11)
	VMOVUPS Z1, 64(R11)
	VMOVUPS Z2, 128(R11)
	VMOVUPS Z3, 192(R11)
	VMOVUPS Z4, 256(R11)
	VMOVUPS Z5, 320(R11)
	VMOVUPS Z6, 384(R11)
	VMOVUPS Z7, 448(R11)
	VMOVUPS Z8, 512(R11)
	VMOVUPS Z9, 576(R11)
	VMOVUPS Z10, 640(R11)
	VMOVUPS Z11, 704(R11)
	VZEROUPPER
	RET

// func reduceQ4_Kx16(acc, out *float32)
// gemvQ4_Kx16's reduction of the accumulators gemvQ4_Kx16acc left at acc.
TEXT ·reduceQ4_Kx16(SB), NOSPLIT, $0-16
	MOVQ    acc+0(FP), R8
	MOVQ    out+8(FP), R11
	VMOVUPS 0(R8), Z0
	VMOVUPS 64(R8), Z1
	VMOVUPS 128(R8), Z2
	VMOVUPS 192(R8), Z3
	VMOVUPS 256(R8), Z4
	VMOVUPS 320(R8), Z5
	VMOVUPS 384(R8), Z6
	VMOVUPS 448(R8), Z7
	VMOVUPS 512(R8), Z8
	VMOVUPS 576(R8), Z9
	VMOVUPS 640(R8), Z10
	VMOVUPS 704(R8), Z11
	Q4KREDUCE(0)
	VZEROUPPER
	RET

// func gemvQ4_Kx16GFNI(nb int, w, a *byte, out *float32)
// gemvQ4_Kx16 with Q4KSUMIG: 296 vector instructions a super-block's
// lanes instead of 336, the same results bit for bit. On Zen 5 a
// one-token product's rate falls with the instructions its loop carries
// per byte (docs/performance.md, session 37).
TEXT ·gemvQ4_Kx16GFNI(SB), NOSPLIT, $0-32
	Q4KGEMV(Q4KSUMIG, q4kgloop, q4kgpf, q4kgdone)
