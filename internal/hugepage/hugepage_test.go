package hugepage

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

func TestInner(t *testing.T) {
	for _, c := range []struct {
		start, n, off, length uintptr
	}{
		{0, Size, 0, Size},
		{1, Size, 0, 0},                     // straddles one boundary: no whole page
		{Size - 1, Size + 1, 1, Size},       // ends exactly at 2·Size
		{Size - 1, Size, 0, 0},              // one byte short
		{3 * Size, 5*Size + 7, 0, 5 * Size}, // tail dropped
		{3*Size + 4096, 4 * Size, Size - 4096, 3 * Size},
	} {
		off, length := inner(c.start, c.n)
		if off != c.off || length != c.length {
			t.Errorf("inner(%#x, %#x) = %#x, %#x; want %#x, %#x", c.start, c.n, off, length, c.off, c.length)
		}
	}
}

func TestMemAvailable(t *testing.T) {
	for _, c := range []struct {
		text string
		n    int64
		ok   bool
	}{
		{"MemTotal:       24683652 kB\nMemFree:         1 kB\nMemAvailable:   19179436 kB\n", 19179436 << 10, true},
		{"MemTotal:       24683652 kB\n", 0, false},
		{"MemAvailable:   12 MB\n", 0, false},
		{"MemAvailable:   -5 kB\n", 0, false},
		{"MemAvailable:   99999999999999999999 kB\n", 0, false},
		{"MemAvailable:\n", 0, false},
	} {
		n, ok := memAvailable(strings.NewReader(c.text))
		if n != c.n || ok != c.ok {
			t.Errorf("%q: %d, %v; want %d, %v", c.text, n, ok, c.n, c.ok)
		}
	}
}

// TestAlloc: a region is aligned, zeroed, writable, advised where the
// kernel has THP, and freed.
func TestAlloc(t *testing.T) {
	r, err := Alloc(3*Size + 100)
	if err != nil {
		t.Fatal(err)
	}
	b := r.Bytes()
	if len(b) != 3*Size+100 {
		t.Fatalf("len %d", len(b))
	}
	if runtime.GOOS == "linux" && uintptr(unsafe.Pointer(&b[0]))%Size != 0 {
		t.Errorf("region at %p is not aligned to %d", &b[0], Size)
	}
	for i := 0; i < len(b); i += 4096 {
		if b[i] != 0 {
			t.Fatalf("byte %d is %d", i, b[i])
		}
		b[i] = 1
	}
	if runtime.GOOS == "linux" {
		ok, err := Advised(b)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("region not advised for huge pages")
		}
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	if r.Bytes() != nil {
		t.Error("Bytes after Free")
	}
	if err := r.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
}

// TestAdvise: Advise marks the whole huge pages of a heap slice, and
// Advised tells an unadvised one apart (the check can fail).
func TestAdvise(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are Linux's")
	}
	plain := make([]uint16, 4*Size/2)
	if ok, err := Advised(plain); err != nil || ok {
		t.Fatalf("fresh heap slice: advised %v, %v", ok, err)
	}
	s := make([]uint16, 4*Size/2)
	Advise(s)
	if ok, err := Advised(s); err != nil || !ok {
		t.Fatalf("advised slice: %v, %v", ok, err)
	}
	if ok, _ := Advised(make([]byte, 100)); ok {
		t.Error("a slice without a whole huge page reported advised")
	}
}

// TestAligned: an arena starts on a huge page, has the length asked for,
// is zeroed, and its huge pages (the partial last one too) are advised
// where the kernel has THP; below a huge page it is a plain slice.
func TestAligned(t *testing.T) {
	for _, n := range []int{0, 100, Size - 1, Size, 3*Size + 100} {
		b := Aligned(n)
		if len(b) != n || cap(b) < n {
			t.Fatalf("Aligned(%d): len %d cap %d", n, len(b), cap(b))
		}
		for i := 0; i < n; i += 4096 {
			if b[i] != 0 {
				t.Fatalf("Aligned(%d)[%d] = %d, want zeroed memory", n, i, b[i])
			}
		}
		if n < Size || !Enabled() {
			continue
		}
		if p := uintptr(unsafe.Pointer(&b[0])); p%Size != 0 {
			t.Errorf("Aligned(%d) at %#x: not on a huge page", n, p)
		}
		if whole := (n + Size - 1) &^ (Size - 1); cap(b) != whole {
			t.Errorf("Aligned(%d): capacity %d, want %d (to the end of the last huge page)", n, cap(b), whole)
		}
		ok, err := Advised(b[:cap(b)])
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("Aligned(%d): huge pages not advised", n)
		}
	}
}
