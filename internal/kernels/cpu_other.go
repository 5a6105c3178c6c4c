//go:build !amd64 || purego

package kernels

// describeCPU has nothing to add where the kernels are portable Go: they
// choose between no instruction sets.
func describeCPU(*CPUInfo) {}
