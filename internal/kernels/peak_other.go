//go:build !amd64 || purego

package kernels

// InstructionPeaks: no SIMD kernels in this build, so no roofs to report.
func InstructionPeaks() (int8GOPS, f32GFLOPS float64) { return 0, 0 }
