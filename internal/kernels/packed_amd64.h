// Macros shared by the packed 16-row kernels.

// REDUCE16 folds the eight lane accumulators a0..a7 into a0 in ggml's
// hsum_float_8 order and stores the result vector at off(R11) (sixteen rows on
// zmm; eight slots on ymm, q8ColScoresAVX2).
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

// Software prefetch of the weights R15 bytes ahead of SI, one instruction
// per cache line; each kernel covers its block's bytes once per block and
// loads R15 from prefetchAhead (prefetch_amd64.go) on entry with PFLOAD.
// How far ahead pays depends on the CPU: see prefetch_amd64.go.
#define PF1(o) \
	PREFETCHT0 o(SI)(R15*1)

// PFSKIP jumps to l, past a one-token kernel's prefetches, where
// packedPrefetch is off (prefetch_amd64.go).
#define PFSKIP(l) \
	CMPB ·packedPrefetch(SB), $0 \
	JEQ  l

#define PFLOAD \
	MOVQ ·prefetchAhead(SB), R15

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

// KGEMVARGS: a K-quant one-token kernel's arguments (nb, w, a, out) in
// CX, SI, DI and R11, the prefetch distance in R15, and R8 at the
// activations' tail (after nb Q8_K blocks of 292 bytes).
#define KGEMVARGS \
	MOVQ   nb+0(FP), CX \
	MOVQ   w+8(FP), SI \
	MOVQ   a+16(FP), DI \
	MOVQ   out+24(FP), R11 \
	PFLOAD \
	IMUL3Q $292, CX, R8 \
	ADDQ   DI, R8
