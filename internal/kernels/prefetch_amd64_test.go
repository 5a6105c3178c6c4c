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

// TestAccStreams: where the one-token kernels run without prefetches
// (Zen 4's default), packed Q4_K's one-token product reads two streams at
// one thread and one at more (registerAccStreams); elsewhere it reads one.
func TestAccStreams(t *testing.T) {
	f := table[tensor.Q4_K].packed
	if f == nil {
		t.Skip("no packed Q4_K kernels on this CPU")
	}
	if got := f.gemvS != nil; got != !packedPrefetch {
		t.Errorf("Q4_K two-stream product registered: %v; packedPrefetch %v", got, packedPrefetch)
	}
	if f.gemvS != nil && (f.streams != 2 || !f.streamsAlone) {
		t.Errorf("Q4_K streams %d, streamsAlone %v; want 2, true", f.streams, f.streamsAlone)
	}
}
