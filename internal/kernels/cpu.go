package kernels

import (
	"fmt"
	"runtime"
	"strings"
)

// CPUInfo describes the processor the kernels were chosen for: what a
// benchmark's numbers belong to.
type CPUInfo struct {
	Arch   string `json:"arch"`
	Vendor string `json:"vendor,omitempty"` // CPUID's vendor string ("AuthenticAMD", …)
	Brand  string `json:"brand,omitempty"`  // CPUID's brand string, as the hypervisor shows it
	Family uint32 `json:"family,omitempty"` // display family (x86)
	Model  uint32 `json:"model,omitempty"`  // display model (x86)
	// Features are the instruction sets the kernels choose between that
	// this CPU has, in a fixed order.
	Features []string `json:"features"`
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

// CPU describes this machine's processor.
func CPU() CPUInfo {
	c := CPUInfo{Arch: runtime.GOARCH}
	describeCPU(&c)
	return c
}
