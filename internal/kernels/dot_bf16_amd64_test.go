//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

func init() {
	if cpu.X86.HasAVX512BF16 {
		simdDPBF16 = dpbf16x16
	}
}
