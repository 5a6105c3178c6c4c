//go:build unix

package mmap

import (
	"fmt"
	"os"
	"syscall"
)

// Map maps path read-only and returns the bytes, whether they are a file
// mapping (false: a copy read whole onto the heap, for what cannot be
// mapped) and the function that unmaps them.
func Map(path string) (data []byte, mapped bool, closer func() error, err error) {
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
