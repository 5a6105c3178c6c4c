package engine

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/kernels"
)

// hugeReserve is the memory left available after the copy: the KV cache,
// the runner's buffers and the rest of the system come out of it.
const hugeReserve = 1 << 30

// moveWeights copies the weight matrices that every token reads from the
// model files' mappings (holds: the bytes lie in one; a tensor converted
// onto the heap stays there) — those not repacked at load (kernels.Matrix.Packed):
// F16, BF16 and F32 weights, the K-quants, a tied LM head — into memory
// backed by transparent huge pages. A file mapping (tmpfs, or a page cache
// filled by writing the file) is made of 4 KiB pages, and streaming
// gigabytes through them costs a TLB walk and a restart of the hardware
// prefetchers every 4 KiB: on a 2-core Zen 4, alternating pairs of
// tinyllama-1.1b F16 decoded 3% (one thread) and 5% (two) faster from the
// copy than in place, medians; the repacked Q4_0 and Q8_0 files 6–8%
// (kernels.Matrix.Pack advises its copy likewise).
//
// It is skipped, leaving the weights in the mapping (llama.cpp's --mmap),
// when opts.WeightsInPlace asks so, where the kernel has no transparent
// huge pages, or when the copy would leave less than hugeReserve of the
// available memory (a tmpfs file's pages stay resident beside their copy).
// Load time, before the runner exists: nothing reads the matrices yet.
func (e *Engine) moveWeights(opts Options, holds func([]byte) bool) {
	if opts.WeightsInPlace || !hugepage.Enabled() {
		return
	}
	var ms []*kernels.Matrix
	moved := map[uintptr][]byte{} // by the bytes' address: matrices sharing them are copied once
	total := 0
	for _, m := range e.matrices() {
		if m.Packed() || len(m.Data) == 0 || !holds(m.Data) {
			continue
		}
		if _, ok := moved[dataAddr(m)]; ok {
			continue
		}
		moved[dataAddr(m)] = nil
		ms = append(ms, m)
		total += alignUp(len(m.Data))
	}
	if total == 0 {
		return
	}
	if avail, ok := hugepage.Available(); !ok || int64(total)+hugeReserve > avail {
		return
	}
	r, err := hugepage.Alloc(total)
	if err != nil {
		return // the mapping still serves: a copy is only faster
	}
	dst, off := r.Bytes(), 0
	to := make([][]byte, len(ms))
	for i, m := range ms {
		n := len(m.Data)
		to[i] = dst[off : off+n : off+n]
		off += alignUp(n)
		moved[dataAddr(m)] = to[i]
	}
	// The threads copy matrices in turn: faulting in and zeroing the huge
	// pages is the kernel's work per page, so more than one thread
	// shortens a load of gigabytes.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), 4)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(ms); i = int(next.Add(1) - 1) {
				copy(to[i], ms[i].Data)
				// The mapping's pages of the copied bytes leave this
				// process (they stay in the page cache, or in tmpfs):
				// its resident set counts the copy, not both.
				hugepage.Release(ms[i].Data)
			}
		})
	}
	wg.Wait()
	for _, m := range e.matrices() {
		if to, ok := moved[dataAddr(m)]; ok && len(to) == len(m.Data) && !m.Packed() {
			m.Data = to
		}
	}
	e.weights = r
}

// dataAddr is where m's bytes start.
func dataAddr(m *kernels.Matrix) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(m.Data))) }

// alignUp rounds n up to a cache line, so each matrix starts on one.
func alignUp(n int) int { return (n + 63) &^ 63 }

// HugePageWeights is how many bytes of weights were copied into memory
// backed by huge pages at load (0: every weight is read from the file's
// mapping; see Options.WeightsInPlace).
func (e *Engine) HugePageWeights() int64 {
	if e.weights == nil {
		return 0
	}
	return int64(len(e.weights.Bytes()))
}

// RepackedWeights is how many bytes of weights (as the file stores them)
// belong to matrices whose products read a copy repacked at load into
// their kernels' layout (packed groups; memory of its own, advised for
// huge pages), not the bytes above: those matrices never read either.
func (e *Engine) RepackedWeights() int64 {
	var n int64
	for _, m := range e.matrices() {
		if m.Packed() {
			n += int64(len(m.Data))
		}
	}
	return n
}

// freeWeights returns the copied weights' memory (Close, after the runner).
func (e *Engine) freeWeights() {
	if e.weights != nil {
		_ = e.weights.Free()
		e.weights = nil
	}
}
