//go:build amd64 && !purego

package kernels

import (
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestCPUFeatures: on x86 the description carries CPUID's vendor, and
// lists an instruction set exactly when the CPU reports it.
func TestCPUFeatures(t *testing.T) {
	c := CPU()
	s := c.String()
	if c.Vendor != cpuVendor() || c.Family != cpuFamily() || !strings.Contains(s, c.Vendor) {
		t.Fatalf("CPU() = %+v, %q: vendor %q family %#x", c, s, cpuVendor(), cpuFamily())
	}
	for _, f := range []struct {
		name string
		has  bool
	}{{" AVX2", cpu.X86.HasAVX2}, {" F16C", cpu.X86.HasF16C}, {"AVX-512 F", cpu.X86.HasAVX512F},
		{"/VNNI", cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI}, {"/BF16", cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16},
		{"AMX", cpu.X86.HasAMXTile}} {
		if got := strings.Contains(s, f.name); got != f.has {
			t.Errorf("%q: %q listed %v, the CPU reports %v", s, f.name, got, f.has)
		}
	}
}
