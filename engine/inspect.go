package engine

import (
	"fmt"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/internal/quant"
)

// FileInfo is what a model file holds, read without loading its weights:
// a GGUF file, or a Hugging Face folder seen as the GGUF file it converts
// to.
type FileInfo struct {
	Path      string
	Version   uint32
	Alignment uint64
	Metadata  []gguf.KV
	Tensors   []gguf.TensorInfo
	// Model is the hyperparameters Loom reads, when it can run the
	// architecture; ModelErr says why not otherwise.
	Model    *ModelInfo
	ModelErr error
	// Unsupported lists tensors of types Loom cannot compute with.
	Unsupported []string
}

// Inspect reads a model file's (or folder's) metadata and tensor index and
// checks whether Loom can run it.
func Inspect(path string) (*FileInfo, error) {
	var f *gguf.File
	var src model.Source
	fi := &FileInfo{Path: path}
	if hfmodel.IsFolder(path) {
		fo, err := hfmodel.Open(path)
		if err != nil {
			return nil, err
		}
		defer fo.Close()
		if f, err = fo.MetaFile(); err != nil {
			return nil, err
		}
		for _, t := range fo.Tensors {
			fi.Tensors = append(fi.Tensors, gguf.TensorInfo{Name: t.Name, Type: t.Type, Dims: t.Dims, Size: uint64(len(t.Data))})
		}
		src = fo
	} else {
		var err error
		if f, err = gguf.Open(path); err != nil {
			return nil, err
		}
		defer f.Close()
		fi.Tensors, src = f.Tensors, model.GGUFSource{F: f}
		// The hyperparameters of a split model are checked against the
		// tensors of all its parts (when they are all there).
		if splitName.MatchString(path) {
			if parts, err := openParts(path); err == nil {
				defer func() {
					for _, p := range parts {
						p.Close()
					}
				}()
				src = model.SplitSource(parts)
			}
		}
	}
	fi.Version, fi.Alignment, fi.Metadata = f.Version, f.Alignment, f.KVs
	for _, t := range fi.Tensors {
		if !quant.Supported(t.Type) {
			fi.Unsupported = append(fi.Unsupported, fmt.Sprintf("%s (%s)", t.Name, t.Type))
		}
	}
	if c, err := model.ConfigFrom(f, src); err != nil {
		fi.ModelErr = err
	} else {
		mi := infoOf(c)
		fi.Model = &mi
	}
	return fi, nil
}
