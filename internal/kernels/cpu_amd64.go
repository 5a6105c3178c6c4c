//go:build amd64 && !purego

package kernels

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// describeCPU fills in CPUID's vendor, brand string, family and model, and
// the instruction sets of the kernels' choices.
func describeCPU(c *CPUInfo) {
	c.Vendor = cpuVendor()
	c.Family = cpuFamily()
	a, _, _, _ := cpuid(1, 0)
	c.Model = a >> 4 & 0xf
	if f := a >> 8 & 0xf; f == 0x6 || f == 0xf {
		c.Model += (a >> 16 & 0xf) << 4
	}
	if top, _, _, _ := cpuid(0x80000000, 0); top >= 0x80000004 {
		var brand []byte
		for leaf := uint32(0x80000002); leaf <= 0x80000004; leaf++ {
			a, b, cx, d := cpuid(leaf, 0)
			for _, r := range []uint32{a, b, cx, d} {
				brand = append(brand, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
			}
		}
		c.Brand = strings.Join(strings.Fields(strings.TrimRight(string(brand), "\x00")), " ")
	}
	x := cpu.X86
	for _, f := range []struct {
		has  bool
		name string
	}{{x.HasAVX2, "AVX2"}, {x.HasFMA, "FMA"}, {x.HasF16C, "F16C"}, {x.HasAVXVNNI, "AVX-VNNI"}} {
		if f.has {
			c.Features = append(c.Features, f.name)
		}
	}
	if x.HasAVX512F {
		var sub []string
		_, _, _, d7 := cpuid(7, 0)
		for _, f := range []struct {
			has  bool
			name string
		}{{true, "F"}, {x.HasAVX512DQ, "DQ"}, {x.HasAVX512BW, "BW"}, {x.HasAVX512VL, "VL"}, {x.HasAVX512VNNI, "VNNI"},
			{x.HasAVX512BF16, "BF16"}, {x.HasAVX512VBMI, "VBMI"}, {x.HasAVX512VBMI2, "VBMI2"},
			{d7>>23&1 == 1 && x.HasAVX512BW, "FP16"}} {
			if f.has {
				sub = append(sub, f.name)
			}
		}
		c.Features = append(c.Features, "AVX-512 "+strings.Join(sub, "/"))
	}
	if x.HasAVX512GFNI {
		c.Features = append(c.Features, "GFNI")
	}
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
