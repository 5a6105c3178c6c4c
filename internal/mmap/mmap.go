// Package mmap maps model files read-only: they are large and mostly read
// once per token, so a mapping lets the page cache hold them once for every
// process.
package mmap

import "os"

// readWhole is the fallback where mmap is unavailable.
func readWhole(path string) ([]byte, func() error, error) {
	b, err := os.ReadFile(path)
	return b, func() error { return nil }, err
}
