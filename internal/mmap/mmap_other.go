//go:build !unix

package mmap

// Map reads the whole file where mmap is unavailable.
func Map(path string) ([]byte, func() error, error) { return readWhole(path) }

// MapFile is Map; the bytes are never a file mapping here.
func MapFile(path string) ([]byte, bool, func() error, error) {
	data, closer, err := readWhole(path)
	return data, false, closer, err
}
