//go:build amd64 && !purego

package kernels

import (
	"unsafe"

	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"golang.org/x/sys/cpu"
)

//go:noescape
func gemmTile43AVX2(chunks int, w, b *byte, c *float32, ldc, nt int)

//go:noescape
func packHalvesF16AVX2(chunks int, rows *[4]*byte, dst *byte)

//go:noescape
func packHalvesBF16AVX2(chunks int, rows *[4]*byte, dst *byte)

//go:noescape
func packHalvesF32AVX2(chunks int, rows *[4]*byte, dst *byte)

//go:noescape
func f16HalvesPanelAVX2(chunks int, x *float32, dst *byte)

//go:noescape
func f32HalvesPanelAVX2(chunks int, x *float32, dst *byte)

// The float GEMM on CPUs with AVX2 but not the AVX-512 tiles: the
// 4-row × 3-token half tiles of gemm_avx2_amd64.s, two per six-token
// panel, on halves-major operands. In gemm_float.go's terms a chunk is
// eight elements (half of a 16-element chunk) and a slot 32 bytes, so
// that a panel holds six tokens' rows of float32 and token s's slot starts
// at 32s; the layouts are
//
//	weight tile  [half][chunk16][row][8]: packHalves*
//	panel        [half][chunk16][token][8]: halvesPanelRow
//
// (halves-major: a pass reads one contiguous half of each operand).
//
// Where the AVX-512 tiles run (gemm_float_amd64.go) these stay in gemmAlt,
// so that TestFloatGemm checks them on every CPU that can run them.
func init() {
	if !(cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C) {
		return
	}
	choose := chooseGemm
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512BW {
		choose = func(t tensor.DType, g *floatGemm, alts ...*floatGemm) {
			gemmAlt[t] = append(gemmAlt[t], append([]*floatGemm{g}, alts...)...)
		}
	}
	tiles := [7]panelTile{}
	for nt := 1; nt <= panelTokens; nt++ {
		tiles[nt] = func(chunks int, w, b *byte, c *float32, ldc int) {
			gemmTile43AVX2(chunks/2, w, b, c, ldc, min(nt, 3))
			if nt > 3 {
				gemmTile43AVX2(chunks/2, w, (*byte)(unsafe.Add(unsafe.Pointer(b), 96)),
					(*float32)(unsafe.Add(unsafe.Pointer(c), 3*ldc)), ldc, nt-3)
			}
		}
	}
	pack := func(k func(chunks int, rows *[4]*byte, dst *byte)) func(int, *[4]*byte, *byte) {
		return func(n int, rows *[4]*byte, dst *byte) { k(n/16, rows, dst) }
	}
	asmPanel := func(k func(chunks int, x *float32, dst *byte)) func(dst []byte, x []float32) {
		return func(dst []byte, x []float32) {
			n := len(x)
			if n == 0 {
				return
			}
			_ = dst[(2*n/16-1)*panelTokens*32+31] // the last high half
			k(n/16, &x[0], &dst[0])
		}
	}
	half := func(name string) *floatGemm {
		return &floatGemm{name: name, chunk: 8, rowEl: 32, slot: 32, halves: true, tiles: tiles}
	}
	f16, bf16, f32 := half("avx2 4×3 halves"), half("avx2 4×3 halves"), half("avx2 4×3 halves")
	f16.pack, f16.panel = pack(packHalvesF16AVX2), asmPanel(f16HalvesPanelAVX2)
	bf16.pack, bf16.panel = pack(packHalvesBF16AVX2), func(dst []byte, x []float32) { halvesPanelRow(dst, x, roundBF16) }
	f32.pack, f32.panel = pack(packHalvesF32AVX2), asmPanel(f32HalvesPanelAVX2)
	// The row-at-a-time kernels (gemm_rows_amd64.go) stay for the tests.
	choose(tensor.F16, f16, &floatGemm{name: "avx2 rows ×4", row4: gemmRowF16x4AVX2})
	choose(tensor.BF16, bf16, &floatGemm{name: "avx2 rows ×4", row4: gemmRowBF16x4AVX2})
	choose(tensor.F32, f32, &floatGemm{name: "avx2 rows ×4", row4: gemmRowF32x4AVX2})
}

func roundBF16(v float32) float32 { return quant.BF16ToF32(quant.F32ToBF16(v)) }
