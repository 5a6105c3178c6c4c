package model_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kvcache"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
)

// Hostile hyperparameters: a GGUF file whose metadata claims absurd counts
// (a billion layers with tensors for two, widths of a billion, zero heads,
// NaN rope bases) is refused with an error naming the file and the key,
// before anything sized by those counts is allocated.

// maxLoadAlloc bounds what a refused load may allocate (the files here are
// a few kilobytes).
const maxLoadAlloc = 64 << 20

// tiny is a 2-layer Llama (dim 8, 2 heads over 1 KV head of width 4, FFN
// 16, 16 tokens, F32), or with experts a Mixtral-style one (2 experts, 1
// per token). meta overrides its metadata (a nil value deletes the key);
// drop removes tensors.
type tiny struct {
	arch    string // "" is llama
	experts bool
	meta    map[string]any
	drop    func(name string) bool
}

type kv struct {
	k string
	v any
}

func (c tiny) build(t testing.TB) []byte {
	t.Helper()
	w := gguf.NewWriter()
	arch := cmp.Or(c.arch, "llama")
	meta := []kv{
		{"general.architecture", arch},
		{arch + ".embedding_length", uint32(8)},
		{arch + ".block_count", uint32(2)},
		{arch + ".feed_forward_length", uint32(16)},
		{arch + ".attention.head_count", uint32(2)},
		{arch + ".attention.head_count_kv", uint32(1)},
		{arch + ".context_length", uint32(64)},
		{arch + ".rope.dimension_count", uint32(4)},
		{arch + ".attention.layer_norm_rms_epsilon", float32(1e-5)},
	}
	if c.experts {
		meta = append(meta, kv{arch + ".expert_count", uint32(2)}, kv{arch + ".expert_used_count", uint32(1)})
	}
	seen := map[string]bool{}
	for _, kv := range meta {
		seen[kv.k] = true
		v, over := c.meta[kv.k]
		if !over {
			v = kv.v
		}
		if v != nil {
			w.Set(kv.k, v)
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range c.meta {
			if !yield(k) {
				return
			}
		}
	}) {
		if !seen[k] && c.meta[k] != nil {
			w.Set(k, c.meta[k])
		}
	}
	seed := 0
	add := func(name string, dims ...uint64) {
		if c.drop != nil && c.drop(name) {
			return
		}
		n := 1
		for _, d := range dims {
			n *= int(d)
		}
		b := make([]byte, 4*n)
		for i := range n {
			seed++
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(math.Sin(float64(seed)))*0.5))
		}
		if err := w.AddTensor(name, gguf.F32, dims, b); err != nil {
			t.Fatal(err)
		}
	}
	add("token_embd.weight", 8, 16)
	for l := range 2 {
		p := "blk." + string(rune('0'+l)) + "."
		add(p+"attn_norm.weight", 8)
		add(p+"attn_q.weight", 8, 8)
		add(p+"attn_k.weight", 8, 4)
		add(p+"attn_v.weight", 8, 4)
		add(p+"attn_output.weight", 8, 8)
		add(p+"ffn_norm.weight", 8)
		if c.experts {
			add(p+"ffn_gate_inp.weight", 8, 2)
			add(p+"ffn_gate_exps.weight", 8, 16, 2)
			add(p+"ffn_up_exps.weight", 8, 16, 2)
			add(p+"ffn_down_exps.weight", 16, 8, 2)
		} else {
			add(p+"ffn_gate.weight", 8, 16)
			add(p+"ffn_up.weight", 8, 16)
			add(p+"ffn_down.weight", 16, 8)
		}
	}
	add("output_norm.weight", 8)
	add("output.weight", 8, 16)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// load parses b as the file evil.gguf and loads its model.
func load(b []byte) (model.Model, error) {
	f, err := gguf.Parse(b)
	if err != nil {
		return nil, err
	}
	f.Path = "evil.gguf"
	return model.LoadGGUF(f)
}

