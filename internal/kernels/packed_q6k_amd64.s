//go:build amd64 && !purego

#include "textflag.h"
#include "packed_amd64.h"

// Packed Q6_K × Q8_K for 16 rows (layout in packed_k.go), AVX-512 VNNI, in
// the order of ggml's AVX2 ggml_vec_dot_q6_K_q8_K, so the results are
// bit-identical to dotQ6_KAVX2 (TestPackedExact). ggml's int32 lane k of a
// super-block sums, over the eight 32-element chunks ch, scale[2ch + k/4]
// × Σ (q−32)·a over elements 32ch+4k..+3. Here, per chunk and lane, one
// VPDPBUSD adds Σ q·a (q unsigned 0..63) to −32·Σa from the activation
// tail — the exact Σ (q−32)·a, which fits an int16 — and VPDPWSSD
// multiplies it by the row's scale (an int16 beside a zero word) and adds
// it to the lane; then acc_k += d·float(sumi_k), as ggml does. The integer
// sums are exact, so their order is free; the float steps follow ggml's.
//
// Each lane of a half is three 64-byte vectors A, B, C holding the four
// chunks' 6-bit values: chunks 0-2 are the low six bits of A, B and C (one
// AND each), chunk 3 their top two bits (Q6TOP, six instructions), nine
// in all against thirteen for ggml's ql/qh split.
//
// Registers: Z0-Z7 sumi (lanes), Z16-Z23 acc, Z8-Z11 the scales of the
// four chunks of a half, Z12/Z13/Z14 A, B, C of one lane, Z15 the
// unpacked values of chunks 0-2, Z25/Z29 products, Z26 d, Z24 0x0000ffff
// dwords, Z27 0x3f bytes, Z28 0x03 bytes, Z30 0x0f bytes.

// Q6DOT: sumi += scale · (Σ q·a over one lane of one chunk − 32·Σa).
#define Q6DOT(aoff, coff, q, sc, t, acc) \
	VPBROADCASTD  coff(R8), t \
	VPDPBUSD.BCST aoff(DI), q, t \
	VPDPWSSD      sc, t, acc

// Q6TOP: Z14 = chunk 3 from the top bits of Z12, Z13, Z14: word shifts
// bring them to bits 0-1, 2-3, 4-5 of each byte, and bit selects join them
// (0xE2 takes the bits of A, the destination, where B is set, of C
// elsewhere).
#define Q6TOP \
	VPSRLW     $6, Z12, Z12 \
	VPSRLW     $4, Z13, Z13 \
	VPSRLW     $2, Z14, Z14 \
	VPTERNLOGD $0xE2, Z13, Z28, Z12 \
	VPTERNLOGD $0xE2, Z14, Z30, Z12 \
	VPANDD     Z27, Z12, Z14

// Q6TOPG: Q6TOP in four instructions where GFNI exists: VGF2P8AFFINEQB
// moves the top two bits of A, B and C to bits 0-1, 2-3 and 4-5 of each
// byte, zero elsewhere (the bit matrices in Z28, Z30, Z31: row i, byte
// 7−i of the qword, selects the source bit of result bit i), and one
// VPTERNLOGD ORs them.
#define Q6TOPG \
	VGF2P8AFFINEQB $0, Z28, Z12, Z12 \
	VGF2P8AFFINEQB $0, Z30, Z13, Z13 \
	VGF2P8AFFINEQB $0, Z31, Z14, Z14 \
	VPTERNLOGD     $0xFE, Z13, Z12, Z14

// Q6LANE: one lane (q: its A/B/C at q(SI)) of four chunks (activations at
// a(DI), a+32, …; corrections at c(R8), c+32, …) into acc.
#define Q6LANE(q, a, c, acc) Q6LANEW(Q6TOP, q, a, c, acc)

// Q6LANEG: Q6LANE with Q6TOPG.
#define Q6LANEG(q, a, c, acc) Q6LANEW(Q6TOPG, q, a, c, acc)

#define Q6LANEW(TOP, q, a, c, acc) \
	VMOVDQU64 q(SI), Z12 \
	VMOVDQU64 q+64(SI), Z13 \
	VMOVDQU64 q+128(SI), Z14 \
	VPANDD    Z27, Z12, Z15 \
	Q6DOT(a, c, Z15, Z8, Z25, acc) \
	VPANDD    Z27, Z13, Z15 \
	Q6DOT(a+32, c+32, Z15, Z9, Z29, acc) \
	VPANDD    Z27, Z14, Z15 \
	Q6DOT(a+64, c+64, Z15, Z10, Z25, acc) \
	TOP \
	Q6DOT(a+96, c+96, Z14, Z11, Z29, acc)

// Q6SCALES: Z8-Z11 = the scales 2ch+h of chunks ch = 4j..4j+3 (int8 at
// o(SI), o+32, …), each as an int16 beside a zero word for VPDPWSSD.
#define Q6SCALES(o) \
	VPMOVSXBD o(SI), Z8 \
	VPMOVSXBD o+32(SI), Z9 \
	VPMOVSXBD o+64(SI), Z10 \
	VPMOVSXBD o+96(SI), Z11 \
	VPANDD    Z24, Z8, Z8 \
	VPANDD    Z24, Z9, Z9 \
	VPANDD    Z24, Z10, Z10 \
	VPANDD    Z24, Z11, Z11

