package kernels

import (
	"runtime"
	"testing"
)

// TestCPU: the description names the architecture.
func TestCPU(t *testing.T) {
	c := CPU()
	s := c.String()
	if c.Arch != runtime.GOARCH || s == "" {
		t.Fatalf("CPU() = %+v, %q", c, s)
	}
	t.Log(s)
}
