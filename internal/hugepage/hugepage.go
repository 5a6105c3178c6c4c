// Package hugepage backs large arrays that are read through once per token
// — a model's weight matrices, each layer's KV cache — with transparent
// huge pages where the kernel offers them. Streaming gigabytes through
// 4 KiB pages costs a TLB walk every 4 KiB and restarts the hardware
// prefetchers at every page; 2 MiB pages remove both. Everything here is
// best effort: where the kernel has no THP (or this is not Linux) the
// arrays work exactly as before, on small pages.
package hugepage

import "unsafe"

// Size is a transparent huge page on x86-64 and arm64.
const Size = 2 << 20

// Advise asks the kernel to back the whole huge pages inside s with
// transparent huge pages (madvise MADV_HUGEPAGE) when they are first
// touched: call it on a fresh allocation, before writing it. An array
// smaller than a huge page, or an error, leaves s as it was.
func Advise[E any](s []E) {
	if len(s) == 0 {
		return
	}
	var e E
	advise(unsafe.Pointer(unsafe.SliceData(s)), uintptr(len(s))*unsafe.Sizeof(e))
}

// inner is the largest range of whole huge pages inside [start, start+n),
// as an offset from start and a length (0 when there is none).
func inner(start, n uintptr) (off, length uintptr) { return whole(start, n, Size) }

// whole is the largest range of whole pages of size page (a power of two)
// inside [start, start+n), as an offset from start and a length.
func whole(start, n, page uintptr) (off, length uintptr) {
	lo, hi := (start+page-1)&^(page-1), (start+n)&^(page-1)
	if hi <= lo {
		return 0, 0
	}
	return lo - start, hi - lo
}

// Region is memory outside the Go heap, aligned to Size and advised for
// huge pages: weights copied out of a file mapping live there for as long
// as the model. Free returns it; nothing may read it afterwards.
type Region struct {
	b   []byte // the n bytes asked for, aligned
	raw []byte // the whole mapping (nil when the region is a heap slice)
}

// Bytes is the region's memory (zeroed at Alloc).
func (r *Region) Bytes() []byte { return r.b }

// Aligned is a zeroed heap slice of n bytes that starts on a huge page
// and whose huge pages, the last partial one included, are advised (see
// Advise): an arena for arrays read through once per token, which each
// on its own would leave a part under 2 MiB, and both ends of a larger
// one, on small pages. Where the kernel has no transparent huge pages, or
// n is under a huge page, it is a plain slice. Its capacity runs to the
// end of the last huge page.
func Aligned(n int) []byte {
	if n < Size || !Enabled() {
		return make([]byte, max(n, 0))
	}
	whole := (n + Size - 1) &^ (Size - 1)
	b := make([]byte, whole+Size)
	off, _ := inner(uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)))
	b = b[off : off+uintptr(whole) : off+uintptr(whole)]
	Advise(b)
	return b[:n]
}