func TestHostileHyperparameters(t *testing.T) {
	notBlk1 := func(n string) bool { return strings.HasPrefix(n, "blk.1.") }
	noBlk := func(n string) bool { return strings.HasPrefix(n, "blk.") }
	cases := []struct {
		name string
		file tiny
		want string
	}{
		{"a billion layers", tiny{meta: map[string]any{"llama.block_count": uint32(1e9)}},
			"evil.gguf: model: llama.block_count = 1000000000 but the file has tensors for 2 layers (blk.0 … blk.1)"},
		{"a million layers", tiny{meta: map[string]any{"llama.block_count": uint32(1e6)}},
			"llama.block_count = 1000000 but the file has tensors for 2 layers (blk.0 … blk.1)"},
		{"one layer too many", tiny{meta: map[string]any{"llama.block_count": uint32(3)}},
			"llama.block_count = 3 but the file has tensors for 2 layers"},
		{"a layer's tensors missing", tiny{drop: notBlk1}, "llama.block_count = 2 but the file has tensors for 1 layer (blk.0)"},
		{"no layer tensors", tiny{drop: noBlk}, "llama.block_count = 2 but the file has no layer tensors"},
		{"layers beyond int32", tiny{meta: map[string]any{"llama.block_count": uint64(1 << 40)}}, "llama.block_count = 1099511627776 is out of range"},
		{"zero layers", tiny{meta: map[string]any{"llama.block_count": uint32(0)}}, "llama.block_count = 0 (must be positive)"},
		{"negative layers", tiny{meta: map[string]any{"llama.block_count": int32(-2)}}, `"llama.block_count" is negative`},
		{"layers as a string", tiny{meta: map[string]any{"llama.block_count": "2"}}, `"llama.block_count" has type string`},
		{"layers as a float", tiny{meta: map[string]any{"llama.block_count": float32(2)}}, `"llama.block_count" has type f32`},
		{"no layer count", tiny{meta: map[string]any{"llama.block_count": nil}}, `missing metadata "llama.block_count"`},
		{"huge embedding", tiny{meta: map[string]any{"llama.embedding_length": uint32(1 << 30)}}, "llama.embedding_length = 1073741824 is over the limit of 1048576"},
		{"embedding beyond int32", tiny{meta: map[string]any{"llama.embedding_length": uint64(math.MaxUint64)}}, "llama.embedding_length = 18446744073709551615 is out of range"},
		{"embedding unlike the tensors", tiny{meta: map[string]any{"llama.embedding_length": uint32(16)}}, `tensor "token_embd.weight" has shape [8 16], want [16 16]`},
		{"zero embedding", tiny{meta: map[string]any{"llama.embedding_length": uint32(0)}}, "llama.embedding_length = 0 (must be positive)"},
		{"huge FFN", tiny{meta: map[string]any{"llama.feed_forward_length": uint32(1 << 30)}}, "llama.feed_forward_length = 1073741824 is over the limit"},
		{"zero FFN", tiny{meta: map[string]any{"llama.feed_forward_length": uint32(0)}}, "llama.feed_forward_length = 0 (must be positive)"},
		{"zero heads", tiny{meta: map[string]any{"llama.attention.head_count": uint32(0)}}, "llama.attention.head_count = 0 (must be positive)"},
		{"heads not dividing the width", tiny{meta: map[string]any{"llama.attention.head_count": uint32(3)}},
			"llama.embedding_length = 8 is not divisible by llama.attention.head_count = 3"},
		{"a million heads", tiny{meta: map[string]any{"llama.attention.head_count": uint32(1 << 20), "llama.attention.key_length": uint32(4), "llama.attention.value_length": uint32(4)}},
			"llama.attention.head_count = 1048576 is over the limit of 4096"},
		{"zero KV heads", tiny{meta: map[string]any{"llama.attention.head_count_kv": uint32(0)}}, "llama.attention.head_count_kv = 0 (must be positive)"},
		{"an unknown pooling type", tiny{meta: map[string]any{"llama.pooling_type": uint32(9)}}, "llama.pooling_type = 9 is not a pooling type"},
		{"pooling as a string", tiny{meta: map[string]any{"llama.pooling_type": "mean"}}, `"llama.pooling_type" has type string`},
		{"rank pooling without a head", tiny{meta: map[string]any{"llama.pooling_type": uint32(4)}}, "pooling rank needs a classification head"},
		{"70,000 classifier labels", tiny{meta: map[string]any{"llama.classifier.output_labels": make([]string, 70000)}}, "llama.classifier.output_labels has 70000 labels"},
		{"classifier labels not a list", tiny{meta: map[string]any{"llama.classifier.output_labels": "yes"}}, "llama.classifier.output_labels is not an array"},
		{"causal as a number", tiny{meta: map[string]any{"llama.attention.causal": uint32(0)}}, `"llama.attention.causal" has type`},
		{"a million token types", tiny{meta: map[string]any{"tokenizer.ggml.token_type_count": uint32(1 << 20)}}, "tokenizer.ggml.token_type_count = 1048576 is out of range"},
		{"KV heads not grouping", tiny{meta: map[string]any{"llama.attention.head_count_kv": uint32(3)}},
			"llama.attention.head_count = 2 heads cannot be grouped over llama.attention.head_count_kv = 3"},
		{"huge head width", tiny{meta: map[string]any{"llama.attention.key_length": uint32(1 << 30), "llama.attention.value_length": uint32(1 << 30)}},
			"llama.attention.key_length = 1073741824 is over the limit"},
		{"heads × width too wide", tiny{meta: map[string]any{"llama.attention.head_count": uint32(8), "llama.attention.key_length": uint32(1 << 19), "llama.attention.value_length": uint32(1 << 19)}},
			"llama.attention.head_count × llama.attention.key_length = 8 × 524288 is over the limit"},
		{"zero head width", tiny{meta: map[string]any{"llama.attention.key_length": uint32(0), "llama.attention.value_length": uint32(0)}},
			"llama.attention.key_length = 0 (must be positive)"},
		{"value width differs", tiny{meta: map[string]any{"llama.attention.value_length": uint32(8)}}, "llama.attention.value_length = 8 differs"},
		{"huge rope dimensions", tiny{meta: map[string]any{"llama.rope.dimension_count": uint32(1 << 30)}}, "llama.rope.dimension_count = 1073741824"},
		{"odd rope dimensions", tiny{meta: map[string]any{"llama.rope.dimension_count": uint32(3)}}, "llama.rope.dimension_count = 3"},
		{"zero context", tiny{meta: map[string]any{"llama.context_length": uint32(0)}}, "llama.context_length = 0 (must be positive)"},
		{"context beyond int32", tiny{meta: map[string]any{"llama.context_length": uint64(1 << 40)}}, "llama.context_length = 1099511627776 is out of range"},
		{"window beyond int32", tiny{meta: map[string]any{"llama.attention.sliding_window": uint64(1 << 40)}}, "llama.attention.sliding_window = 1099511627776 is out of range"},
		{"a million experts", tiny{experts: true, meta: map[string]any{"llama.expert_count": uint32(1 << 20)}}, "llama.expert_count = 1048576 is out of range"},
		{"more experts used than exist", tiny{experts: true, meta: map[string]any{"llama.expert_used_count": uint32(3)}},
			"llama.expert_used_count = 3 of llama.expert_count = 2 experts"},
		{"no expert used", tiny{experts: true, meta: map[string]any{"llama.expert_used_count": uint32(0)}}, "llama.expert_used_count = 0 of"},
		{"experts unlike the tensors", tiny{experts: true, meta: map[string]any{"llama.expert_count": uint32(4)}}, `"blk.0.ffn_gate_inp.weight" has shape [8 2], want [8 4]`},
		{"huge expert width", tiny{experts: true, meta: map[string]any{"llama.expert_feed_forward_length": uint32(1 << 30)}},
			"llama.expert_feed_forward_length = 1073741824 is out of range"},
		{"negative rope base", tiny{meta: map[string]any{"llama.rope.freq_base": float32(-1)}}, "llama.rope.freq_base = -1 (must be positive)"},
		{"NaN rope base", tiny{meta: map[string]any{"llama.rope.freq_base": float32(math.NaN())}}, "llama.rope.freq_base = NaN"},
		{"infinite rope scale", tiny{meta: map[string]any{"llama.rope.scaling.type": "linear", "llama.rope.scaling.factor": float64(1e300)}},
			"llama.rope.scaling.factor = +Inf"},
		{"experts in a family without them", tiny{arch: "phi3", meta: map[string]any{"phi3.expert_count": uint32(2), "phi3.expert_used_count": uint32(1), "phi3.expert_feed_forward_length": uint32(1)}},
			"phi3.expert_count = 2, but Loom's phi3 blocks have no experts"},
		{"NaN epsilon", tiny{meta: map[string]any{"llama.attention.layer_norm_rms_epsilon": float32(math.NaN())}}, "norm epsilon NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.file.build(t)
			var err error
			n := allocated(func() { _, err = load(b) })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant one containing %q", err, c.want)
			}
			if n > maxLoadAlloc {
				t.Errorf("the refused load allocated %d MiB", n>>20)
			}
		})
	}
	// The file they are made from loads, dense and with experts.
	for _, experts := range []bool{false, true} {
		if _, err := load(tiny{experts: experts}.build(t)); err != nil {
			t.Errorf("experts %v: %v", experts, err)
		}
	}
}

