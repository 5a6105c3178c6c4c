package main

import (
	"errors"
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/quantize"
)

// cmdInspect validates a GGUF file and prints its metadata, hyperparameters
// and tensor table. It exits non-zero on a malformed file or on an
// architecture or tensor type Loom cannot run.
func cmdInspect(args []string) error {
	pos, err := parseArgs(newFlags("inspect"), args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("want FILE or DIR (loom help inspect)")
	}
	if err := unexpected(pos, 1); err != nil {
		return err
	}
	path, err := resolveModel(pos[0])
	if err != nil {
		return err
	}
	fi, err := engine.Inspect(path)
	if err != nil {
		return err
	}
	tensors := fi.Tensors
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "file\t%s\nversion\t%d\nalignment\t%d\ntensors\t%d\nmetadata\t%d\n\n", fi.Path, fi.Version, fi.Alignment, len(tensors), len(fi.Metadata))
	fmt.Fprintln(w, "METADATA")
	for _, kv := range fi.Metadata {
		fmt.Fprintf(w, "  %s\t%s\t%s\n", kv.Key, kv.Value.Type, kv.Value)
	}
	fmt.Fprintln(w, "\nTENSORS")
	var params, bytes uint64
	byType := map[string]uint64{}
	for _, t := range tensors {
		fmt.Fprintf(w, "  %s\t%s\t%v\t%d\n", t.Name, t.Type, t.Dims, t.Size)
		params += t.Elements()
		bytes += t.Size
		byType[t.Type.String()] += t.Size
	}
	fmt.Fprintf(w, "\nparameters\t%d (%.2fM)\ntensor bytes\t%d (%.1f MiB)\n", params, float64(params)/1e6, bytes, float64(bytes)/(1<<20))
	for ty, b := range byType {
		fmt.Fprintf(w, "  %s\t%.1f MiB\n", ty, float64(b)/(1<<20))
	}
	for _, kv := range fi.Metadata {
		if ft, ok := kv.Value.Int(); ok && kv.Key == "general.file_type" {
			fmt.Fprintf(w, "file type\t%d (%s)\n", ft, quantize.FType(ft))
		}
	}
	cfg, cerr := fi.Model, fi.ModelErr
	if cerr == nil {
		fmt.Fprintf(w, "\nHYPERPARAMETERS\n  arch\t%s\n  dim\t%d\n  layers\t%d\n  heads\t%d (kv %d, head_dim %d)\n  ffn\t%d\n  vocab\t%d\n  context\t%d\n  rope\tbase %g, dims %d, neox %v\n  rms eps\t%g\n",
			cfg.Arch, cfg.Dim, cfg.NLayers, cfg.NHeads, cfg.NKVHeads, cfg.HeadDim, cfg.HiddenDim, cfg.NVocab, cfg.CtxLen, cfg.RopeBase, cfg.RopeDims, cfg.RopeNeoX, cfg.Eps)
		// The KV cache by --cache-type: K and V of every attention layer
		// (a row is a layer's KV heads × head_dim; q8_0 takes 34 bytes per
		// 32 elements, q4_0 18).
		elems := 0
		for l := range cfg.NLayers {
			if !cfg.Recurrent(l) && cfg.KVLayer(l) == l {
				elems += 2 * cfg.KVHeadsOf(l) * cfg.HeadDimOf(l)
			}
		}
		fmt.Fprintf(w, "  kv cache	per position:")
		for _, c := range []struct {
			name  string
			bytes float64
		}{{"f16", 2}, {"q8_0", 34.0 / 32}, {"q4_0", 18.0 / 32}} {
			per := float64(elems) * c.bytes
			fmt.Fprintf(w, " %s %.0f bytes (%.1f MiB at %d);", c.name, per, per*float64(cfg.CtxLen)/(1<<20), cfg.CtxLen)
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	if cerr != nil {
		return cerr
	}
	if len(fi.Unsupported) > 0 {
		return fmt.Errorf("%s: unsupported tensor types: %v", fi.Path, fi.Unsupported)
	}
	return nil
}
