//go:build !unix

package mmap

// Map reads the whole file where mmap is unavailable.
func Map(path string) ([]byte, func() error, error) { return readWhole(path) }