// TestBuffersSizedByCheckedWidths: the runner's FFN buffers are sized by
// the widths the tensors were checked against, not by a width no tensor
// has: a mixture-of-experts model's feed_forward_length (its experts have
// their own) or a dense model's expert_feed_forward_length.
func TestBuffersSizedByCheckedWidths(t *testing.T) {
	cases := []struct {
		name string
		file tiny
	}{
		{"MoE with a huge dense FFN width", tiny{experts: true, meta: map[string]any{"llama.feed_forward_length": uint32(model.MaxWidth), "llama.expert_feed_forward_length": uint32(16)}}},
		{"dense with a huge expert FFN width", tiny{meta: map[string]any{"llama.expert_feed_forward_length": uint32(model.MaxWidth)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := load(c.file.build(t))
			if err != nil {
				t.Fatal(err)
			}
			cfg := m.Config()
			pool, err := kvcache.NewPool(cfg.NLayers, cfg.KVDim(), kvcache.BlocksFor(64))
			if err != nil {
				t.Fatal(err)
			}
			const n = 32
			b := &model.Batch{Seqs: []*kvcache.Seq{pool.NewSeq()}}
			for i := range n {
				b.Tokens = append(b.Tokens, int32(i%cfg.NVocab))
				b.Pos = append(b.Pos, int32(i))
			}
			logits := make([]float32, cfg.NVocab)
			r := m.NewRunner(model.RunnerOptions{Threads: 1, MaxCtx: 64})
			defer r.Close()
			got := allocated(func() { _, err = r.Forward(b, logits) })
			if err != nil {
				t.Fatal(err)
			}
			if got > maxLoadAlloc {
				t.Errorf("a %d-token forward pass allocated %d MiB", n, got>>20)
			}
			for _, x := range logits {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("logits %v", logits)
				}
			}
		})
	}
}

