package libm

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// TestSinCosGlibc compares Sinf and Cosf bit for bit with glibc's sinf and
// cosf on 6012 arguments (testdata/gen_glibc.py): half of them are ones
// where glibc's result is not the correctly rounded one, so Go's
// float32(math.Sin(x)) fails this test.
func TestSinCosGlibc(t *testing.T) {
	b, err := os.ReadFile("testdata/glibc_sincosf.bin")
	if err != nil {
		t.Fatal(err)
	}
	bad, notCR := 0, 0
	for i := 0; i+12 <= len(b); i += 12 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		s := math.Float32frombits(binary.LittleEndian.Uint32(b[i+4:]))
		c := math.Float32frombits(binary.LittleEndian.Uint32(b[i+8:]))
		if s != float32(math.Sin(float64(x))) || c != float32(math.Cos(float64(x))) {
			notCR++
		}
		gs, gc := Sinf(x), Cosf(x)
		if math.Float32bits(gs) != math.Float32bits(s) || math.Float32bits(gc) != math.Float32bits(c) {
			bad++
			if bad <= 5 {
				t.Errorf("x=%v: Sinf %v, glibc %v; Cosf %v, glibc %v", x, gs, s, gc, c)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d arguments differ from glibc", bad, len(b)/12)
	}
	if notCR < 3000 {
		t.Fatalf("only %d arguments where glibc is not correctly rounded: the data does not discriminate", notCR)
	}
}

func TestSinCosSpecial(t *testing.T) {
	for _, x := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		if s, c := Sinf(x), Cosf(x); !math.IsNaN(float64(s)) || !math.IsNaN(float64(c)) {
			t.Errorf("Sinf/Cosf(%v) = %v, %v, want NaN", x, s, c)
		}
	}
	if s := Sinf(float32(math.Copysign(0, -1))); math.Float32bits(s) != 1<<31 {
		t.Errorf("Sinf(-0) = %v, want -0", s)
	}
	if c := Cosf(0); c != 1 {
		t.Errorf("Cosf(0) = %v", c)
	}
}
