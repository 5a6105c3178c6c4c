//go:build linux

package hugepage

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"unsafe"
)

func advise(p unsafe.Pointer, n uintptr) {
	off, length := inner(uintptr(p), n)
	if length == 0 {
		return
	}
	_ = syscall.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, off)), length), syscall.MADV_HUGEPAGE)
}

// Release drops this process's mapping of the whole 4 KiB pages inside b,
// a range of a file mapping whose bytes were copied elsewhere (madvise
// MADV_DONTNEED): they leave the resident set, and a later read faults
// them back in from the page cache, the same bytes. Never for anonymous
// memory, whose pages it would zero.
func Release(b []byte) {
	if len(b) == 0 {
		return
	}
	off, length := whole(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 4096)
	if length == 0 {
		return
	}
	_ = syscall.Madvise(b[off:off+length], syscall.MADV_DONTNEED)
}

// Alloc maps n bytes of anonymous memory, aligned to Size and advised for
// huge pages before anything touches them (so each 2 MiB is faulted in as
// one page).
func Alloc(n int) (*Region, error) {
	if n <= 0 {
		return &Region{}, nil
	}
	raw, err := syscall.Mmap(-1, 0, n+Size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("hugepage: mapping %d bytes: %w", n, err)
	}
	p := unsafe.Pointer(unsafe.SliceData(raw))
	off, _ := inner(uintptr(p), uintptr(len(raw)))
	b := raw[off : off+uintptr(n) : off+uintptr(n)]
	advise(unsafe.Pointer(unsafe.SliceData(b)), uintptr(n))
	return &Region{b: b, raw: raw}, nil
}

// Free unmaps the region.
func (r *Region) Free() error {
	if r.raw == nil {
		return nil
	}
	raw := r.raw
	r.b, r.raw = nil, nil
	return syscall.Munmap(raw)
}

// Enabled reports whether the kernel backs advised memory with huge pages
// (/sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise").
func Enabled() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && (bytes.Contains(b, []byte("[always]")) || bytes.Contains(b, []byte("[madvise]")))
}

// Available is the kernel's estimate of the memory that can be allocated
// without swapping (MemAvailable, bytes); ok is false where it is unknown.
func Available() (n int64, ok bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return memAvailable(f)
}

// memAvailable reads MemAvailable from /proc/meminfo's text.
func memAvailable(f interface{ Read([]byte) (int, error) }) (int64, bool) {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok || string(k) != "MemAvailable" {
			continue
		}
		fields := bytes.Fields(v)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil || kb < 0 || kb > 1<<50 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}

// Advised reports whether every whole huge page inside s carries the
// huge-page advice (VmFlags "hg" in /proc/self/smaps); false when s holds
// no whole huge page.
func Advised[E any](s []E) (bool, error) {
	if len(s) == 0 {
		return false, nil
	}
	var e E
	p := unsafe.Pointer(unsafe.SliceData(s))
	off, length := inner(uintptr(p), uintptr(len(s))*unsafe.Sizeof(e))
	if length == 0 {
		return false, nil
	}
	lo := uintptr(p) + off
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return false, err
	}
	defer f.Close()
	// The advised range may span several mappings (madvise splits them
	// where the flags change): each one overlapping it must carry hg.
	var cur [2]uintptr
	covered, ok := uintptr(0), true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var a, b uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &a, &b); n == 2 && bytes.IndexByte([]byte(line), ' ') > 0 {
			cur = [2]uintptr{a, b}
			continue
		}
		if !bytes.HasPrefix([]byte(line), []byte("VmFlags:")) {
			continue
		}
		x, y := max(cur[0], lo), min(cur[1], lo+length)
		if x >= y {
			continue
		}
		covered += y - x
		if !bytes.Contains([]byte(line+" "), []byte(" hg ")) {
			ok = false
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return ok && covered == length, nil
}
