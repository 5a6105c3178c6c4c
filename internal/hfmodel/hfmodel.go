// Package hfmodel reads a Hugging Face model folder (config.json, the
// safetensors weights, tokenizer.json, tokenizer_config.json,
// generation_config.json) as llama.cpp's converter (convert_hf_to_gguf.py)
// would turn it into GGUF: the same architecture and metadata keys, the
// same tensor names, and the same changes to the values (Llama's Q/K rows
// reordered for interleaved RoPE, Gemma's norm scales stored as 1 + w,
// GPT-2's Conv1D weights transposed, experts stacked into 3-D tensors,
// gpt-oss's fused experts split and their MXFP4 blocks repacked). A
// folder then loads like the GGUF file the converter would write, without
// writing it, and `loom convert` writes that file.
package hfmodel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
	"github.com/loom-inference/loom/safetensors"
	"github.com/loom-inference/loom/tokenizer"
)

// Folder is an opened model folder, seen as GGUF.
type Folder struct {
	Dir    string
	HFArch string // config.json's architectures[0]
	Arch   string // the GGUF architecture
	// Meta holds the metadata llama.cpp's converter writes: hyperparameters,
	// tokenizer and chat template (no tensors).
	Meta *gguf.Writer
	// Tensors are the weights with GGUF names and ggml dims (Dims[0] = row
	// length), F32, F16 or BF16 as stored (MXFP4 for gpt-oss's quantized
	// experts), after the converter's changes; most are views of the
	// mapped files.
	Tensors []model.Tensor
	// Special is what tokenizer_config.json and config.json say of the
	// special tokens and the chat template.
	Special Special
	// Tokenizer is the parsed tokenizer.json.
	Tokenizer *tokenizer.HFFile
	// Gen is generation_config.json (nil if absent).
	Gen *Generation

	byName map[string]int
	set    *safetensors.Set
	emb    embedState         // embedding and reranking folders (embed.go)
	extra  []*safetensors.Set // sentence-transformers modules' weights (2_Dense, 3_Dense)
}

// Generation is what generation_config.json says about decoding.
type Generation struct {
	EOS         []int32  // eos_token_id (one id or a list)
	Temperature *float64 `json:"temperature"`
	TopK        *int     `json:"top_k"`
	TopP        *float64 `json:"top_p"`
	MinP        *float64 `json:"min_p"`
	Repetition  *float64 `json:"repetition_penalty"`
	DoSample    *bool    `json:"do_sample"`
}

// IsFolder reports whether path is a directory holding a config.json.
func IsFolder(path string) bool {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return false
	}
	_, err = os.Stat(configPath(path))
	return err == nil
}

// Open reads the folder at dir.
func Open(dir string) (*Folder, error) {
	var h hparams
	if err := readJSON(configPath(dir), 1<<20, &h); err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	archs, _ := h["architectures"].([]any)
	if len(archs) == 0 {
		return nil, fmt.Errorf("hf: %s: config.json names no architectures", dir)
	}
	hfArch, _ := archs[0].(string)
	fam, ok := families[hfArch]
	if why, refused := refusedArch[hfArch]; !ok && refused {
		return nil, fmt.Errorf("hf: %s: config.json: architecture %q is not supported: %s", dir, hfArch, why)
	}
	if !ok {
		return nil, fmt.Errorf("hf: %s: architecture %q is not supported (supported: %s)", dir, hfArch, strings.Join(Architectures(), ", "))
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("hf: %w", err)
	}
	f := &Folder{Dir: dir, HFArch: hfArch, Arch: fam.arch, Meta: gguf.NewWriter(), set: set, byName: map[string]int{}}
	if err := f.build(fam, h); err != nil {
		f.Close()
		return nil, fmt.Errorf("hf: %s: %w", dir, err)
	}
	return f, nil
}

// TensorNames implements model.TensorNamer.
func (f *Folder) TensorNames() []string {
	names := make([]string, len(f.Tensors))
	for i := range f.Tensors {
		names[i] = f.Tensors[i].Name
	}
	return names
}

// checkLayers refuses a layer count in config.json beyond the layers the
// weights have tensors for (model.layers.N.…, transformer.h.N.…), naming
// its key, before anything is sized by it.
func (f *Folder) checkLayers(h hparams) error {
	for _, k := range []string{"num_hidden_layers", "n_layer", "num_layers"} {
		v, ok := h.num(k)
		if !ok {
			continue
		}
		have := 0
		for _, name := range f.set.Names() {
			if m := layerPrefix.FindStringSubmatch(textName(name)); m != nil {
				if i, err := strconv.Atoi(m[1]); err == nil && i < model.MaxLayers {
					have = max(have, i+1)
				}
			}
		}
		switch {
		case v <= float64(have):
			return nil
		case have == 0:
			return fmt.Errorf("config.json: %s = %s but the weights have no layer tensors", k, numStr(v))
		case have == 1:
			return fmt.Errorf("config.json: %s = %s but the weights have tensors for 1 layer (0)", k, numStr(v))
		}
		return fmt.Errorf("config.json: %s = %s but the weights have tensors for %d layers (0 … %d)", k, numStr(v), have, have-1)
	}
	return nil
}

