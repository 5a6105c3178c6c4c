package engine_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestCacheTypes: every KV cache type gives logits near the F16 cache's
// over a 300-token prompt on F16 weights: the tiled path on an F16 cache
// (-fa) and an F32 cache within float rounding, the others within what
// their rounding of K and V moves (loose bounds that catch a wrong layout
// or block, which moves logits by far more; nn's TestTiledAttention checks
// the arithmetic exactly, llama.cpp's recordings the quantized caches).
// Bytes per position follow the type, and a type whose blocks do not
// divide the head is refused naming it.
func TestCacheTypes(t *testing.T) {
	path := testmodels.Synth(t, "-model", "smollm2-135m", "-type", "F16", "-seed", "1")
	prompt := make([]int32, 300)
	for i := range prompt {
		prompt[i] = int32(1 + (i*7919)%40000)
	}
	bytes := map[string]int{}
	eval := func(k, v string) [][]float32 {
		t.Helper()
		fa := k == "fa"
		if fa {
			k, v = "", ""
		}
		e, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 512, CacheTypeK: k, CacheTypeV: v, FlashAttn: fa})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		bytes[k+"/"+v] = e.Cache().BytesPerToken
		rows, err := e.Logits(context.Background(), prompt)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	want := eval("", "")
	for _, c := range []struct {
		k, v string
		tol  float64
	}{
		{"fa", "", 0.05}, {"f32", "f32", 0.05}, {"bf16", "bf16", 0.3}, {"f16", "q8_0", 0.3}, {"q8_0", "q8_0", 0.3}, {"q4_0", "q4_0", 5}, {"q8_0", "f16", 0.3},
	} {
		got := eval(c.k, c.v)
		worst := 0.0
		for pos := range want {
			for i := range want[pos] {
				worst = max(worst, math.Abs(float64(got[pos][i]-want[pos][i])))
			}
		}
		t.Logf("K %s, V %s: worst logit difference from F16 %.4f", c.k, c.v, worst)
		if worst > c.tol || math.IsNaN(worst) {
			t.Errorf("K %s, V %s: logits differ from the F16 cache's by %.4f (tolerance %.2f)", c.k, c.v, worst, c.tol)
		}
	}
	for kv, share := range map[string]float64{"q8_0/q8_0": 34.0 / 64, "q4_0/q4_0": 18.0 / 64, "f32/f32": 2, "bf16/bf16": 1} {
		if got := float64(bytes[kv]) / float64(bytes["/"]); got != share {
			t.Errorf("cache %s: %d bytes per position, %.4f of F16's %d; want %.4f", kv, bytes[kv], got, bytes["/"], share)
		}
	}
	if _, err := engine.Load(path, engine.Options{CacheTypeK: "q5_1"}); err == nil || !strings.Contains(err.Error(), "q5_1") {
		t.Errorf("cache type q5_1: error %v, want one naming it", err)
	}
}
