package kernels

import (
	"runtime"
	"testing"
)

// TestCPU: the description names the architecture.
func TestCPU(t *testing.T) {
	c := CPU()
	if c.Arch != runtime.GOARCH || c.String() == "" {
		t.Fatalf("CPU() = %+v, %q", c, c.String())
	}
	t.Log(c)
}

// TestFamilyModel decodes known CPUID signatures (leaf 1 EAX) into the
// family and model Linux reports for them.
func TestFamilyModel(t *testing.T) {
	for _, c := range []struct {
		eax, family, model uint32
		what               string
	}{
		{0x00A10F11, 0x19, 0x11, "AMD Zen 4 EPYC (Genoa)"},
		{0x00B00F21, 0x1A, 0x02, "AMD Zen 5"},
		{0x00830F10, 0x17, 0x31, "AMD Zen 2 EPYC (Rome)"},
		{0x000806F8, 0x6, 0x8F, "Intel Sapphire Rapids"},
		{0x00050657, 0x6, 0x55, "Intel Cascade Lake"},
		{0x000006FB, 0x6, 0x0F, "Intel Core 2"},
		{0x00000F29, 0xF, 0x02, "Intel Pentium 4"},
		{0x000107B5, 0x7, 0x1B, "Zhaoxin KX-6000"},
		{0x00000543, 0x5, 0x04, "Pentium MMX (no extended model below family 6)"},
	} {
		if f, m := familyModel(c.eax); f != c.family || m != c.model {
			t.Errorf("%s %#08x: family %#x model %#x, want %#x %#x", c.what, c.eax, f, m, c.family, c.model)
		}
	}
}

// TestBrandString decodes the three brand leaves' registers in order,
// bytes little-endian, cut at the first NUL.
func TestBrandString(t *testing.T) {
	text := "  AMD EPYC 9R14 96-Core Processor\x00junk"
	var regs [12]uint32
	b := []byte(text + string(make([]byte, 48-len(text))))
	for i := range regs {
		regs[i] = uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24
	}
	if got, want := brandString(regs), "AMD EPYC 9R14 96-Core Processor"; got != want {
		t.Fatalf("brandString = %q, want %q", got, want)
	}
}
