// Macros shared by the packed 16-row kernels.

// REDUCE16 folds the eight lane accumulators a0..a7 into a0 in ggml's
// hsum_float_8 order and stores the sixteen rows' results at (R11).
#define REDUCE16(a0, a1, a2, a3, a4, a5, a6, a7, off) \
	VADDPS a4, a0, a0 \
	VADDPS a5, a1, a1 \
	VADDPS a6, a2, a2 \
	VADDPS a7, a3, a3 \
	VADDPS a2, a0, a0 \
	VADDPS a3, a1, a1 \
	VADDPS a1, a0, a0 \
	VMOVUPS a0, off(R11)

#define ZERO8(a0, a1, a2, a3, a4, a5, a6, a7) \
	VPXORD a0, a0, a0 \
	VPXORD a1, a1, a1 \
	VPXORD a2, a2, a2 \
	VPXORD a3, a3, a3 \
	VPXORD a4, a4, a4 \
	VPXORD a5, a5, a5 \
	VPXORD a6, a6, a6 \
	VPXORD a7, a7, a7

// Software prefetch of the weights 4608 bytes (~4.5 KB) ahead of SI, one
// instruction per cache line: one core keeps more DRAM reads in flight this
// way than with its hardware prefetcher alone (1-thread Q4_K_M decode
// 22 → 30 tok/s). Each kernel covers its block's bytes once per block.
#define PF1(o) \
	PREFETCHT0 4608+o(SI)

#define PF4(o) \
	PF1(o) \
	PF1(o+64) \
	PF1(o+128) \
	PF1(o+192)

#define PF16(o) \
	PF4(o) \
	PF4(o+256) \
	PF4(o+512) \
	PF4(o+768)
