package hfmodel

import (
	"fmt"
	"regexp"

	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/safetensors"
)

// gpt-oss's experts, as GptOssModel converts them. Each layer stores all
// its experts in one tensor per projection, gate and up fused with their
// rows (outputs) interleaved: gate = rows 0, 2, 4, …, up = rows 1, 3, 5, ….
//
// The released checkpoints hold them in MXFP4 (quant_method "mxfp4"):
// mlp.experts.{gate_up,down}_proj_blocks, uint8 [experts, rows, blocks, 16]
// (32 4-bit codes per block, element 2i in the low nibble of byte i and
// 2i+1 in the high one), and _scales, uint8 [experts, rows, blocks] (an
// E8M0 exponent per block). The converter repacks them, losslessly, into
// ggml's block_mxfp4 — the scale byte, then 16 bytes whose byte j holds
// element j in its low nibble and element j+16 in its high one — as a
// tensor [blocks·32, rows, experts] of type MXFP4, in every output type.
//
// Dequantized checkpoints hold mlp.experts.gate_up_proj [experts, hidden,
// 2·ffn] and down_proj [experts, ffn, hidden] (inputs first): the
// converter transposes them to rows of outputs. The biases,
// gate_up_proj_bias [experts, 2·ffn] and down_proj_bias [experts, hidden],
// split the same way.

var gptossExpert = regexp.MustCompile(`^model\.layers\.(\d+)\.mlp\.experts\.(gate_up_proj|down_proj)(_blocks|_scales|_bias|)$`)

// gptossExperts converts one of a layer's expert tensors (name as stored);
// other names are not handled.
func gptossExperts(f *Folder, name string, st *safetensors.Tensor) ([]model.Tensor, bool, error) {
	m := gptossExpert.FindStringSubmatch(textName(name))
	if m == nil {
		return nil, false, nil
	}
	prefix, proj, kind := "blk."+m[1]+".", m[2], m[3]
	gate, up, down := prefix+"ffn_gate_exps", prefix+"ffn_up_exps", prefix+"ffn_down_exps"
	switch kind {
	case "_scales": // read with its _blocks
		if _, ok := f.set.Tensor(name[:len(name)-len("_scales")] + "_blocks"); !ok {
			return nil, true, fmt.Errorf("MXFP4 scales without their _blocks tensor")
		}
		return nil, true, nil
	case "_blocks":
		scales, ok := f.set.Tensor(name[:len(name)-len("_blocks")] + "_scales")
		if !ok {
			return nil, true, fmt.Errorf("MXFP4 blocks without their _scales tensor")
		}
		t, err := repackMXFP4(st, scales)
		if err != nil {
			return nil, true, err
		}
		if proj == "down_proj" {
			t.Name = down + ".weight"
			return []model.Tensor{t}, true, nil
		}
		g, u, err := splitRows(t, gate+".weight", up+".weight")
		return []model.Tensor{g, u}, true, err
	}
	dt, ok := hfTypes[st.DType]
	if !ok {
		return nil, true, fmt.Errorf("dtype %s (F32, F16 or BF16 expected)", st.DType)
	}
	size := dt.Traits().TypeSize
	if kind == "_bias" { // [experts, n]: its rows are ggml's [n, experts]
		if len(st.Shape) != 2 {
			return nil, true, fmt.Errorf("shape %v (want [experts, width])", st.Shape)
		}
		t := model.Tensor{Type: dt, Dims: ggmlDims(st.Shape), Data: st.Data}
		if proj == "down_proj" {
			t.Name = down + ".bias"
			return []model.Tensor{t}, true, nil
		}
		g, u, err := splitCols(t, size, gate+".bias", up+".bias")
		return []model.Tensor{g, u}, true, err
	}
	// Unquantized [experts, in, out]: transposed to [experts, out, in].
	if len(st.Shape) != 3 {
		return nil, true, fmt.Errorf("shape %v (want [experts, inputs, outputs])", st.Shape)
	}
	e, in, out := int(st.Shape[0]), int(st.Shape[1]), int(st.Shape[2])
	data := make([]byte, len(st.Data))
	for x := range e {
		src, dst := st.Data[x*in*out*size:], data[x*in*out*size:]
		for i := range in {
			for o := range out {
				copy(dst[(o*in+i)*size:(o*in+i+1)*size], src[(i*out+o)*size:(i*out+o+1)*size])
			}
		}
	}
	t := model.Tensor{Type: dt, Dims: []uint64{uint64(in), uint64(out), uint64(e)}, Data: data}
	if proj == "down_proj" {
		t.Name = down + ".weight"
		return []model.Tensor{t}, true, nil
	}
	g, u, err := splitRows(t, gate+".weight", up+".weight")
	return []model.Tensor{g, u}, true, err
}

