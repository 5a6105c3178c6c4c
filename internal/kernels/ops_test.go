package kernels

import (
	"math"
	"testing"
)

// TestSelect: use switches an operation to a named implementation and
// back, so a test or benchmark can run the whole forward pass on one
// implementation; an unknown name is an error, not a silent no-op.
func TestSelect(t *testing.T) {
	calls := 0
	prev, n := ropeNorm.run, len(ropeNorm.impls)
	ropeNorm.register("counting", func(x, cs []float32) { calls++; ropeNormGeneric(x, cs) })
	defer func() { ropeNorm.impls, ropeNorm.run = ropeNorm.impls[:n], prev }()
	x, cs := []float32{1, 2}, []float32{float32(math.Cos(0.5)), float32(math.Sin(0.5))}
	restore, err := ropeNorm.use("generic")
	if err != nil {
		t.Fatal(err)
	}
	RopeNorm(x, cs)
	if calls != 0 {
		t.Fatal("the generic implementation was selected, but the last registered ran")
	}
	restore()
	RopeNorm(x, cs)
	if calls != 1 {
		t.Fatal("restore did not bring back the last registered implementation")
	}
	if _, err := ropeNorm.use("no such kernel"); err == nil {
		t.Fatal("selecting an unknown implementation succeeded")
	}
}
