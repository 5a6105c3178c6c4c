//go:build amd64 && !purego

#include "textflag.h"

// func chainF16AVX512(w, lim, tail, ncol int, a *float32, v *uint16, vstride int, out *float32)
//
// For each block of 16 columns c (ncol a multiple of 16), with row j of V
// at v + j·vstride (F16) and a[j] F16-representable (exact products):
//  1. lane r < w sums a[j]·V[j][c] over j ≡ r (mod w), j < lim, with FMAs;
//  2. the w lanes are folded by halves (w/2, …, 1), lane by lane;
//  3. rows lim ≤ j < tail are added one by one in float64;
// and out[c] is the float32 result. The lanes live in a 4 KB frame.
TEXT ·chainF16AVX512(SB), 0, $4096-64
	MOVQ  w+0(FP), R8
	MOVQ  lim+8(FP), R9
	MOVQ  tail+16(FP), R10
	MOVQ  a+32(FP), SI
	MOVQ  v+40(FP), DI
	MOVQ  vstride+48(FP), R12
	MOVQ  out+56(FP), DX
	LEAQ  (SP), BX
	SHLQ  $1, R12     // row stride in bytes
	MOVQ  R12, R13
	IMULQ R8, R13     // w rows: the step of one lane's chain

block:
	MOVQ ncol+24(FP), R11
	CMPQ R11, $16
	JL   done
	XORQ CX, CX       // lane r

lane:
	CMPQ   CX, R8
	JGE    fold
	VPXORD Z0, Z0, Z0
	MOVQ   CX, AX     // j = r
	MOVQ   CX, R14
	IMULQ  R12, R14
	ADDQ   DI, R14    // &V[j]

chain:
	CMPQ         AX, R9
	JGE          chaindone
	VCVTPH2PS    (R14), Z1
	VBROADCASTSS (SI)(AX*4), Z2
	VFMADD231PS  Z2, Z1, Z0
	ADDQ         R8, AX
	ADDQ         R13, R14
	JMP          chain

chaindone:
	MOVQ    CX, AX
	SHLQ    $6, AX
	VMOVUPS Z0, (BX)(AX*1)
	INCQ    CX
	JMP     lane

fold:
	MOVQ R8, CX
	SHRQ $1, CX       // h

foldh:
	CMPQ CX, $0
	JE   folded
	MOVQ CX, R11
	SHLQ $6, R11      // h lanes in bytes
	XORQ AX, AX
	MOVQ BX, R14

foldl:
	CMPQ    AX, CX
	JGE     foldnext
	VMOVUPS (R14), Z0
	VADDPS  (R14)(R11*1), Z0, Z0
	VMOVUPS Z0, (R14)
	INCQ    AX
	ADDQ    $64, R14
	JMP     foldl

foldnext:
	SHRQ $1, CX
	JMP  foldh

folded:
	VMOVUPS (BX), Z0
	CMPQ    R10, R9
	JLE     store
	VCVTPS2PD     Y0, Z3
	VEXTRACTF32X8 $1, Z0, Y4
	VCVTPS2PD     Y4, Z4
	MOVQ          R9, AX
	MOVQ          R9, R14
	IMULQ         R12, R14
	ADDQ          DI, R14

tailloop:
	CMPQ          AX, R10
	JGE           taildone
	VCVTPH2PS     (R14), Z1
	VBROADCASTSS  (SI)(AX*4), Z2
	VMULPS        Z2, Z1, Z1
	VCVTPS2PD     Y1, Z5
	VEXTRACTF32X8 $1, Z1, Y6
	VCVTPS2PD     Y6, Z6
	VADDPD        Z5, Z3, Z3
	VADDPD        Z6, Z4, Z4
	INCQ          AX
	ADDQ          R12, R14
	JMP           tailloop

taildone:
	VCVTPD2PS    Z3, Y0
	VCVTPD2PS    Z4, Y4
	VINSERTF32X8 $1, Y4, Z0, Z0