// FuzzHyperparameters: whatever the counts in the metadata of a valid
// tiny file, loading it ends in a model or an error, never a panic or a
// large allocation, and a model it loads is within the limits.
func FuzzHyperparameters(f *testing.F) {
	f.Add(uint64(8), uint64(2), uint64(16), uint64(2), uint64(1), uint64(4), uint64(64), uint64(0), uint64(0), false)
	f.Add(uint64(8), uint64(1e9), uint64(16), uint64(2), uint64(1), uint64(4), uint64(64), uint64(2), uint64(1), true)
	f.Add(uint64(1<<40), uint64(2), uint64(0), uint64(0), uint64(3), uint64(1<<30), uint64(1<<40), uint64(1<<20), uint64(5), true)
	f.Fuzz(func(t *testing.T, dim, layers, ffn, heads, kv, rope, ctx, experts, used uint64, moe bool) {
		file := tiny{experts: moe, meta: map[string]any{
			"llama.embedding_length": dim, "llama.block_count": layers, "llama.feed_forward_length": ffn,
			"llama.attention.head_count": heads, "llama.attention.head_count_kv": kv, "llama.rope.dimension_count": rope,
			"llama.context_length": ctx, "llama.expert_count": experts, "llama.expert_used_count": used,
		}}
		b := file.build(t)
		var m model.Model
		var err error
		n := allocated(func() { m, err = load(b) })
		if n > maxLoadAlloc {
			t.Fatalf("loading allocated %d MiB (error %v)", n>>20, err)
		}
		if err != nil {
			return
		}
		if err := m.Config().Validate(); err != nil {
			t.Fatalf("loaded a model whose config is invalid: %v", err)
		}
	})
}

// TestSplitPart: one part of a split model holds some of the layers only:
// its config reads (loom inspect on a part), while loading its weights
// alone is refused by the layer check.
func TestSplitPart(t *testing.T) {
	b := tiny{meta: map[string]any{"split.count": uint16(2)}, drop: func(n string) bool { return strings.HasPrefix(n, "blk.1.") }}.build(t)
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := model.ConfigFromGGUF(f); err != nil {
		t.Errorf("config of the first part: %v", err)
	}
	if _, err := model.LoadGGUF(f); err == nil || !strings.Contains(err.Error(), "block_count = 2 but the file has tensors for 1 layer") {
		t.Errorf("loading one part: %v", err)
	}
}
