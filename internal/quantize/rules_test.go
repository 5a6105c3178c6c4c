package quantize

import "testing"

// TestFTypeNames: general.file_type values name as llama.cpp names them,
// parse back to themselves, and Q2_K_S (which pull lists and inspect
// shows, though Loom cannot write it) has its name.
func TestFTypeNames(t *testing.T) {
	for _, c := range []struct {
		ft   FType
		name string
	}{{AllF32, "F32"}, {F16, "F16"}, {BF16, "BF16"}, {Q8_0, "Q8_0"}, {Q4_K_M, "Q4_K_M"}, {IQ4_NL, "IQ4_NL"}, {Q2_K_S, "Q2_K_S"}, {FType(99), "ftype(99)"}} {
		if got := c.ft.String(); got != c.name {
			t.Errorf("FType(%d) = %q, want %q", int(c.ft), got, c.name)
		}
	}
	for _, f := range ftypes {
		if got, err := ParseFType(f.ft.String()); err != nil || got != f.ft {
			t.Errorf("ParseFType(%q) = %v, %v", f.ft, got, err)
		}
	}
}