store:
	VMOVUPS Z0, (DX)
	ADDQ    $32, DI
	ADDQ    $64, DX
	MOVQ    ncol+24(FP), R11
	SUBQ    $16, R11
	MOVQ    R11, ncol+24(FP)
	JMP     block

done:
	VZEROUPPER
	RET

// func chainF16AVX2(w, lim, tail, ncol int, a *float32, v *uint16, vstride int, out *float32)
// chainF16AVX512 on 8 columns per block (ncol a multiple of 8), lanes in a
// 2 KB frame.
TEXT ·chainF16AVX2(SB), 0, $2048-64
	MOVQ  w+0(FP), R8
	MOVQ  lim+8(FP), R9
	MOVQ  tail+16(FP), R10
	MOVQ  a+32(FP), SI
	MOVQ  v+40(FP), DI
	MOVQ  vstride+48(FP), R12
	MOVQ  out+56(FP), DX
	LEAQ  (SP), BX
	SHLQ  $1, R12     // row stride in bytes
	MOVQ  R12, R13
	IMULQ R8, R13     // w rows: the step of one lane's chain

a2block:
	MOVQ ncol+24(FP), R11
	CMPQ R11, $8
	JL   a2done
	XORQ CX, CX       // lane r

a2lane:
	CMPQ   CX, R8
	JGE    a2fold
	VXORPS Y0, Y0, Y0
	MOVQ   CX, AX     // j = r
	MOVQ   CX, R14
	IMULQ  R12, R14
	ADDQ   DI, R14    // &V[j]

a2chain:
	CMPQ         AX, R9
	JGE          a2chaindone
	VCVTPH2PS    (R14), Y1
	VBROADCASTSS (SI)(AX*4), Y2
	VFMADD231PS  Y2, Y1, Y0
	ADDQ         R8, AX
	ADDQ         R13, R14
	JMP          a2chain

a2chaindone:
	MOVQ    CX, AX
	SHLQ    $5, AX
	VMOVUPS Y0, (BX)(AX*1)
	INCQ    CX
	JMP     a2lane

a2fold:
	MOVQ R8, CX
	SHRQ $1, CX       // h

a2foldh:
	CMPQ CX, $0
	JE   a2folded
	MOVQ CX, R11
	SHLQ $5, R11      // h lanes in bytes
	XORQ AX, AX
	MOVQ BX, R14

a2foldl:
	CMPQ    AX, CX
	JGE     a2foldnext
	VMOVUPS (R14), Y0
	VADDPS  (R14)(R11*1), Y0, Y0
	VMOVUPS Y0, (R14)
	INCQ    AX
	ADDQ    $32, R14
	JMP     a2foldl

a2foldnext:
	SHRQ $1, CX
	JMP  a2foldh

a2folded:
	VMOVUPS (BX), Y0
	CMPQ    R10, R9
	JLE     a2store
	VCVTPS2PD     X0, Y3
	VEXTRACTF128  $1, Y0, X4
	VCVTPS2PD     X4, Y4
	MOVQ          R9, AX
	MOVQ          R9, R14
	IMULQ         R12, R14
	ADDQ          DI, R14

a2tailloop:
	CMPQ          AX, R10
	JGE           a2taildone
	VCVTPH2PS     (R14), Y1
	VBROADCASTSS  (SI)(AX*4), Y2
	VMULPS        Y2, Y1, Y1
	VCVTPS2PD     X1, Y5
	VEXTRACTF128  $1, Y1, X6
	VCVTPS2PD     X6, Y6
	VADDPD        Y5, Y3, Y3
	VADDPD        Y6, Y4, Y4
	INCQ          AX
	ADDQ          R12, R14
	JMP           a2tailloop

a2taildone:
	VCVTPD2PSY   Y3, X0
	VCVTPD2PSY   Y4, X4
	VINSERTF128  $1, X4, Y0, Y0

a2store:
	VMOVUPS Y0, (DX)
	ADDQ    $16, DI
	ADDQ    $32, DX
	MOVQ    ncol+24(FP), R11
	SUBQ    $8, R11
	MOVQ    R11, ncol+24(FP)
	JMP     a2block

a2done:
	VZEROUPPER
	RET
