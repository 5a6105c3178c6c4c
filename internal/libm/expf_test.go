package libm

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// TestExpfGlibc compares Expf bit for bit with glibc's expf on 6015
// arguments (testdata/gen_glibc_expf.py): 3000 of them are where glibc's
// result is not the correctly rounded one, so float32(math.Exp(x)) fails.
func TestExpfGlibc(t *testing.T) {
	b, err := os.ReadFile("testdata/glibc_expf.bin")
	if err != nil {
		t.Fatal(err)
	}
	bad, notCR := 0, 0
	for i := 0; i+8 <= len(b); i += 8 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		want := math.Float32frombits(binary.LittleEndian.Uint32(b[i+4:]))
		if float32(math.Exp(float64(x))) != want {
			notCR++
		}
		if got := Expf(x); math.Float32bits(got) != math.Float32bits(want) {
			bad++
			if bad <= 5 {
				t.Errorf("Expf(%v) = %v, glibc %v", x, got, want)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d arguments differ from glibc", bad, len(b)/8)
	}
	if notCR < 3000 {
		t.Fatalf("only %d arguments where glibc is not correctly rounded", notCR)
	}
	if !math.IsNaN(float64(Expf(float32(math.NaN())))) {
		t.Error("Expf(NaN) is not NaN")
	}
}
