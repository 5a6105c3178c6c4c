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
