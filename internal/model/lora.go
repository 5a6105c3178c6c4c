package model

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/kernels"
)

// LoRA is a low-rank adapter as llama.cpp loads it (a GGUF file that
// convert_lora_to_gguf.py writes: general.type "adapter", adapter.type
// "lora", adapter.lora.alpha, and per adapted weight W a pair
// W.lora_a [in, rank] and W.lora_b [rank, out]): the product W·x becomes
// W·x + s·B(A·x), s = scale·alpha/rank (scale without alpha). Immutable
// once loaded; any number of runners and requests share it.
type LoRA struct {
	Name    string
	Alpha   float32
	Weights map[string]*LoRAWeight // by the adapted weight's tensor name
}

// LoRAWeight is one adapted weight's pair.
type LoRAWeight struct {
	A *kernels.Matrix // [rank, in]: rows rank, cols the weight's input width
	B *kernels.Matrix // [out, rank]
}

// Scale is the factor of B(A·x) for a user scale: scale·alpha/rank, or
// scale when the file's alpha is 0, as llama.cpp's get_scale computes it
// in float32.
func (w *LoRAWeight) Scale(alpha, scale float32) float32 {
	if alpha == 0 {
		return scale
	}
	return scale * alpha / float32(w.A.Rows)
}

// AdapterScale is an adapter applied at a scale.
type AdapterScale struct {
	L     *LoRA
	Scale float32
}

// loraTargets are the weights a forward pass applies adapters to (every
// product decoder.Step runs through its LoRA-aware path): attention's
// projections, the dense FFN's and the LM head. Adapters of other weights
// (experts, embeddings) are refused rather than silently ignored.
var loraTargets = regexp.MustCompile(`^(blk\.\d+\.(attn_q|attn_k|attn_v|attn_qkv|attn_output|ffn_gate|ffn_up|ffn_down)|output)\.weight$`)

// MaxLoRARank bounds an adapter's rank (real adapters use 8 to 256).
const MaxLoRARank = 1 << 12

// LoadLoRA binds the adapter in f to base's weights (Model.Matrices),
// checking what llama.cpp checks: the file is a LoRA adapter of base's
// architecture, every pair is complete, names a weight base multiplies,
// and has its shapes (A [in, rank], B [rank, out]).
func LoadLoRA(f *gguf.File, base Model) (*LoRA, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%s: LoRA: %s", f.Path, fmt.Sprintf(format, a...))
	}
	if t, _ := f.String("general.type"); t != "adapter" {
		return nil, bad("general.type is %q, want \"adapter\" (is this a model rather than an adapter?)", t)
	}
	if t, _ := f.String("adapter.type"); t != "lora" {
		return nil, bad("adapter.type is %q, want \"lora\"", t)
	}
	if a, _ := f.String("general.architecture"); a != base.Config().Arch {
		return nil, bad("the adapter is for architecture %q, the model is %q", a, base.Config().Arch)
	}
	alpha, err := f.FloatOr("adapter.lora.alpha", 0)
	if err != nil {
		return nil, bad("%v", err)
	}
	ml, ok := base.(interface{ Matrices() []*kernels.Matrix })
	if !ok {
		return nil, bad("the %s model takes no adapters", base.Config().Arch)
	}
	weights := map[string]*kernels.Matrix{}
	for _, m := range ml.Matrices() {
		weights[m.Name] = m
	}
	l := &LoRA{Name: f.Path, Alpha: float32(alpha), Weights: map[string]*LoRAWeight{}}
	if n, ok := f.String("general.name"); ok && n != "" {
		l.Name = n
	}
	src := GGUFSource{f}
	pairs := map[string]bool{}
	for _, t := range f.Tensors {
		base, ok := strings.CutSuffix(t.Name, ".lora_a")
		if !ok {
			base, ok = strings.CutSuffix(t.Name, ".lora_b")
		}
		if !ok {
			return nil, bad("tensor %q is not a lora_a or lora_b", t.Name)
		}
		pairs[base] = true
	}
	if len(pairs) == 0 {
		return nil, bad("no lora_a/lora_b tensors")
	}
	names := make([]string, 0, len(pairs))
	for n := range pairs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		w, ok := weights[name]
		switch {
		case !ok:
			return nil, bad("%q is not a weight the model multiplies (maybe the wrong base model?)", name)
		case !loraTargets.MatchString(name):
			return nil, bad("adapting %q is not supported (attention and dense FFN projections and the LM head are)", name)
		}
		ta, okA := src.Tensor(name + ".lora_a")
		tb, okB := src.Tensor(name + ".lora_b")
		if !okA || !okB {
			return nil, bad("the pair for %q is missing one of lora_a, lora_b", name)
		}
		if len(ta.Dims) != 2 || len(tb.Dims) != 2 || ta.Dims[0] != uint64(w.Cols) || tb.Dims[1] != uint64(w.Rows) {
			return nil, bad("%q has shapes %v and %v, the weight [%d %d] (maybe the wrong base model?)", name, ta.Dims, tb.Dims, w.Cols, w.Rows)
		}
		if ta.Dims[1] != tb.Dims[0] || ta.Dims[1] == 0 || ta.Dims[1] > MaxLoRARank {
			return nil, bad("%q: lora_a's rank %d and lora_b's %d differ or are out of range (1 to %d)", name, ta.Dims[1], tb.Dims[0], MaxLoRARank)
		}
		rank := int(ta.Dims[1])
		a, err := kernels.NewMatrix(ta.Name, ta.Type, rank, w.Cols, ta.Data)
		if err != nil {
			return nil, bad("%v", err)
		}
		b, err := kernels.NewMatrix(tb.Name, tb.Type, w.Rows, rank, tb.Data)
		if err != nil {
			return nil, bad("%v", err)
		}
		a.Pack()
		b.Pack()
		l.Weights[name] = &LoRAWeight{A: a, B: b}
	}
	return l, nil
}
