//go:build !linux

package kernels

// threadCPU is not measured here (0: benchmarks report no CPU time).
func threadCPU() int64 { return 0 }
