//go:build unix

package gguf

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps path read-only. Model files are large and mostly read once per
// token: a mapping lets the page cache hold them once for every process.
func mapFile(path string) ([]byte, func() error, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	if size != int64(int(size)) {
		return nil, nil, fmt.Errorf("%s: file too large to map (%d bytes)", path, size)
	}
	if !st.Mode().IsRegular() {
		return readWhole(path)
	}
	data, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readWhole(path)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
