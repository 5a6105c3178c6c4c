// Package llama2c loads Andrej Karpathy's llama2.c checkpoints (model.bin):
// a header of seven int32 hyperparameters followed by float32 weights in a
// fixed order. The weights are exposed under their GGUF names so the llama
// package runs them unchanged.
package llama2c

import (
	"encoding/binary"
	"fmt"
	"os"

	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/tensor"
)

// Load reads path and returns its config and weights. The returned source
// references the file's bytes.
func Load(path string) (*model.Config, model.MapSource, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("llama2c: %w", err)
	}
	if len(b) < 28 {
		return nil, nil, fmt.Errorf("llama2c: %s: %d bytes is too short for the header", path, len(b))
	}
	var h [7]int
	for i := range h {
		h[i] = int(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	dim, hidden, layers, heads, kvHeads, vocab, seqLen := h[0], h[1], h[2], h[3], h[4], h[5], h[6]
	shared := vocab > 0 // a negative vocab_size marks a separate classifier
	if vocab < 0 {
		vocab = -vocab
	}
	const lim = 1 << 20
	for i, v := range []int{dim, hidden, layers, heads, kvHeads, vocab, seqLen} {
		if v <= 0 || v > lim {
			return nil, nil, fmt.Errorf("llama2c: %s: header field %d is %d", path, i, v)
		}
	}
	if dim%heads != 0 {
		return nil, nil, fmt.Errorf("llama2c: %s: dim %d is not divisible by %d heads", path, dim, heads)
	}
	hs := dim / heads
	cfg := &model.Config{Arch: "llama", Dim: dim, HiddenDim: hidden, NLayers: layers, NHeads: heads,
		NKVHeads: kvHeads, HeadDim: hs, NVocab: vocab, CtxLen: seqLen, Eps: 1e-5,
		RopeBase: 10000, RopeDims: hs, RopeScale: 1}
	src := model.MapSource{}
	off := 28
	take := func(name string, dims ...int) error {
		n := 1
		ud := make([]uint64, len(dims))
		for i := len(dims) - 1; i >= 0; i-- {
			n *= dims[i]
			ud[len(dims)-1-i] = uint64(dims[i]) // ggml order: innermost first
		}
		if n*4 > len(b)-off {
			return fmt.Errorf("llama2c: %s: file ends inside %s (need %d bytes at offset %d, have %d)", path, name, n*4, off, len(b)-off)
		}
		if name != "" {
			src[name] = model.Tensor{Name: name, Type: tensor.F32, Dims: ud, Data: b[off : off+n*4]}
		}
		off += n * 4
		return nil
	}
	kv := kvHeads * hs
	perLayer := func(name string, dims ...int) error {
		for l := range layers {
			if err := take(fmt.Sprintf("blk.%d.%s", l, name), dims...); err != nil {
				return err
			}
		}
		return nil
	}
	steps := []func() error{
		func() error { return take("token_embd.weight", vocab, dim) },
		func() error { return perLayer("attn_norm.weight", dim) },
		func() error { return perLayer("attn_q.weight", dim, dim) },
		func() error { return perLayer("attn_k.weight", kv, dim) },
		func() error { return perLayer("attn_v.weight", kv, dim) },
		func() error { return perLayer("attn_output.weight", dim, dim) },
		func() error { return perLayer("ffn_norm.weight", dim) },
		func() error { return perLayer("ffn_gate.weight", hidden, dim) },
		func() error { return perLayer("ffn_down.weight", dim, hidden) },
		func() error { return perLayer("ffn_up.weight", hidden, dim) },
		func() error { return take("output_norm.weight", dim) },
		func() error { return take("", seqLen, hs/2) }, // freq_cis_real (unused: RoPE is computed)
		func() error { return take("", seqLen, hs/2) }, // freq_cis_imag
	}
	if !shared {
		steps = append(steps, func() error { return take("output.weight", vocab, dim) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, nil, err
		}
	}
	return cfg, src, nil
}
