//go:build amd64 && !purego

package kernels

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// describeCPU fills in CPUID's vendor, brand string, family and model, and
// the SIMD instruction sets (CPUInfo.Features).
func describeCPU(c *CPUInfo) {
	c.Vendor = cpuVendor()
	a, _, _, _ := cpuid(1, 0)
	c.Family, c.Model = familyModel(a)
	if top, _, _, _ := cpuid(0x80000000, 0); top >= 0x80000004 && top < 0x8000ffff {
		var regs [12]uint32
		for i := range 3 {
			regs[4*i], regs[4*i+1], regs[4*i+2], regs[4*i+3] = cpuid(0x80000002+uint32(i), 0)
		}
		c.Brand = brandString(regs)
	}
	_, _, ecx7, edx7 := cpuid(7, 0)
	x := cpu.X86
	add := func(has bool, name string) {
		if has {
			c.Features = append(c.Features, name)
		}
	}
	add(x.HasAVX2, "AVX2")
	add(x.HasFMA, "FMA")
	add(x.HasF16C, "F16C")
	if x.HasAVX512F {
		sub := []string{"F"}
		for _, f := range []struct {
			has  bool
			name string
		}{{x.HasAVX512DQ, "DQ"}, {x.HasAVX512BW, "BW"}, {x.HasAVX512VL, "VL"}, {x.HasAVX512VNNI, "VNNI"},
			{x.HasAVX512BF16, "BF16"}, {x.HasAVX512VBMI, "VBMI"}, {x.HasAVX512VBMI2, "VBMI2"},
			{edx7>>23&1 == 1, "FP16"}} { // CPUID.7.0:EDX[23] AVX512-FP16
			if f.has {
				sub = append(sub, f.name)
			}
		}
		c.Features = append(c.Features, "AVX-512 "+strings.Join(sub, "/"))
	}
	add(x.HasAVXVNNI, "AVX-VNNI")
	add(ecx7>>8&1 == 1, "GFNI") // CPUID.7.0:ECX[8], with or without AVX-512
	if x.HasAMXTile {
		amx := []string{"TILE"}
		if x.HasAMXInt8 {
			amx = append(amx, "INT8")
		}
		if x.HasAMXBF16 {
			amx = append(amx, "BF16")
		}
		c.Features = append(c.Features, "AMX "+strings.Join(amx, "/"))
	}
}
