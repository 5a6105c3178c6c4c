//go:build amd64 && !purego

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestPackedPrefetchOff: the one-token packed kernels give the same bits
// with their prefetches skipped (PFSKIP) as with them: the jump lands
// past the prefetches and nothing else. Two threads too: Q4_K's
// one-thread product may be the two-stream one, which never prefetches.
func TestPackedPrefetchOff(t *testing.T) {
	defer func(v bool) { packedPrefetch = v }(packedPrefetch)
	rng := rand.New(rand.NewPCG(51, 52))
	tested := 0
	for _, threads := range []int{1, 2} {
		p := parallel.New(threads)
		for _, typ := range []tensor.DType{tensor.Q4_0, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K} {
			m := randomMatrix(t, rng, typ, 256, 512)
			m.Pack()
			if !m.Packed() {
				continue
			}
			tested++
			x := randomInput(rng, m.Cols)
			var outs [2][]float32
			for i, on := range []bool{true, false} {
				packedPrefetch = on
				outs[i] = make([]float32, m.Rows)
				new(Workspace).MatMul(p, m, x, 1, outs[i])
			}
			for r := range outs[0] {
				if math.Float32bits(outs[0][r]) != math.Float32bits(outs[1][r]) {
					t.Fatalf("%v threads=%d row %d: %g without prefetch, %g with", typ, threads, r, outs[1][r], outs[0][r])
				}
			}
		}
		p.Close()
	}
	if tested == 0 {
		t.Skip("no packed kernels on this CPU")
	}
}

// TestQ4KStreams: where the one-token kernels run without prefetches
// (Zen 4's default), packed Q4_K's one-token product reads two streams
// when one thread runs it and one at more (registerQ4KStreams), and the
// products use it exactly then; elsewhere it reads one. And on any CPU
// with the packed kernels, the two-stream product equals the unpacked
// one bit for bit (leftover groups and rows included), so it is tested
// where it is not the default too.
func TestQ4KStreams(t *testing.T) {
	f := table[tensor.Q4_K].packed
	if f == nil {
		t.Skip("no packed Q4_K kernels on this CPU")
	}
	if got := f.gemvS != nil; got != !packedPrefetch {
		t.Errorf("Q4_K two-stream product registered: %v; packedPrefetch %v", got, packedPrefetch)
	}
	rng := rand.New(rand.NewPCG(53, 54))
	const rows, cols = 16*37 + 5, 1024 // 37 groups: 18 pairs and one left over
	data := make([]byte, 0, rows*cols)
	for range rows {
		data = append(data, randomRow(rng, tensor.Q4_K, cols)...)
	}
	x := randomInput(rng, cols)
	plain, _ := NewMatrix("w", tensor.Q4_K, rows, cols, data)
	want := make([]float32, rows)
	p1, p2 := parallel.New(1), parallel.New(2)
	defer p1.Close()
	defer p2.Close()
	new(Workspace).MatMul(p1, plain, x, 1, want)

	two := *f
	registerQ4KStreams(&two)
	calls := 0
	inner := two.gemvS
	two.gemvS = func(nb int, w []byte, wstride int, a []byte, out []float32, ostride int) {
		calls++
		inner(nb, w, wstride, a, out, ostride)
	}
	m, _ := NewMatrix("w", tensor.Q4_K, rows, cols, data)
	m.packWith(&two, nil)
	for _, c := range []struct {
		p     *parallel.Pool
		calls int
	}{{p1, 18}, {p2, 0}} {
		calls = 0
		got := make([]float32, rows)
		new(Workspace).MatMul(c.p, m, x, 1, got)
		for r := range want {
			if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
				t.Fatalf("threads=%d row %d: %g, unpacked %g", c.p.Threads(), r, got[r], want[r])
			}
		}
		if calls != c.calls {
			t.Errorf("threads=%d: the two-stream product ran %d times, want %d", c.p.Threads(), calls, c.calls)
		}
	}
}
