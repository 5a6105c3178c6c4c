package kernels

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// CPUInfo describes the processor the kernels were chosen for: what a
// benchmark's numbers belong to.
type CPUInfo struct {
	Arch   string
	Vendor string // CPUID's vendor string ("AuthenticAMD", …); empty off x86
	Brand  string // CPUID's brand string, as the hypervisor shows it
	Family uint32 // display family (x86)
	Model  uint32 // display model (x86)
	// Features are the SIMD instruction sets that bear on the kernels,
	// in a fixed order: those they choose between (AVX2, FMA, F16C,
	// AVX-512 F/DQ/BW/VL/VNNI/BF16) and the ones a reader of a
	// benchmark asks about next (AVX-512 VBMI/VBMI2/FP16, GFNI,
	// AVX-VNNI, AMX). Empty where the kernels are portable Go.
	Features []string
}

// String is one line: "AMD EPYC (AuthenticAMD family 0x19 model 0x11):
// AVX2 FMA F16C AVX-512 F/DQ/BW/VL/VNNI/BF16 …".
func (c CPUInfo) String() string {
	var b strings.Builder
	name := c.Brand
	if name == "" {
		name = c.Arch
	}
	b.WriteString(name)
	if c.Vendor != "" {
		fmt.Fprintf(&b, " (%s family %#x model %#x)", c.Vendor, c.Family, c.Model)
	}
	b.WriteString(":")
	if len(c.Features) == 0 {
		b.WriteString(" no SIMD the kernels use")
	}
	for _, f := range c.Features {
		b.WriteString(" " + f)
	}
	return b.String()
}

// CPU describes this machine's processor (read once per process).
func CPU() CPUInfo {
	c := cpuOnce()
	c.Features = slices.Clone(c.Features)
	return c
}

var cpuOnce = sync.OnceValue(func() CPUInfo {
	c := CPUInfo{Arch: runtime.GOARCH}
	describeCPU(&c)
	return c
})

// familyModel decodes CPUID leaf 1's EAX into the display family and model
// as Linux's x86_family and x86_model do: the extended family is added to
// a base family of 0Fh, the extended model to any display family of 6 or
// more (Intel's family 6, AMD's 0Fh and up, Zhaoxin's 7).
func familyModel(eax uint32) (family, model uint32) {
	family = eax >> 8 & 0xf
	if family == 0xf {
		family += eax >> 20 & 0xff
	}
	model = eax >> 4 & 0xf
	if family >= 6 {
		model += (eax >> 16 & 0xf) << 4
	}
	return family, model
}

// brandString decodes CPUID leaves 0x80000002–4 (EAX, EBX, ECX, EDX each,
// little-endian): the text up to the first NUL, runs of spaces folded.
func brandString(regs [12]uint32) string {
	var b []byte
	for _, r := range regs {
		b = append(b, byte(r), byte(r>>8), byte(r>>16), byte(r>>24))
	}
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}
