//go:build !linux

package hugepage

import "unsafe"

func advise(unsafe.Pointer, uintptr) {}

// Release does nothing here.
func Release([]byte) {}

// Alloc is a heap slice where huge pages are not offered.
func Alloc(n int) (*Region, error) {
	if n < 0 {
		n = 0
	}
	return &Region{b: make([]byte, n)}, nil
}

// Free lets the heap take the region back.
func (r *Region) Free() error {
	r.b = nil
	return nil
}

// Enabled is false: this system has no transparent huge pages here.
func Enabled() bool { return false }

// Available is unknown here.
func Available() (int64, bool) { return 0, false }

// Advised is false: nothing is advised here.
func Advised[E any]([]E) (bool, error) { return false, nil }
