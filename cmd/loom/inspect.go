package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/model"
	_ "github.com/loom-inference/loom/internal/model/families"
	"github.com/loom-inference/loom/internal/quant"
)

// cmdInspect validates a GGUF file and prints its metadata, hyperparameters
// and tensor table. It exits non-zero on a malformed file or on an
// architecture or tensor type Loom cannot run.
func cmdInspect(args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: loom inspect FILE|DIR")
	}
	var f *gguf.File
	var tensors []gguf.TensorInfo
	var src model.Source
	if hfmodel.IsFolder(fs.Arg(0)) {
		// A Hugging Face folder shows as the GGUF file the converter
		// would write (loom convert), tensors as stored.
		fo, err := hfmodel.Open(fs.Arg(0))
		if err != nil {
			return err
		}
		defer fo.Close()
		if f, err = fo.MetaFile(); err != nil {
			return err
		}
		for _, t := range fo.Tensors {
			tensors = append(tensors, gguf.TensorInfo{Name: t.Name, Type: t.Type, Dims: t.Dims, Size: uint64(len(t.Data))})
		}
		src = fo
	} else {
		var err error
		if f, err = gguf.Open(fs.Arg(0)); err != nil {
			return err
		}
		defer f.Close()
		tensors, src = f.Tensors, model.GGUFSource{F: f}
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s\nversion\t%d\nalignment\t%d\ntensors\t%d\nmetadata\t%d\n\n", f.Path, f.Version, f.Alignment, len(tensors), len(f.KVs))
	fmt.Fprintln(w, "METADATA")
	for _, kv := range f.KVs {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", kv.Key, kv.Value.Type, kv.Value)
	}
	fmt.Fprintln(w, "\nTENSORS")
	var params, bytes uint64
	byType := map[string]uint64{}
	var unsupported []string
	for _, t := range tensors {
		fmt.Fprintf(w, "  %s\t%s\t%v\t%d\n", t.Name, t.Type, t.Dims, t.Size)
		params += t.Elements()
		bytes += t.Size
		byType[t.Type.String()] += t.Size
		if !quant.Supported(t.Type) {
			unsupported = append(unsupported, fmt.Sprintf("%s (%s)", t.Name, t.Type))
		}
	}
	fmt.Fprintf(w, "\nparameters\t%d (%.2fM)\ntensor bytes\t%d (%.1f MiB)\n", params, float64(params)/1e6, bytes, float64(bytes)/(1<<20))
	for ty, b := range byType {
		fmt.Fprintf(w, "  %s\t%.1f MiB\n", ty, float64(b)/(1<<20))
	}
	if ft, err := f.Uint("general.file_type"); err == nil {
		fmt.Fprintf(w, "file type\t%d\n", ft)
	}
	cfg, cerr := model.ConfigFrom(f, src)
	if cerr == nil {
		fmt.Fprintf(w, "\nHYPERPARAMETERS\n  arch\t%s\n  dim\t%d\n  layers\t%d\n  heads\t%d (kv %d, head_dim %d)\n  ffn\t%d\n  vocab\t%d\n  context\t%d\n  rope\tbase %g, dims %d, neox %v\n  rms eps\t%g\n",
			cfg.Arch, cfg.Dim, cfg.NLayers, cfg.NHeads, cfg.NKVHeads, cfg.HeadDim, cfg.HiddenDim, cfg.NVocab, cfg.CtxLen, cfg.RopeBase, cfg.RopeDims, cfg.RopeNeoX, cfg.Eps)
	}
	w.Flush()
	if cerr != nil {
		return cerr
	}
	if len(unsupported) > 0 {
		return fmt.Errorf("%s: unsupported tensor types: %v", f.Path, unsupported)
	}
	return nil
}
