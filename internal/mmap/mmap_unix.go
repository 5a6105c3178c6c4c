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
	data, _, closer, err := MapFile(path)
	return data, closer, err
}

// MapFile is Map that also says whether the bytes are a file mapping
// (false: a copy on the heap, read whole).
func MapFile(path string) (data []byte, mapped bool, closer func() error, err error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, false, nil, err
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, false, nil, err
	}
	size := st.Size()
	if size == 0 {
		return []byte{}, false, func() error { return nil }, nil
	}
	if size != int64(int(size)) {
		return nil, false, nil, fmt.Errorf("%s: file too large to map (%d bytes)", path, size)
	}
	if !st.Mode().IsRegular() {
		data, closer, err = readWhole(path)
		return data, false, closer, err
	}
	data, err = syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		data, closer, err = readWhole(path)
		return data, false, closer, err
	}
	return data, true, func() error { return syscall.Munmap(data) }, nil
}
