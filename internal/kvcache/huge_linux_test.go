//go:build linux

package kvcache

import (
	"os"
	"testing"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestHugePages: a pool's layer arrays carry the huge-page advice over the
// huge pages they contain. Attention at depth reads a layer's cache — tens
// of megabytes — once per token: on a 2-core Zen 4, one decoding token's
// attention over 16,384 positions of a llama-3.2-1b-shaped q8_0 cache took
// 20.6–20.8 ms with huge pages against 21.7–22.5 ms without
// (BenchmarkDecodeAttention).
func TestHugePages(t *testing.T) {
	if _, err := os.Stat("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil {
		t.Skip("no transparent huge pages in this kernel")
	}
	// 8 MiB a layer: K and V each span whole huge pages.
	p, err := NewTypedPool(2, 512, 256, Window{}, Types{K: tensor.F16, V: tensor.Q8_0})
	if err != nil {
		t.Fatal(err)
	}
	for l := range p.NLayers {
		for name, b := range map[string][]uint16{"K": p.K[l], "V": p.V[l]} {
			ok, err := hugepage.Advised(b)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Errorf("layer %d %s (%d bytes): not advised for huge pages", l, name, 2*len(b))
			}
		}
	}
}