// Holds reports whether b lies within the mapping of one of the model's
// safetensors files (converted tensors are on the heap: false).
func (f *Folder) Holds(b []byte) bool { return f.set.Holds(b) }

// Close unmaps the weights; the Tensors' data are invalid afterwards.
func (f *Folder) Close() error {
	for _, s := range f.extra {
		s.Close()
	}
	return f.set.Close()
}

// Tensor implements model.Source.
func (f *Folder) Tensor(name string) (model.Tensor, bool) {
	i, ok := f.byName[name]
	if !ok {
		return model.Tensor{}, false
	}
	return f.Tensors[i], true
}

// MetaFile parses Meta as a GGUF file without tensors, so the config and
// tokenizer readers of GGUF files read the folder.
func (f *Folder) MetaFile() (*gguf.File, error) {
	var buf bytes.Buffer
	if _, err := f.Meta.WriteTo(&buf); err != nil {
		return nil, err
	}
	g, err := gguf.Parse(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("hf: %s: metadata: %w", f.Dir, err)
	}
	g.Path = f.Dir
	return g, nil
}

var hfTypes = map[string]tensor.DType{"F32": tensor.F32, "F16": tensor.F16, "BF16": tensor.BF16}

func (f *Folder) build(fam *family, h hparams) error {
	kv := &kvs{arch: fam.arch, w: f.Meta, f: f}
	kv.set("general.architecture", fam.arch)
	kv.set("general.name", filepath.Base(filepath.Clean(f.Dir)))
	h, err := h.textConfig(fam.defaults)
	if err != nil {
		return err
	}
	if err := h.checkTypes(); err != nil {
		return err
	}
	if err := f.checkLayers(h); err != nil {
		return err
	}
	if err := fam.params(h, kv); err != nil {
		return err
	}
	tied, _ := h["tie_word_embeddings"].(bool)
	hasEmbd := slices.ContainsFunc(f.set.Names(), func(n string) bool { return textName(n) == "model.embed_tokens.weight" })

	type expertPart struct {
		parts map[int]*safetensors.Tensor
	}
	experts := map[string]*expertPart{}
	var order []string
	for _, name := range f.set.Names() {
		st, _ := f.set.Tensor(name)
		if fam.custom != nil {
			ts, handled, err := fam.custom(f, name, st)
			if err != nil {
				return fmt.Errorf("tensor %q: %w", name, err)
			}
			for _, t := range ts {
				if err := f.add(t); err != nil {
					return err
				}
			}
			if handled {
				continue
			}
		}
		m, err := fam.tensor(name)
		if err != nil {
			return err
		}
		if m.name == "output.weight" { // a family whose table keeps the head
			switch {
			case tied && hasEmbd:
				m.name = "" // the same values as the embeddings
			case tied: // saved once, under the head's name
				m.name = "token_embd.weight"
			}
		}
		if m.name == "" {
			continue
		}
		if _, ok := hfTypes[st.DType]; !ok {
			return fmt.Errorf("tensor %q: dtype %s (F32, F16 or BF16 expected)", name, st.DType)
		}
		if m.expert >= 0 {
			e := experts[m.name]
			if e == nil {
				e = &expertPart{parts: map[int]*safetensors.Tensor{}}
				experts[m.name] = e
				order = append(order, m.name)
			}
			if _, dup := e.parts[m.expert]; dup {
				return fmt.Errorf("tensor %q: expert %d twice", name, m.expert)
			}
			e.parts[m.expert] = st
			continue
		}
		t, err := convertTensor(fam, h, m.name, st)
		if err != nil {
			return err
		}
		if err := f.add(t); err != nil {
			return err
		}
	}
	for _, name := range order {
		t, err := stack(name, experts[name].parts)
		if err != nil {
			return err
		}
		if err := f.add(t); err != nil {
			return err
		}
	}
	if fam.outputCopy {
		if e, ok := f.Tensor("token_embd.weight"); ok {
			if _, has := f.Tensor("output.weight"); !has {
				e.Name = "output.weight"
				f.add(e)
			}
		}
	}
	if rf, err := llama3RopeFactors(h); err != nil {
		return err
	} else if rf != nil && !fam.noLlama3Freqs {
		f.add(rf32("rope_freqs.weight", rf))
	}
	if fam.modules != nil {
		ts, err := fam.modules(f)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := f.add(t); err != nil {
				return err
			}
		}
	}
	if fam.extra != nil {
		ts, err := fam.extra(h)
		if err != nil {
			return err
		}
		for _, t := range ts {
			if err := f.add(t); err != nil {
				return err
			}
		}
	}
	sort.SliceStable(f.Tensors, func(i, j int) bool { return tensorOrder(f.Tensors[i].Name) < tensorOrder(f.Tensors[j].Name) })
	for i, t := range f.Tensors {
		f.byName[t.Name] = i
	}
	if err := f.vocabMeta(h, fam); err != nil {
		return err
	}
	return nil
}