// Q6BLOCK: one super-block of 16 rows: half j (quants at 320+1536j,
// activations 4+128j, corrections 128j), lanes 0-3 with scales 2ch, 4-7
// with 2ch+1; each lane by LANE (Q6LANE, or Q6LANEG where GFNI exists).
#define Q6BLOCK(LANE) \
	VCVTPH2PS   (SI), Z26 \
	VMULPS.BCST (DI), Z26, Z26 \
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7) \
	Q6SCALES(64) \
	LANE(320, 4, 0, Z0) \
	LANE(512, 8, 4, Z1) \
	LANE(704, 12, 8, Z2) \
	LANE(896, 16, 12, Z3) \
	Q6SCALES(80) \
	LANE(1088, 20, 16, Z4) \
	LANE(1280, 24, 20, Z5) \
	LANE(1472, 28, 24, Z6) \
	LANE(1664, 32, 28, Z7) \
	Q6SCALES(192) \
	LANE(1856, 132, 128, Z0) \
	LANE(2048, 136, 132, Z1) \
	LANE(2240, 140, 136, Z2) \
	LANE(2432, 144, 140, Z3) \
	Q6SCALES(208) \
	LANE(2624, 148, 144, Z4) \
	LANE(2816, 152, 148, Z5) \
	LANE(3008, 156, 152, Z6) \
	LANE(3200, 160, 156, Z7) \
	VCVTDQ2PS   Z0, Z0 \
	VFMADD231PS Z0, Z26, Z16 \
	VCVTDQ2PS   Z1, Z1 \
	VFMADD231PS Z1, Z26, Z17 \
	VCVTDQ2PS   Z2, Z2 \
	VFMADD231PS Z2, Z26, Z18 \
	VCVTDQ2PS   Z3, Z3 \
	VFMADD231PS Z3, Z26, Z19 \
	VCVTDQ2PS   Z4, Z4 \
	VFMADD231PS Z4, Z26, Z20 \
	VCVTDQ2PS   Z5, Z5 \
	VFMADD231PS Z5, Z26, Z21 \
	VCVTDQ2PS   Z6, Z6 \
	VFMADD231PS Z6, Z26, Z22 \
	VCVTDQ2PS   Z7, Z7 \
	VFMADD231PS Z7, Z26, Z23 \
	ADDQ $3392, SI \
	ADDQ $292, DI \
	ADDQ $256, R8

#define Q6PREFETCH \
	PF16(0) \
	PF16(1024) \
	PF16(2048) \
	PF4(3072) \
	PF1(3328)

// Q6CONST: the masks of Q6LANE (Z28 0x03 bytes, Z30 0x0f bytes).
#define Q6CONST \
	MOVL $0x03030303, AX \
	VPBROADCASTD AX, Z28 \
	MOVL $0x0f0f0f0f, AX \
	VPBROADCASTD AX, Z30

// Q6CONSTG: the bit matrices of Q6TOPG in Z28, Z30, Z31 (row i, byte 7−i
// of the qword, selects the source bit of result bit i): bits 6-7 to
// 0-1, to 2-3, to 4-5.
#define Q6CONSTG \
	MOVQ $0x4080000000000000, AX \
	VPBROADCASTQ AX, Z28 \
	MOVQ $0x0000408000000000, AX \
	VPBROADCASTQ AX, Z30 \
	MOVQ $0x0000000040800000, AX \
	VPBROADCASTQ AX, Z31

// Q6GEMV: the one-token loop over nb super-blocks of one group, each lane
// by LANE with its constants CONST; loop, nopf and done name its labels.
#define Q6GEMV(LANE, CONST, loop, nopf, done) \
	KGEMVARGS \
	MOVL $0x3f3f3f3f, AX \
	VPBROADCASTD AX, Z27 \
	MOVL $0x0000ffff, AX \
	VPBROADCASTD AX, Z24 \
	ZERO8(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23) \
	CONST \
loop: \
	TESTQ CX, CX \
	JZ    done \
	PFSKIP(nopf) \
	Q6PREFETCH \
nopf: \
	Q6BLOCK(LANE) \
	DECQ CX \
	JMP  loop \
done: \
	REDUCE16(Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, 0) \
	VZEROUPPER \
	RET

// func gemvQ6_Kx16(nb int, w, a *byte, out *float32)
TEXT ·gemvQ6_Kx16(SB), NOSPLIT, $0-32
	Q6GEMV(Q6LANE, Q6CONST, q6kloop, q6knopf, q6kdone)

// func gemvQ6_Kx16GFNI(nb int, w, a *byte, out *float32)
// gemvQ6_Kx16 with Q6LANEG: 22 vector instructions a lane of a half
// instead of 24, the same results bit for bit. On Zen 5 a one-token
// product's rate falls with the instructions its loop carries per byte
// (docs/performance.md, session 37).
TEXT ·gemvQ6_Kx16GFNI(SB), NOSPLIT, $0-32
	Q6GEMV(Q6LANEG, Q6CONSTG, q6kgloop, q6kgnopf, q6kgdone)
