//go:build amd64 && !purego

#include "textflag.h"
#include "packed_amd64.h"

// func vnniPeak(iters int)
// iters rounds of twelve independent VPDPBUSD zmm (64 u8×s8 multiply-adds
// each, 128 operations): the instruction's throughput on one core, the
// roof the 8-bit prefill kernels are measured against (BenchmarkPeak).
TEXT ·vnniPeak(SB), NOSPLIT, $0-8
	MOVQ iters+0(FP), CX
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z20, Z21, Z22, Z23)
	VPTERNLOGD $0xff, Z20, Z20, Z20
	VPTERNLOGD $0xff, Z21, Z21, Z21

peakloop:
	VPDPBUSD Z20, Z21, Z0
	VPDPBUSD Z20, Z21, Z1
	VPDPBUSD Z20, Z21, Z2
	VPDPBUSD Z20, Z21, Z3
	VPDPBUSD Z20, Z21, Z4
	VPDPBUSD Z20, Z21, Z5
	VPDPBUSD Z20, Z21, Z6
	VPDPBUSD Z20, Z21, Z7
	VPDPBUSD Z20, Z21, Z8
	VPDPBUSD Z20, Z21, Z9
	VPDPBUSD Z20, Z21, Z10
	VPDPBUSD Z20, Z21, Z11
	DECQ CX
	JNZ  peakloop
	VZEROUPPER
	RET

// func fmaPeak(iters int)
// iters rounds of twelve independent VFMADD231PS zmm (16 multiply-adds,
// 32 operations each): the float roof of the F16/F32 GEMM.
TEXT ·fmaPeak(SB), NOSPLIT, $0-8
	MOVQ iters+0(FP), CX
	ZERO8(Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7)
	ZERO8(Z8, Z9, Z10, Z11, Z20, Z21, Z22, Z23)

fmaloop:
	VFMADD231PS Z20, Z21, Z0
	VFMADD231PS Z20, Z21, Z1
	VFMADD231PS Z20, Z21, Z2
	VFMADD231PS Z20, Z21, Z3
	VFMADD231PS Z20, Z21, Z4
	VFMADD231PS Z20, Z21, Z5
	VFMADD231PS Z20, Z21, Z6
	VFMADD231PS Z20, Z21, Z7
	VFMADD231PS Z20, Z21, Z8
	VFMADD231PS Z20, Z21, Z9
	VFMADD231PS Z20, Z21, Z10
	VFMADD231PS Z20, Z21, Z11
	DECQ CX
	JNZ  fmaloop
	VZEROUPPER
	RET
