//go:build amd64 && !purego

#include "textflag.h"

// func chainF16AVX512(w, lim, tail, ncol int, a *float32, v *uint16, off *int32, out *float32)
// func chainF16AVX2  (same arguments)
//
// For each block of C columns c (C = 16 with AVX-512, 8 with AVX2; ncol a
// multiple of C), with row j of V at v + 2·off[j] (F16; the offsets let a
// paged cache's rows lie anywhere) and a[j] F16-representable (exact
// products):
//  1. lane r < w sums a[j]·V[j][c] over j ≡ r (mod w), j < lim, with FMAs;
//  2. the w lanes are folded by halves (w/2, …, 1), lane by lane;
//  3. rows lim ≤ j < tail are added one by one in float64;
// and out[c] is the float32 result. The w ≤ 64 lanes live in the frame.
//
// CHAIN is the body of both; V0..V6 are the vector registers (Z or Y),
// LSH log2 of a lane's bytes, CB a block's F16 bytes, and TAILBEGIN /
// TAILADD / TAILEND the float64 steps, defined per width before each use.
#define CHAIN(V0, V1, V2, LSH, CB) \
	MOVQ  w+0(FP), R8 \
	MOVQ  lim+8(FP), R9 \
	MOVQ  tail+16(FP), R10 \
	MOVQ  a+32(FP), SI \
	MOVQ  v+40(FP), DI \
	MOVQ  off+48(FP), R12 \ // row offsets (int32, in F16 elements)
	MOVQ  out+56(FP), DX \
	LEAQ  (SP), BX \
block: \
	MOVQ ncol+24(FP), R11 \
	CMPQ R11, $(CB/2) \
	JL   done \
	XORQ CX, CX \ // lane r
lane: \
	CMPQ   CX, R8 \
	JGE    fold \
	VXORPS V0, V0, V0 \
	MOVQ   CX, AX \ // j = r
chain: \
	CMPQ         AX, R9 \
	JGE          chaindone \
	MOVLQSX      (R12)(AX*4), R14 \ // off[j]
	VCVTPH2PS    (DI)(R14*2), V1 \
	VBROADCASTSS (SI)(AX*4), V2 \
	VFMADD231PS  V2, V1, V0 \
	ADDQ         R8, AX \
	JMP          chain \
chaindone: \
	MOVQ    CX, AX \
	SHLQ    $LSH, AX \
	VMOVUPS V0, (BX)(AX*1) \
	INCQ    CX \
	JMP     lane \
fold: \
	MOVQ R8, CX \
	SHRQ $1, CX \ // h
foldh: \
	CMPQ CX, $0 \
	JE   folded \
	MOVQ CX, R11 \
	SHLQ $LSH, R11 \ // h lanes in bytes
	XORQ AX, AX \
	MOVQ BX, R14 \
foldl: \
	CMPQ    AX, CX \
	JGE     foldnext \
	VMOVUPS (R14), V0 \
	VADDPS  (R14)(R11*1), V0, V0 \
	VMOVUPS V0, (R14) \
	INCQ    AX \
	ADDQ    $(1<<LSH), R14 \
	JMP     foldl \
foldnext: \
	SHRQ $1, CX \
	JMP  foldh \
folded: \
	VMOVUPS (BX), V0 \
	CMPQ    R10, R9 \
	JLE     store \
	TAILBEGIN \
	MOVQ    R9, AX \
tailloop: \
	CMPQ         AX, R10 \
	JGE          taildone \
	MOVLQSX      (R12)(AX*4), R14 \
	VCVTPH2PS    (DI)(R14*2), V1 \
	VBROADCASTSS (SI)(AX*4), V2 \
	VMULPS       V2, V1, V1 \
	TAILADD \
	INCQ         AX \
	JMP          tailloop \
taildone: \
	TAILEND \
store: \
	VMOVUPS V0, (DX) \
	ADDQ    $CB, DI \
	ADDQ    $(2*CB), DX \
	MOVQ    ncol+24(FP), R11 \
	SUBQ    $(CB/2), R11 \
	MOVQ    R11, ncol+24(FP) \
	JMP     block \
done: \
	VZEROUPPER \
	RET

// AVX-512: 16 columns; float64 halves in Z3 (columns 0-7) and Z4 (8-15).
#define TAILBEGIN \
	VCVTPS2PD     Y0, Z3 \
	VEXTRACTF32X8 $1, Z0, Y4 \
	VCVTPS2PD     Y4, Z4
#define TAILADD \
	VCVTPS2PD     Y1, Z5 \
	VEXTRACTF32X8 $1, Z1, Y6 \
	VCVTPS2PD     Y6, Z6 \
	VADDPD        Z5, Z3, Z3 \
	VADDPD        Z6, Z4, Z4
#define TAILEND \
	VCVTPD2PS    Z3, Y0 \
	VCVTPD2PS    Z4, Y4 \
	VINSERTF32X8 $1, Y4, Z0, Z0

TEXT ·chainF16AVX512(SB), 0, $4096-64
	CHAIN(Z0, Z1, Z2, 6, 32)

#undef TAILBEGIN
#undef TAILADD
#undef TAILEND

// AVX2: 8 columns; float64 halves in Y3 (columns 0-3) and Y4 (4-7).
#define TAILBEGIN \
	VCVTPS2PD    X0, Y3 \
	VEXTRACTF128 $1, Y0, X4 \
	VCVTPS2PD    X4, Y4
#define TAILADD \
	VCVTPS2PD    X1, Y5 \
	VEXTRACTF128 $1, Y1, X6 \
	VCVTPS2PD    X6, Y6 \
	VADDPD       Y5, Y3, Y3 \
	VADDPD       Y6, Y4, Y4
#define TAILEND \
	VCVTPD2PSY   Y3, X0 \
	VCVTPD2PSY   Y4, X4 \
	VINSERTF128  $1, X4, Y0, Y0

TEXT ·chainF16AVX2(SB), 0, $2048-64
	CHAIN(Y0, Y1, Y2, 5, 16)
