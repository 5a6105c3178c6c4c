package kernels

// RoPE rotations as ggml_rope computes them. ggml's C is compiled by GCC in
// GNU C mode, where -ffp-contract=fast turns each rotated value's
// a·b − c·d into one fused multiply-add of the first product with the
// rounded second: out0 = fma(x0, cos, −(x1·sin)), out1 = fma(x0, sin,
// x1·cos). Evaluating the two products separately (two roundings) changes
// the last bit of about one value in eight, which llama.cpp's recordings
// show from the first positions on.

func ropeNormGeneric(x, cs []float32) {
	cs = cs[:len(x)]
	for i := 0; i+1 < len(x); i += 2 {
		c, s := cs[i], cs[i+1]
		x0, x1 := x[i], x[i+1]
		x[i] = FMA32(x0, c, -(x1 * s))
		x[i+1] = FMA32(x0, s, x1*c)
	}
}

func ropeNeoXGeneric(x, c, s []float32) {
	h := len(x) / 2
	c, s = c[:h], s[:h]
	for i := 0; i < h; i++ {
		x0, x1 := x[i], x[i+h]
		x[i] = FMA32(x0, c[i], -(x1 * s[i]))
		x[i+h] = FMA32(x0, s[i], x1*c[i])
	}
}