// tensorOrder sorts embeddings first, then blocks in numeric order, then
// the rest (output norm and head), names in order within each.
func tensorOrder(name string) string {
	if rest, ok := strings.CutPrefix(name, "blk."); ok {
		i := strings.Index(rest, ".")
		n, _ := strconv.Atoi(rest[:i])
		return fmt.Sprintf("1%06d%s", n, rest[i:])
	}
	if strings.HasPrefix(name, "token_embd") || strings.HasPrefix(name, "position_embd") || strings.HasPrefix(name, "rope_freqs") {
		return "0" + name
	}
	return "2" + name
}

func (f *Folder) add(t model.Tensor) error {
	if _, dup := f.byName[t.Name]; dup {
		return fmt.Errorf("two tensors map to %q", t.Name)
	}
	f.byName[t.Name] = len(f.Tensors)
	f.Tensors = append(f.Tensors, t)
	return nil
}

// ggmlDims reverses a row-major shape into ggml order.
func ggmlDims(shape []int64) []uint64 {
	d := make([]uint64, len(shape))
	for i, s := range shape {
		d[len(shape)-1-i] = uint64(s)
	}
	if len(d) == 0 {
		d = []uint64{1}
	}
	return d
}

// convertTensor applies the family's changes to one tensor.
func convertTensor(fam *family, h hparams, name string, st *safetensors.Tensor) (model.Tensor, error) {
	t := model.Tensor{Name: name, Type: hfTypes[st.DType], Dims: ggmlDims(st.Shape), Data: st.Data}
	size := len(st.Data) / max(int(st.Elems()), 1)
	switch {
	case fam.permuteQK && (strings.HasSuffix(name, "attn_q.weight") || strings.HasSuffix(name, "attn_q.bias")):
		heads, err := h.count(-1, "num_attention_heads")
		if err != nil {
			return t, err
		}
		return t, permuteRows(&t, int(heads), size)
	case fam.permuteQK && (strings.HasSuffix(name, "attn_k.weight") || strings.HasSuffix(name, "attn_k.bias")):
		heads, err := h.count(-1, "num_attention_heads")
		if err != nil {
			return t, err
		}
		kv, err := h.count(int(heads), "num_key_value_heads")
		if err != nil {
			return t, err
		}
		return t, permuteRows(&t, int(kv), size)
	case fam.normPlusOne && strings.HasSuffix(name, "norm.weight"):
		// The converter adds 1 in the tensor's float type (F16 stays F16,
		// anything else is widened to F32 first).
		v := make([]float32, st.Elems())
		if err := quant.Dequantize(t.Type, v, t.Data); err != nil {
			return t, err
		}
		for i := range v {
			v[i]++
			if t.Type == tensor.F16 {
				v[i] = quant.RoundF16(v[i])
			}
		}
		return rf32(name, v), nil
	case fam.conv1D && len(st.Shape) == 2 && strings.HasSuffix(name, ".weight") && strings.HasPrefix(name, "blk."):
		// Conv1D stores [in, out]: transposed to [out, in] rows.
		rows, cols := int(st.Shape[0]), int(st.Shape[1])
		out := make([]byte, len(st.Data))
		hugepage.Advise(out) // read whole every token: on huge pages (engine's moveWeights copies the mapped ones)
		for r := range rows {
			for c := range cols {
				copy(out[(c*rows+r)*size:(c*rows+r+1)*size], st.Data[(r*cols+c)*size:(r*cols+c+1)*size])
			}
		}
		t.Data, t.Dims = out, []uint64{uint64(rows), uint64(cols)}
	}
	return t, nil
}

