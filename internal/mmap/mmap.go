// Package mmap maps model files read-only: they are large and mostly read
// once per token, so a mapping lets the page cache hold them once for every
// process.
package mmap

import (
	"os"
	"unsafe"
)

// Within reports whether b is a non-empty part of m's memory: a tensor's
// bytes inside a file's mapping.
func Within(b, m []byte) bool {
	if len(b) == 0 || len(m) == 0 {
		return false
	}
	lo, p := uintptr(unsafe.Pointer(unsafe.SliceData(m))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p-lo <= uintptr(len(m)) && uintptr(len(b)) <= uintptr(len(m))-(p-lo)
}

// readWhole is the fallback where mmap is unavailable.
func readWhole(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	return b, func() error { return nil }, err
}
