package explain

import (
	"fmt"
	"testing"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/machine"
)

// tinyLlama11B is TinyLlama-1.1B's shape (synthgguf's tinyllama-1.1b: dim
// 2048, 22 layers, 32 heads over 4 KV heads of 64, FFN 5632, 32000 tokens,
// untied head) and its tensor table with every matrix in type ty.
func tinyLlama11B(t *testing.T, ty gguf.Type) (engine.ModelInfo, []engine.TensorInfo) {
	t.Helper()
	c := engine.ModelInfo{Arch: "llama", Dim: 2048, HiddenDim: 5632, NLayers: 22, NHeads: 32, NKVHeads: 4, HeadDim: 64,
		NVocab: 32000, CtxLen: 2048, RopeDims: 64, RopeBase: 10000, RopeScale: 1, FFN: engine.FFNSwiGLU}
	var ts []engine.TensorInfo
	add := func(name string, typ gguf.Type, dims ...uint64) {
		b, err := gguf.Bytes(typ, dims)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, engine.TensorInfo{Name: name, Type: typ.String(), Dims: dims, Bytes: b})
	}
	add("token_embd.weight", ty, 2048, 32000)
	for l := range c.NLayers {
		p := fmt.Sprintf("blk.%d.", l)
		add(p+"attn_norm.weight", gguf.F32, 2048)
		add(p+"attn_q.weight", ty, 2048, 2048)
		add(p+"attn_k.weight", ty, 2048, 256)
		add(p+"attn_v.weight", ty, 2048, 256)
		add(p+"attn_output.weight", ty, 2048, 2048)
		add(p+"ffn_norm.weight", gguf.F32, 2048)
		add(p+"ffn_gate.weight", ty, 2048, 5632)
		add(p+"ffn_up.weight", ty, 2048, 5632)
		add(p+"ffn_down.weight", ty, 5632, 2048)
	}
	add("output_norm.weight", gguf.F32, 2048)
	add("output.weight", ty, 2048, 32000)
	return c, ts
}

// TestDecodeIsMemoryBound: decode of a 1.1B model reads ~0.6–2.2 GB of
// weights per token for ~2.2 GFLOPs, 1–4 FLOP/byte, far below the ridge of
// any CPU measured by its instruction peaks: explain must call it
// memory-bound. The roofs are the machine as loom bench --bandwidth
// measures it (Measure: bandwidth and instruction peaks),
// and the placement is explain's own (cost, with the times a 1-thread
// decode of such a model takes); it once took its compute roof from a
// 16-token Q8_0 product (15–30 GFLOP/s) and called this compute-bound.
func TestDecodeIsMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the machine: allocates 264 MiB")
	}
	const threads = 2
	m := Measure(threads)
	t.Logf("machine: %+v", m)
	if m.CPU != machine.CPU().String() {
		t.Errorf("the measurement names the CPU %q, want %q", m.CPU, machine.CPU())
	}
	if i8, f32 := machine.InstructionPeaks(); m.Int8GOPS != i8*threads || m.F32GFLOPS != f32*threads {
		t.Errorf("bench's instruction peaks (%v, %v per core) are not the machine's (%v, %v on %d threads)", i8, f32, m.Int8GOPS, m.F32GFLOPS, threads)
	}
	for _, ty := range []gguf.Type{gguf.F16, gguf.Q8_0, gguf.Q4_0, gguf.Q4_K} {
		t.Run(ty.String(), func(t *testing.T) {
			c, ts := tinyLlama11B(t, ty)
			kv := kvCache(c, engine.CacheInfo{DType: "f16", Positions: 2048})
			times := engine.Result{Prefill: 2 * time.Second, DecodeEval: 16 * 100 * time.Millisecond}
			cost := cost(c, ts, kv.BytesPerToken, 32, 16, times, m)
			d := cost.Decode
			t.Logf("%s: %.2f GFLOP and %.2f GB per token (%.2f FLOP/byte); roofs %.1f GB/s, %.0f GFLOP/s (ridge %.1f)",
				ty, d.FLOPsPerToken/1e9, d.BytesPerToken/1e9, d.Intensity, cost.Machine.BandwidthGBs, cost.Machine.PeakGFLOPS,
				cost.Machine.PeakGFLOPS/cost.Machine.BandwidthGBs)
			if d.Bound != "memory" {
				t.Errorf("decode reported %s-bound (%+v)", d.Bound, d)
			}
			if want := cost.Machine.BandwidthGBs * 1e9 / d.BytesPerToken; d.RoofTokS != want {
				t.Errorf("roof %.2f tok/s, want the bandwidth's %.2f", d.RoofTokS, want)
			}
		})
	}
}

// TestComputeRoofFor: the compute roof follows the weights: the 8-bit peak
// for quantized ones, the float32 peak for float ones, the machine's peak
// when the one needed was not measured.
func TestComputeRoofFor(t *testing.T) {
	m := Machine{BandwidthGBs: 20, PeakGFLOPS: 4000, Int8GOPS: 4000, F32GFLOPS: 300, KernelGFLOPS: 40, Threads: 2}
	for _, c := range []struct {
		ty   gguf.Type
		want float64
	}{{gguf.Q4_K, 4000}, {gguf.Q8_0, 4000}, {gguf.F16, 300}, {gguf.F32, 300}} {
		_, ts := tinyLlama11B(t, c.ty)
		if got := cost(engine.ModelInfo{NLayers: 1, NHeads: 1, HeadDim: 1, NVocab: 32000}, ts, 0, 1, 0, engine.Result{}, m).Machine.PeakGFLOPS; got != c.want {
			t.Errorf("%s: compute roof %v, want %v", c.ty, got, c.want)
		}
	}
	if got := (Machine{PeakGFLOPS: 40}).For(true).PeakGFLOPS; got != 40 {
		t.Errorf("without instruction peaks: %v", got)
	}
}
