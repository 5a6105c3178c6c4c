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
	// Every field is checked before anything is sized by it: against
	// the model package's limits, against each other, and the weights
	// they imply against the file's size.
	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"dim", dim, model.MaxWidth}, {"hidden_dim", hidden, model.MaxWidth}, {"n_layers", layers, model.MaxLayers},
		{"n_heads", heads, model.MaxHeads}, {"n_kv_heads", kvHeads, model.MaxHeads}, {"vocab_size", vocab, model.MaxVocab},
		{"seq_len", seqLen, model.MaxCtx},
	} {
		if f.v <= 0 || f.v > f.max {
			return nil, nil, fmt.Errorf("llama2c: %s: header %s = %d (want 1 to %d)", path, f.name, f.v, f.max)
		}
	}
	if dim%heads != 0 {
		return nil, nil, fmt.Errorf("llama2c: %s: header dim = %d is not divisible by n_heads = %d", path, dim, heads)
	}
	hs := dim / heads
	cfg := &model.Config{Arch: "llama", Dim: dim, HiddenDim: hidden, NLayers: layers, NHeads: heads,
		NKVHeads: kvHeads, HeadDim: hs, NVocab: vocab, CtxLen: seqLen, Eps: 1e-5,
		RopeBase: 10000, RopeDims: hs, RopeScale: 1}
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("llama2c: %s: %w", path, err)
	}
	// The floats the header implies, in float64: no overflow whatever the
	// fields (each at most 2^24).
	fd, fh, fl, fv, fs, fkv := float64(dim), float64(hidden), float64(layers), float64(vocab), float64(seqLen), float64(kvHeads*hs)
	need := fv*fd + fl*(2*fd+2*fd*fd+2*fkv*fd+3*fh*fd) + fd + fs*float64(hs/2)*2
	if !shared {
		need += fv * fd
	}
	if need*4 > float64(len(b)-28) {
		return nil, nil, fmt.Errorf("llama2c: %s: the header (dim %d, hidden_dim %d, n_layers %d, n_heads %d, n_kv_heads %d, vocab_size %d, seq_len %d) needs %.0f bytes of weights, the file has %d",
			path, dim, hidden, layers, heads, kvHeads, vocab, seqLen, need*4, len(b)-28)
	}
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
