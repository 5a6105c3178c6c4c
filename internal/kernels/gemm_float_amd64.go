//go:build amd64 && !purego

package kernels

import (
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func gemmF16x4x6(k int, a *byte, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func gemmF16x4x1(k int, a *byte, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func gemmF32x4x6(k int, a *byte, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func gemmF32x4x1(k int, a *byte, lda int, b *float32, ldb int, c *float32, ldc int)

// floatTile wraps an assembly tile of 4 rows × toks tokens with the bounds
// checks that keep its pointer arithmetic inside the slices.
func floatTile(esz, toks int, f func(k int, a *byte, lda int, b *float32, ldb int, c *float32, ldc int)) floatKernel {
	return func(k int, a []byte, lda int, b []float32, ldb int, c []float32, ldc int) {
		_ = a[3*lda+esz*k-1]
		_ = b[((toks-1)*ldb)/4+k-1]
		_ = c[((toks-1)*ldc)/4+3]
		f(k, &a[0], lda, &b[0], ldb, &c[0], ldc)
	}
}

func init() {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL) {
		return
	}
	registerGemm(tensor.F16, &floatGemm{name: "avx512 4×6",
		x4x6: floatTile(2, 6, gemmF16x4x6), x4x1: floatTile(2, 1, gemmF16x4x1)})
	registerGemm(tensor.F32, &floatGemm{name: "avx512 4×6",
		x4x6: floatTile(4, 6, gemmF32x4x6), x4x1: floatTile(4, 1, gemmF32x4x1)})
}
