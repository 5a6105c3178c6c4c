package model_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
)

// TestLoRAHostile: adapters that do not fit the model are refused with the
// file and the reason named — wrong type or architecture, a lone half of a
// pair, shapes of another model, a rank beyond the limit, ranks
// that differ within a pair, a stray tensor, no tensors — and a good one
// binds its pairs.
func TestLoRAHostile(t *testing.T) {
	base, err := load(tiny{}.build(t))
	if err != nil {
		t.Fatal(err)
	}
	type tens struct {
		name string
		dims []uint64
	}
	good := []tens{{"blk.0.attn_q.weight.lora_a", []uint64{8, 2}}, {"blk.0.attn_q.weight.lora_b", []uint64{2, 8}}}
	for _, c := range []struct {
		name    string
		meta    map[string]any
		tensors []tens
		want    string
	}{
		{"good", nil, good, ""},
		{"a model", map[string]any{"general.type": "model"}, good, `general.type is "model"`},
		{"not lora", map[string]any{"adapter.type": "control_vector"}, good, `adapter.type is "control_vector"`},
		{"another architecture", map[string]any{"general.architecture": "qwen2"}, good, `for architecture "qwen2", the model is "llama"`},
		{"half a pair", nil, good[:1], "missing one of lora_a, lora_b"},
		{"another model's width", nil, []tens{{"blk.0.attn_q.weight.lora_a", []uint64{16, 2}}, {"blk.0.attn_q.weight.lora_b", []uint64{2, 8}}}, "maybe the wrong base model"},
		{"ranks differ", nil, []tens{{"blk.0.attn_q.weight.lora_a", []uint64{8, 2}}, {"blk.0.attn_q.weight.lora_b", []uint64{3, 8}}}, "rank 2 and lora_b's 3"},
		{"rank beyond the limit", nil, []tens{{"blk.0.attn_q.weight.lora_a", []uint64{8, 5000}}, {"blk.0.attn_q.weight.lora_b", []uint64{5000, 8}}}, "out of range"},
		{"a weight the model lacks", nil, []tens{{"blk.7.attn_q.weight.lora_a", []uint64{8, 2}}, {"blk.7.attn_q.weight.lora_b", []uint64{2, 8}}}, "not a weight the model multiplies"},
		{"a stray tensor", nil, append([]tens{{"blk.0.attn_q.weight", []uint64{8, 8}}}, good...), "not a lora_a or lora_b"},
		{"no tensors", nil, nil, "no lora_a/lora_b tensors"},
		{"norms", nil, []tens{{"blk.0.attn_norm.weight.lora_a", []uint64{8, 2}}, {"blk.0.attn_norm.weight.lora_b", []uint64{2, 8}}}, "not a weight the model multiplies"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := gguf.NewWriter()
			meta := map[string]any{"general.architecture": "llama", "general.type": "adapter", "adapter.type": "lora", "adapter.lora.alpha": float32(4)}
			for k, v := range c.meta {
				meta[k] = v
			}
			for _, k := range []string{"general.architecture", "general.type", "adapter.type", "adapter.lora.alpha"} {
				w.Set(k, meta[k])
			}
			for _, tt := range c.tensors {
				n := uint64(4)
				for _, d := range tt.dims {
					n *= d
				}
				if err := w.AddTensor(tt.name, gguf.F32, tt.dims, make([]byte, n)); err != nil {
					t.Fatal(err)
				}
			}
			var buf bytes.Buffer
			if _, err := w.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Parse(buf.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			f.Path = "evil-lora.gguf"
			l, err := model.LoadLoRA(f, base)
			if c.want == "" {
				if err != nil || len(l.Weights) != 1 || l.Weights["blk.0.attn_q.weight"].Scale(l.Alpha, 1) != 2 {
					t.Fatalf("good adapter: %v, %+v", err, l)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "evil-lora.gguf") {
				t.Errorf("error %v, want one naming evil-lora.gguf and %q", err, c.want)
			}
		})
	}
}
