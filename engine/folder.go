package engine

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/quantize"

	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/tokenizer"
)

// loadFolder loads a Hugging Face model folder as the GGUF file llama.cpp's
// converter would make of it (hfmodel), tokenizing with its own
// tokenizer.json as transformers does.
func loadFolder(dir string, opts Options) (*Engine, error) {
	fo, err := hfmodel.Open(dir)
	if err != nil {
		return nil, err
	}
	e, err := startFolder(fo, opts)
	if err != nil {
		fo.Close()
		return nil, err
	}
	return e, nil
}

func startFolder(fo *hfmodel.Folder, opts Options) (*Engine, error) {
	meta, err := fo.MetaFile()
	if err != nil {
		return nil, err
	}
	var src model.Source = fo
	if opts.Quantize != "" {
		if src, err = quantizeFolder(fo, meta, opts); err != nil {
			return nil, err
		}
	}
	m, err := model.LoadGGUFWith(meta, src, opts.configChanges())
	if err != nil {
		return nil, err
	}
	vocab, err := folderVocab(fo, m.Config().NVocab)
	if err != nil {
		return nil, err
	}
	e := &Engine{path: fo.Dir, file: meta, model: m, vocab: vocab, folder: fo}
	for _, t := range fo.Tensors {
		t, _ = src.Tensor(t.Name)
		e.tensors = append(e.tensors, TensorInfo{t.Name, t.Type.String(), t.Dims, uint64(len(t.Data))})
	}
	e.moveWeights(opts, fo.Holds)
	if err := e.start(opts); err != nil {
		e.freeWeights()
		return nil, err
	}
	return e, nil
}

// folderVocab reads a folder's tokenizer.json with the special tokens of
// its tokenizer_config.json and generation_config.json, padded to n tokens.
func folderVocab(fo *hfmodel.Folder, n int) (*tokenizer.Vocab, error) {
	vocab, err := fo.Tokenizer.NewVocab() // the tokenizer.json the folder already parsed
	if err != nil {
		return nil, err
	}
	sp := fo.Special
	for _, s := range []struct {
		dst *int32
		id  int32
	}{{&vocab.BOS, sp.BOS}, {&vocab.EOS, sp.EOS}, {&vocab.UNK, sp.UNK}, {&vocab.PAD, sp.PAD}} {
		if s.id >= 0 {
			*s.dst = s.id
		}
	}
	if sp.AddBOS != nil {
		vocab.AddBOS = *sp.AddBOS && vocab.BOS >= 0
	}
	if sp.AddEOS != nil {
		vocab.AddEOS = *sp.AddEOS
	}
	if fo.Gen != nil { // generation_config.json's end tokens stop generation too
		for _, id := range fo.Gen.EOS {
			vocab.AddEOG(id)
			switch {
			case vocab.EOS < 0:
				vocab.EOS = id
			case id != vocab.EOS && vocab.EOT < 0:
				vocab.EOT = id
			}
		}
	}
	if err := vocab.PadTo(n); err != nil {
		return nil, err
	}
	if vocab.Len() != n {
		return nil, fmt.Errorf("%s: tokenizer.json has %d tokens, the embeddings %d rows", fo.Dir, vocab.Len(), n)
	}
	return vocab, nil
}

// LoadVocab reads only a model's tokenizer: a GGUF file's vocabulary, or
// a Hugging Face folder's tokenizer.json with its special tokens.
func LoadVocab(path string) (*tokenizer.Vocab, error) {
	if !hfmodel.IsFolder(path) {
		parts, err := openParts(path)
		if err != nil {
			return nil, err
		}
		defer func() {
			for _, p := range parts {
				p.Close()
			}
		}()
		return tokenizer.FromGGUF(parts[0])
	}
	fo, err := hfmodel.Open(path)
	if err != nil {
		return nil, err
	}
	defer fo.Close()
	t, ok := fo.Tensor("token_embd.weight")
	if !ok || len(t.Dims) != 2 {
		return nil, fmt.Errorf("%s: no token_embd.weight", path)
	}
	return folderVocab(fo, int(t.Dims[1]))
}

// quantizeFolder quantizes a folder's weights while loading them, with
// llama-quantize's choice of type per tensor for the mix opts.Quantize,
// so a large folder runs in the memory of its quantized form.
func quantizeFolder(fo *hfmodel.Folder, meta *gguf.File, opts Options) (model.Source, error) {
	ft, err := quantize.ParseFType(opts.Quantize)
	if err != nil {
		return nil, err
	}
	qm, err := quantize.ModelOf(meta)
	if err != nil {
		return nil, err
	}
	_, qm.HasOutput = fo.Tensor("output.weight")
	ts := make([]quantize.Tensor, len(fo.Tensors))
	for i, t := range fo.Tensors {
		ts[i] = quantize.Tensor{Name: t.Name, Type: t.Type, Dims: t.Dims}
	}
	quantize.Order(ts)
	plan, err := quantize.Plan(qm, ts, ft)
	if err != nil {
		return nil, err
	}
	src := model.MapSource{}
	for _, c := range plan {
		t, _ := fo.Tensor(c.Name)
		if c.To != c.Type {
			if t.Data, err = quantize.Convert(c, t.Data, opts.Threads); err != nil {
				return nil, err
			}
			t.Type = c.To
		}
		src[c.Name] = t
	}
	return src, nil
}

// SamplingDefaults are the sampling settings the model's authors ship
// (a Hugging Face folder's generation_config.json), by loom's flag names:
// temp, top-k, top-p, min-p, repeat-penalty; do_sample false means greedy.
// Empty for GGUF files, which carry none.
func (e *Engine) SamplingDefaults() map[string]float64 {
	d := map[string]float64{}
	if e.folder == nil || e.folder.Gen == nil {
		return d
	}
	g := e.folder.Gen
	if g.Temperature != nil {
		d["temp"] = *g.Temperature
	}
	if g.TopK != nil {
		d["top-k"] = float64(*g.TopK)
	}
	if g.TopP != nil {
		d["top-p"] = *g.TopP
	}
	if g.MinP != nil {
		d["min-p"] = *g.MinP
	}
	if g.Repetition != nil {
		d["repeat-penalty"] = *g.Repetition
	}
	if g.DoSample != nil && !*g.DoSample {
		d["temp"] = 0
	}
	return d
}
