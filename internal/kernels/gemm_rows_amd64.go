//go:build amd64 && !purego

package kernels

//go:noescape
func gemmRowF16x4AVX2(chunks int, w, x *byte, ldx int, out *float32)

//go:noescape
func gemmRowBF16x4AVX2(chunks int, w, x *byte, ldx int, out *float32)

//go:noescape
func gemmRowF32x4AVX2(chunks int, w, x *byte, ldx int, out *float32)

// Without the AVX-512 tiles, F16, BF16 and F32 products of several tokens
// could run a row at a time on AVX2 in the tiles' order (one weight row
// against four tokens, 16 FMA lanes as two halves); the half tiles of
// gemm_avx2_amd64.go replaced them (AVX2-only Zen 3, tinyllama-1.1b F16
// prefill: see docs/performance.md) and they stay in gemmAlt, run by the
// tests.
