//go:build amd64 && !purego

package kernels

import (
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func gemmRowF16x4AVX2(chunks int, w, x *byte, ldx int, out *float32)

//go:noescape
func gemmRowBF16x4AVX2(chunks int, w, x *byte, ldx int, out *float32)

//go:noescape
func gemmRowF32x4AVX2(chunks int, w, x *byte, ldx int, out *float32)

// Without the AVX-512 tiles (gemm_float_amd64.go), F16, BF16 and F32
// products of several tokens run a row at a time on AVX2 in the tiles'
// order; the portable GEMM they fell back to made an AVX2-only Zen 3's
// F16 prefill hundreds of times slower than its decode.
func init() {
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW {
		return // the tiles' condition
	}
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return
	}
	registerGemm(tensor.F16, &floatGemm{name: "avx2 rows ×4", row4: gemmRowF16x4AVX2})
	registerGemm(tensor.BF16, &floatGemm{name: "avx2 rows ×4", row4: gemmRowBF16x4AVX2})
	registerGemm(tensor.F32, &floatGemm{name: "avx2 rows ×4", row4: gemmRowF32x4AVX2})
}
