package kernels

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"unsafe"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestPackedHugePages: a repacked copy, read through once per token,
// carries the huge-page advice over the huge pages it holds.
func TestPackedHugePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("huge pages are Linux's")
	}
	const rows, cols = 2048, 2048 // 4.25 MiB of Q8_0: whole huge pages inside
	m, err := NewMatrix("w", tensor.Q8_0, rows, cols, make([]byte, rows*cols/32*34))
	if err != nil {
		t.Fatal(err)
	}
	m.Pack()
	if !m.Packed() {
		t.Skip("no packed Q8_0 kernels on this CPU")
	}
	ok, err := hugepage.Advised(m.packed)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("packed copy of %d bytes not advised for huge pages", len(m.packed))
	}
}

// TestPackAll: PackAll packs what Pack packs, once per matrix, into one
// arena that starts on a huge page (where the kernel has THP) and is
// advised for huge pages over its whole span, each copy on a cache line;
// every product equals the one on a matrix packed alone, bit for bit.
// The copies (4.9 MB) span whole huge pages.
func TestPackAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	shapes := []struct {
		typ        tensor.DType
		rows, cols int
	}{
		{tensor.Q4_0, 2048, 2048}, {tensor.Q8_0, 256, 512}, {tensor.Q4_K, 48, 512},
		{tensor.Q6_K, 1040, 256}, {tensor.Q8_0, 8, 64}, {tensor.F16, 64, 64}, {tensor.Q4_0, 35, 64},
	}
	var all, alone []*Matrix
	for _, s := range shapes {
		a, b := randomMatrix(t, rng, s.typ, s.rows, s.cols), randomMatrix(t, rng, s.typ, s.rows, s.cols)
		copy(b.Data, a.Data)
		b.Pack()
		all, alone = append(all, a), append(alone, b)
	}
	PackAll(append(all, all[0])) // listed twice: packed once
	var spans [][]byte
	for i, m := range all {
		if m.Packed() != alone[i].Packed() {
			t.Fatalf("%v %d×%d: packed %v, alone %v", m.Type, m.Rows, m.Cols, m.Packed(), alone[i].Packed())
		}
		if m.Kernel() != alone[i].Kernel() || m.GemmKernel() != alone[i].GemmKernel() {
			t.Errorf("%v %d×%d: kernels %q/%q, alone %q/%q", m.Type, m.Rows, m.Cols, m.Kernel(), m.GemmKernel(), alone[i].Kernel(), alone[i].GemmKernel())
		}
		if m.Packed() {
			spans = append(spans, m.packed)
		}
	}
	if len(spans) < 2 {
		t.Skip("fewer than two packed types on this CPU")
	}
	base := uintptr(unsafe.Pointer(&spans[0][0]))
	end := base
	for _, s := range spans {
		p := uintptr(unsafe.Pointer(&s[0]))
		if p%64 != 0 || p != (end+63)&^63 {
			t.Fatalf("packed copy at %#x: want the next cache line after %#x in one arena", p, end)
		}
		end = p + uintptr(len(s))
	}
	if runtime.GOOS == "linux" && hugepage.Enabled() {
		if base%hugepage.Size != 0 {
			t.Errorf("arena at %#x: not on a huge page", base)
		}
		ok, err := hugepage.Advised(unsafe.Slice(&spans[0][0], end-base))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Errorf("arena of %d bytes not advised for huge pages", end-base)
		}
	}
	p := parallel.New(2)
	defer p.Close()
	for i, m := range all {
		for _, n := range []int{1, 3, 4} {
			x := randomInput(rng, n*m.Cols)
			got, want := make([]float32, n*m.Rows), make([]float32, n*m.Rows)
			new(Workspace).MatMul(p, m, x, n, got)
			new(Workspace).MatMul(p, alone[i], x, n, want)
			for j := range got {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("%v %d×%d n=%d: out[%d] = %g, packed alone %g", m.Type, m.Rows, m.Cols, n, j, got[j], want[j])
				}
			}
		}
	}
}
