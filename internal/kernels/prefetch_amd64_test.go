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
// past the prefetches and nothing else.
func TestPackedPrefetchOff(t *testing.T) {
	defer func(v bool) { packedPrefetch = v }(packedPrefetch)
	rng := rand.New(rand.NewPCG(51, 52))
	p := parallel.New(1)
	defer p.Close()
	tested := 0
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
				t.Fatalf("%v row %d: %g without prefetch, %g with", typ, r, outs[1][r], outs[0][r])
			}
		}
	}
	if tested == 0 {
		t.Skip("no packed kernels on this CPU")
	}
}
