//go:build !unix

package mmap

// Map reads the whole file where mmap is unavailable: never a mapping.
func Map(path string) ([]byte, bool, func() error, error) {
	data, closer, err := readWhole(path)
	return data, false, closer, err
}
