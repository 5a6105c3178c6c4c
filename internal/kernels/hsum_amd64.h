// HSUM reduces the eight float lanes of Y0 to X0 lane 0 in the order of
// ggml's hsum_float_8: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). Clobbers X1.
#define HSUM \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1 \
	VADDSS       X1, X0, X0

// HSUMD adds the eight int32 lanes of yy into lane 0 of xx (yy's lower
// half). Clobbers xt.
#define HSUMD(yy, xx, xt) \
	VEXTRACTI128 $1, yy, xt \
	VPADDD       xt, xx, xx \
	VPSHUFD      $0x4e, xx, xt \
	VPADDD       xt, xx, xx \
	VPSHUFD      $0xb1, xx, xt \
	VPADDD       xt, xx, xx

// REDUCE512Y: X0 = GGML_F32x16_REDUCE of four 16-lane accumulators Z0..Z3
// held as 8-lane halves Y0..Y7 (Zi = Y(2i) low, Y(2i+1) high): (Z0+Z2) +
// (Z1+Z3), then _mm512_reduce_add_ps's halving tree, the same additions in
// the same order as on AVX-512, so the same bits. Clobbers Y1.
#define REDUCE512Y \
	VADDPS Y4, Y0, Y0 \
	VADDPS Y5, Y1, Y1 \
	VADDPS Y6, Y2, Y2 \
	VADDPS Y7, Y3, Y3 \
	VADDPS Y2, Y0, Y0 \
	VADDPS Y3, Y1, Y1 \
	VADDPS Y1, Y0, Y0 \
	HSUM

// ZEROY8 clears the accumulators Y0..Y7.
#define ZEROY8 \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7

// ROWS4ARGS loads a four-row kernel's arguments (nb int, x0, x1, x2, x3,
// y *byte, out *float32): CX blocks, the rows in SI, R8, R9, R10, the
// activations in DI, out in R11.
#define ROWS4ARGS \
	MOVQ nb+0(FP), CX \
	MOVQ x0+8(FP), SI \
	MOVQ x1+16(FP), R8 \
	MOVQ x2+24(FP), R9 \
	MOVQ x3+32(FP), R10 \
	MOVQ y+40(FP), DI \
	MOVQ out+48(FP), R11
