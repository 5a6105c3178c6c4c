//go:build amd64 && !purego

package kernels

import (
	"time"

	"golang.org/x/sys/cpu"
)

// The instruction roofs of one core, for benchmarks (BenchmarkPeak).

//go:noescape
func vnniPeak(iters int)

//go:noescape
func fmaPeak(iters int)

// InstructionPeaks measures, on the calling goroutine's core, the
// throughput of VPDPBUSD (8-bit multiply-adds, AVX-512 VNNI: the packed
// prefill kernels) and of VFMADD231PS zmm (the float GEMM), in billions of
// operations per second (2 per multiply-add); 0 where the CPU lacks the
// instruction. About 20 ms.
func InstructionPeaks() (int8GOPS, f32GFLOPS float64) {
	const iters = 1 << 16
	measure := func(f func(int), ops float64) float64 {
		best := 0.0
		for range 5 {
			t0 := time.Now()
			f(iters)
			best = max(best, ops*iters/time.Since(t0).Seconds()/1e9)
		}
		return best
	}
	if cpu.X86.HasAVX512VNNI {
		int8GOPS = measure(vnniPeak, 12*128)
	}
	if cpu.X86.HasAVX512F {
		f32GFLOPS = measure(fmaPeak, 12*32)
	}
	return int8GOPS, f32GFLOPS
}
