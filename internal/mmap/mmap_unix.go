//go:build unix

package mmap

import (
	"fmt"
	"os"
	"syscall"
)

// Map maps path read-only and returns the bytes and the function that
// unmaps them (a copy read whole for what cannot be mapped).
func Map(path string) ([]byte, func() error, error) {
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