// repackMXFP4 turns blocks [experts, rows, n, 16] and scales [experts,
// rows, n] into ggml's MXFP4 tensor [n·32, rows, experts].
func repackMXFP4(blocks, scales *safetensors.Tensor) (model.Tensor, error) {
	b, s := blocks.Shape, scales.Shape
	switch {
	case blocks.DType != "U8" || scales.DType != "U8":
		return model.Tensor{}, fmt.Errorf("MXFP4 blocks %s and scales %s (U8 expected)", blocks.DType, scales.DType)
	case len(b) != 4 || b[3] != 16:
		return model.Tensor{}, fmt.Errorf("MXFP4 blocks of shape %v (want [experts, rows, blocks, 16])", b)
	case len(s) != 3 || s[0] != b[0] || s[1] != b[1] || s[2] != b[2]:
		return model.Tensor{}, fmt.Errorf("MXFP4 scales of shape %v for blocks %v (want %v)", s, b, b[:3])
	}
	n := int(b[0] * b[1] * b[2])         // blocks in all
	bs := tensor.MXFP4.Traits().TypeSize // 17
	out := make([]byte, n*bs)
	for k := range n {
		src, dst := blocks.Data[16*k:16*k+16], out[bs*k:bs*(k+1)]
		dst[0] = scales.Data[k]
		nib := func(i int) byte { return src[i/2] >> (4 * (i % 2)) & 0xF }
		for j := range 16 {
			dst[1+j] = nib(j) | nib(j+16)<<4
		}
	}
	return model.Tensor{Type: tensor.MXFP4, Dims: []uint64{uint64(b[2] * 32), uint64(b[1]), uint64(b[0])}, Data: out}, nil
}

// splitRows splits a 3-D tensor's rows (Dims[1]) into its even rows (a)
// and odd rows (b).
func splitRows(t model.Tensor, a, b string) (model.Tensor, model.Tensor, error) {
	rows, e := int(t.Dims[1]), int(t.Dims[2])
	if rows%2 != 0 || rows*e == 0 {
		return model.Tensor{}, model.Tensor{}, fmt.Errorf("%d fused gate/up rows in %d experts (want an even, positive count)", rows, e)
	}
	row := len(t.Data) / (rows * e)
	dims := []uint64{t.Dims[0], uint64(rows / 2), t.Dims[2]}
	ta := model.Tensor{Name: a, Type: t.Type, Dims: dims, Data: make([]byte, len(t.Data)/2)}
	tb := model.Tensor{Name: b, Type: t.Type, Dims: dims, Data: make([]byte, len(t.Data)/2)}
	for r := range rows * e {
		dst := ta.Data
		if r%2 == 1 {
			dst = tb.Data
		}
		copy(dst[r/2*row:(r/2+1)*row], t.Data[r*row:(r+1)*row])
	}
	return ta, tb, nil
}

// splitCols splits a 2-D tensor's columns (Dims[0]) into its even (a) and
// odd (b) ones.
func splitCols(t model.Tensor, size int, a, b string) (model.Tensor, model.Tensor, error) {
	cols := int(t.Dims[0])
	if cols%2 != 0 {
		return model.Tensor{}, model.Tensor{}, fmt.Errorf("%d fused gate/up biases per expert (not even)", cols)
	}
	dims := []uint64{uint64(cols / 2), t.Dims[1]}
	ta := model.Tensor{Name: a, Type: t.Type, Dims: dims, Data: make([]byte, len(t.Data)/2)}
	tb := model.Tensor{Name: b, Type: t.Type, Dims: dims, Data: make([]byte, len(t.Data)/2)}
	for c := range len(t.Data) / size {
		dst := ta.Data
		if c%2 == 1 {
			dst = tb.Data
		}
		copy(dst[c/2*size:(c/2+1)*size], t.Data[c*size:(c+1)*size])
	}
	return ta, tb, nil
}
