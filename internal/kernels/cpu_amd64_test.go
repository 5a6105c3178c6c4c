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
	if c.Vendor == "" || !strings.Contains(c.String(), "("+c.Vendor+" family") {
		t.Fatalf("CPU() = %+v: no vendor", c)
	}
	var avx512 string // the AVX-512 entry's extensions
	listed := map[string]bool{}
	for _, f := range c.Features {
		listed[f] = true
		if ext, ok := strings.CutPrefix(f, "AVX-512 "); ok {
			for _, e := range strings.Split(ext, "/") {
				avx512 += "/" + e + "/"
			}
		}
	}
	for _, f := range []struct {
		got, has bool
		name     string
	}{
		{listed["AVX2"], cpu.X86.HasAVX2, "AVX2"},
		{listed["FMA"], cpu.X86.HasFMA, "FMA"},
		{listed["F16C"], cpu.X86.HasF16C, "F16C"},
		{listed["AVX-VNNI"], cpu.X86.HasAVXVNNI, "AVX-VNNI"},
		{avx512 != "", cpu.X86.HasAVX512F, "AVX-512"},
		{strings.Contains(avx512, "/BW/"), cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW, "AVX-512 BW"},
		{strings.Contains(avx512, "/VNNI/"), cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI, "AVX-512 VNNI"},
		{strings.Contains(avx512, "/BF16/"), cpu.X86.HasAVX512F && cpu.X86.HasAVX512BF16, "AVX-512 BF16"},
		{strings.Contains(avx512, "/VBMI/"), cpu.X86.HasAVX512F && cpu.X86.HasAVX512VBMI, "AVX-512 VBMI"},
		{strings.HasPrefix(strings.Join(c.Features, " "), "AMX") || strings.Contains(strings.Join(c.Features, " "), " AMX"), cpu.X86.HasAMXTile, "AMX"},
	} {
		if f.got != f.has {
			t.Errorf("%q: %s listed %v, the CPU reports %v", c, f.name, f.got, f.has)
		}
	}
}
