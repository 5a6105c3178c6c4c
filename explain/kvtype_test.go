package explain

import (
	"testing"

	"github.com/loom-inference/loom/engine"
)

// TestKVCacheTypes: the cache's bytes per position follow its types —
// q8_0 is 34 bytes per 32 elements, q4_0 18, mixed K and V their mean —
// beside F16's 2 bytes per element.
func TestKVCacheTypes(t *testing.T) {
	c := engine.ModelInfo{NLayers: 16, NHeads: 32, NKVHeads: 8, HeadDim: 64}
	f16 := kvCache(c, engine.CacheInfo{DType: "f16", Positions: 1024}).BytesPerToken
	if want := int64(2 * 16 * 8 * 64 * 2); f16 != want {
		t.Fatalf("f16: %d bytes per position, want %d", f16, want)
	}
	for dtype, share := range map[string]float64{"q8_0": 34.0 / 64, "q4_0": 18.0 / 64, "f32": 2, "bf16": 1, "q8_0/f16": (34.0/64 + 1) / 2} {
		got := kvCache(c, engine.CacheInfo{DType: dtype, Positions: 1024}).BytesPerToken
		if want := int64(float64(f16) * share); got != want {
			t.Errorf("%s: %d bytes per position, want %d", dtype, got, want)
		}
	}
}
