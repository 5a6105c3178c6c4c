//go:build amd64 && !purego

package kernels

import (
	"golang.org/x/sys/cpu"
)

//go:noescape
func gemmBF16x4x1(chunks int, w, b *byte, c *float32, ldc int)

//go:noescape
func gemmBF16x4x2(chunks int, w, b *byte, c *float32, ldc int)

//go:noescape
func gemmBF16x4x3(chunks int, w, b *byte, c *float32, ldc int)

//go:noescape
func gemmBF16x4x4(chunks int, w, b *byte, c *float32, ldc int)

//go:noescape
func gemmBF16x4x5(chunks int, w, b *byte, c *float32, ldc int)

//go:noescape
func gemmBF16x4x6(chunks int, w, b *byte, c *float32, ldc int)

// bf16DotGemm is the float GEMM of VDPBF16PS tiles for BF16 weights
// (bf16.go, gemm_bf16_amd64.s: 32 elements per chunk, 64 bytes per row's
// chunk in bf16Pairs' layout), or nil on a CPU without AVX512_BF16.
// gemm_float_amd64.go's init chooses between it and the widened tiles.
func bf16DotGemm() *floatGemm {
	if !(cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BF16) {
		return nil
	}
	return &floatGemm{name: "avx512-bf16 4×6", chunk: 32, rowEl: 64, slot: 64,
		tiles: [7]panelTile{1: gemmBF16x4x1, 2: gemmBF16x4x2, 3: gemmBF16x4x3, 4: gemmBF16x4x4, 5: gemmBF16x4x5, 6: gemmBF16x4x6},
		pack:  packBF16x4, panel: panelWriter(32, 64, bf16PanelAVX512), prefetch: prefetchRows}
}