// permuteRows reorders the rows of a Q or K projection (or bias) from
// rotate-half RoPE pairs (i, i+d/2) to interleaved pairs (2i, 2i+1) within
// each of heads heads: the converter's reshape(heads, 2, d/2, …)
// .swapaxes(1, 2).
func permuteRows(t *model.Tensor, heads, size int) error {
	rows := int(t.Dims[len(t.Dims)-1])
	if len(t.Dims) == 1 {
		rows = int(t.Dims[0])
	}
	if heads <= 0 || rows%(2*heads) != 0 {
		return fmt.Errorf("tensor %q: %d rows do not split into %d heads of pairs", t.Name, rows, heads)
	}
	row := len(t.Data) / rows
	half := rows / heads / 2
	out := make([]byte, len(t.Data))
	hugepage.Advise(out) // read whole every token: on huge pages (engine's moveWeights copies the mapped ones)
	for h := range heads {
		for j := range 2 {
			for i := range half {
				src := h*2*half + j*half + i
				dst := h*2*half + i*2 + j
				copy(out[dst*row:(dst+1)*row], t.Data[src*row:(src+1)*row])
			}
		}
	}
	t.Data = out
	return nil
}

// stack joins experts 0..n-1 into one 3-D tensor (ggml [cols, rows, n]).
func stack(name string, parts map[int]*safetensors.Tensor) (model.Tensor, error) {
	n := len(parts)
	first := parts[0]
	if first == nil {
		return model.Tensor{}, fmt.Errorf("%s: expert 0 missing", name)
	}
	var data []byte
	for e := range n {
		p := parts[e]
		if p == nil {
			return model.Tensor{}, fmt.Errorf("%s: expert %d missing (%d experts)", name, e, n)
		}
		if p.DType != first.DType || fmt.Sprint(p.Shape) != fmt.Sprint(first.Shape) {
			return model.Tensor{}, fmt.Errorf("%s: expert %d is %s %v, expert 0 %s %v", name, e, p.DType, p.Shape, first.DType, first.Shape)
		}
		data = append(data, p.Data...)
	}
	dims := append(ggmlDims(first.Shape), uint64(n))
	return model.Tensor{Name: name, Type: hfTypes[first.DType], Dims: dims, Data: data}, nil
}

// rf32 makes an F32 tensor of v.
func rf32(name string, v []float32) model.Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return model.Tensor{Name: name, Type: tensor.F32, Dims: []uint64{uint64(len(v))}, Data: b}
}

// llama3RopeFactors computes rope_freqs.weight for rope_scaling (or
// rope_parameters) of type llama3, as the converter does (in float32).
func llama3RopeFactors(h hparams) ([]float32, error) {
	rs := ropeDict(h)
	if rs == nil {
		return nil, nil
	}
	typ, _ := rs["rope_type"].(string)
	if typ == "" {
		typ, _ = rs["type"].(string)
	}
	if typ != "llama3" {
		return nil, nil
	}
	get := func(k string, def float64) float64 {
		if v, ok := rs[k].(float64); ok {
			return v
		}
		return def
	}
	if get("factor", 8) <= 0 || get("low_freq_factor", 1) <= 0 || get("high_freq_factor", 4) <= get("low_freq_factor", 1) || get("original_max_position_embeddings", 8192) <= 0 {
		return nil, fmt.Errorf("config.json: rope_scaling %v: want factor, low_freq_factor and original_max_position_embeddings positive and high_freq_factor above low_freq_factor", rs)
	}
	base := 10000.0 // rope_parameters' own rope_theta first, as TextModel mirrors them
	if v, ok := rs["rope_theta"].(float64); ok {
		base = v
	} else if v, ok := h.num("rope_theta"); ok {
		base = v
	}
	dim, err := ropeDims(h)
	if err != nil {
		return nil, err
	}
	// In float32 throughout, as the converter's torch tensors are: the
	// frequencies base^(−i/dim), their wavelengths 2π/f, and the smooth
	// blend between the low- and high-frequency factors.
	factor, lowF, highF := float32(get("factor", 8)), float32(get("low_freq_factor", 1)), float32(get("high_freq_factor", 4))
	old := float32(get("original_max_position_embeddings", 8192))
	lowWave, highWave := old/lowF, old/highF
	var out []float32
	for i := 0; i < int(dim); i += 2 {
		e := float32(i) / float32(dim)
		freq := 1 / float32(math.Pow(base, float64(e)))
		wave := float32(2*math.Pi) / freq
		switch {
		case wave < highWave:
			out = append(out, 1)
		case wave > lowWave:
			out = append(out, factor)
		default:
			smooth := (float32(old/wave) - lowF) / (highF - lowF)
			out = append(out, 1/(float32((1-smooth)/factor)+smooth))
		}
	}
	return out, nil
}
