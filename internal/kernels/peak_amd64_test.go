//go:build amd64 && !purego

package kernels

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// BenchmarkPeak reports one core's instruction roofs in GOP/s: 8-bit
// multiply-adds by VPDPBUSD (AVX-512 VNNI, what the packed prefill kernels
// run) and float32 FMAs (the F16/F32 GEMM), twelve independent chains each
// (2 operations per multiply-add). Prefill GFLOP/s compare against these
// times the threads.
func BenchmarkPeak(b *testing.B) {
	const iters = 1 << 16
	if cpu.X86.HasAVX512VNNI {
		b.Run("vnni-int8", func(b *testing.B) {
			for b.Loop() {
				vnniPeak(iters)
			}
			b.ReportMetric(float64(iters)*12*128*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
		})
	}
	if cpu.X86.HasAVX512F {
		b.Run("fma-f32", func(b *testing.B) {
			for b.Loop() {
				fmaPeak(iters)
			}
			b.ReportMetric(float64(iters)*12*32*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOP/s")
		})
	}
}
