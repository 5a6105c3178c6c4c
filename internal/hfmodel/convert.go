package hfmodel

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// OutTypes are the types llama.cpp's converter writes (--outtype), with
// their general.file_type.
var OutTypes = map[string]struct {
	T     tensor.DType
	FType uint32
}{
	"F32":  {tensor.F32, 0},
	"F16":  {tensor.F16, 1},
	"BF16": {tensor.BF16, 32},
	"Q8_0": {tensor.Q8_0, 7},
}

// keepF32 reports whether the converter stores a tensor as F32 whatever
// the output type: 1-D tensors and norms, whatever is not a .weight (the
// experts' 2-D biases), the expert router, learned positions.
func keepF32(t model.Tensor) bool {
	n := len(t.Dims)
	for n > 1 && t.Dims[n-1] == 1 {
		n--
	}
	return n <= 1 || strings.HasSuffix(t.Name, "_norm.weight") || !strings.HasSuffix(t.Name, ".weight") ||
		strings.Contains(t.Name, "ffn_gate_inp.weight") || t.Name == "position_embd.weight" || t.Name == "token_types.weight"
}

// TypeFor is the type the converter writes t in for out (F32, F16, BF16
// or Q8_0); a Q8_0 tensor whose rows its blocks do not divide stays F16,
// as the converter's fallback does.
func TypeFor(t model.Tensor, out tensor.DType) tensor.DType {
	if t.Type == tensor.MXFP4 { // gpt-oss's experts, written as repacked
		return tensor.MXFP4
	}
	if keepF32(t) {
		return tensor.F32
	}
	if out == tensor.Q8_0 && int(t.Dims[0])%tensor.Q8_0.BlockSize() != 0 {
		return tensor.F16
	}
	return out
}

// Progress is called after each tensor Convert writes.
type Progress func(i, n int, name string, dims []uint64, from, to tensor.DType)

// Convert writes the folder as a GGUF file of type outType (a key of
// OutTypes), as llama.cpp's convert_hf_to_gguf.py --outtype would.
func (f *Folder) Convert(w io.Writer, outType string, progress Progress) error {
	ot, ok := OutTypes[strings.ToUpper(outType)]
	if !ok {
		return fmt.Errorf("hf: output type %q (F32, F16, BF16 or Q8_0)", outType)
	}
	ftype := ot.FType
	if ot.T != tensor.Q8_0 && slices.ContainsFunc(f.Tensors, func(t model.Tensor) bool { return t.Type == tensor.MXFP4 }) {
		ftype = 38 // MOSTLY_MXFP4_MOE, as the converter names a float file with MXFP4 experts
	}
	out := gguf.NewWriter()
	for _, kv := range f.Meta.KVs {
		out.Set(kv.Key, kv.Value)
		if kv.Key == "general.name" { // after the name, as the converter orders them
			out.Set("general.file_type", ftype)
			out.Set("general.quantization_version", uint32(2))
		}
	}
	types := make([]tensor.DType, len(f.Tensors))
	for i, t := range f.Tensors {
		types[i] = TypeFor(t, ot.T)
		if err := out.AddTensor(t.Name, types[i], t.Dims, nil); err != nil {
			return err
		}
	}
	// Each tensor is converted when its turn to be written comes: one at a
	// time in memory.
	_, err := out.Stream(w, func(i int) ([]byte, error) {
		t, to := f.Tensors[i], types[i]
		data := t.Data
		if to != t.Type {
			n := 1
			for _, d := range t.Dims {
				n *= int(d)
			}
			x := make([]float32, n)
			if err := quant.Dequantize(t.Type, x, t.Data); err != nil {
				return nil, fmt.Errorf("hf: tensor %s: %w", t.Name, err)
			}
			size, err := tensor.Bytes(to, t.Dims)
			if err != nil {
				return nil, fmt.Errorf("hf: tensor %s: %w", t.Name, err)
			}
			data = make([]byte, size)
			if err := quant.Quantize(to, data, x); err != nil {
				return nil, fmt.Errorf("hf: tensor %s: %w", t.Name, err)
			}
		}
		if progress != nil {
			progress(i, len(f.Tensors), t.Name, t.Dims, t.Type, to)
		}
		return data, nil
	})
	return err
}
