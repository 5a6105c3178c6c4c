package engine

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync/atomic"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/model"
)

// LoRAFile is a LoRA adapter to load with the model (llama.cpp's --lora
// FILE, --lora-scaled FILE SCALE): a GGUF adapter as
// convert_lora_to_gguf.py writes it.
type LoRAFile struct {
	Path  string
	Scale float32 // every request's scale unless it says otherwise (0 is off by default)
}

// LoRAScale is one adapter's scale for a request (llama.cpp's per-request
// "lora": [{"id": 0, "scale": 0.5}]): ID indexes Options.LoRA.
type LoRAScale struct {
	ID    int
	Scale float32
}

// Adapter describes a loaded adapter.
type Adapter struct {
	ID    int
	Name  string // general.name, or the path
	Path  string
	Scale float32 // its default scale (Options.LoRA's, or SetAdapterScales')
}

// loraAdapter is a loaded adapter and its file (mapped: closed with the engine).
type loraAdapter struct {
	l        *model.LoRA
	f        *gguf.File
	path     string
	defaults *loraDefaults // the engine's, shared by its adapters
}

// loraDefaults are the default scales of an engine's adapters, by ID:
// Options.LoRA's, replaced whole by SetAdapterScales while requests run.
// A request without its own list takes them when it is submitted, so it
// applies one set, old or new, from its first token to its last.
type loraDefaults struct {
	scales atomic.Pointer[[]float32]
}

// defaultScales are the adapters' default scales now (nil without
// adapters); the slice is never modified.
func (e *Engine) defaultScales() []float32 {
	if len(e.loras) == 0 {
		return nil
	}
	return *e.loras[0].defaults.scales.Load()
}

// loadLoRA loads opts' adapters onto e's model.
func (e *Engine) loadLoRA(files []LoRAFile) error {
	scales := make([]float32, len(files))
	for i, lf := range files {
		if math.IsNaN(float64(lf.Scale)) || math.IsInf(float64(lf.Scale), 0) {
			return fmt.Errorf("%s: LoRA scale %v", lf.Path, lf.Scale)
		}
		scales[i] = lf.Scale
	}
	d := &loraDefaults{}
	d.scales.Store(&scales)
	for _, lf := range files {
		f, err := gguf.Open(lf.Path)
		if err != nil {
			return err
		}
		l, err := model.LoadLoRA(f, e.model)
		if err != nil {
			f.Close()
			return err
		}
		e.loras = append(e.loras, loraAdapter{l: l, f: f, path: lf.Path, defaults: d})
	}
	return nil
}

// closeLoRA closes the adapters' files.
func (e *Engine) closeLoRA() {
	for _, a := range e.loras {
		a.f.Close()
	}
	e.loras = nil
}

// Adapters lists the loaded LoRA adapters (Options.LoRA), by ID.
func (e *Engine) Adapters() []Adapter {
	scales := e.defaultScales()
	out := make([]Adapter, len(e.loras))
	for i, a := range e.loras {
		out[i] = Adapter{ID: i, Name: a.l.Name, Path: a.path, Scale: scales[i]}
	}
	return out
}

// SetAdapterScales sets the adapters' default scales, which every request
// without its own list (Request.LoRA nil) applies, as llama.cpp's POST
// /lora-adapters does: the adapters listed take their scale, the others
// 0 (off). It is safe while requests run: those already submitted keep
// the scales they were submitted with. A bad list (an unknown or
// repeated id, a scale that is not finite) changes nothing.
func (e *Engine) SetAdapterScales(list []LoRAScale) error {
	if err := e.checkScales(list); err != nil {
		return err
	}
	scales := make([]float32, len(e.loras))
	for _, r := range list {
		scales[r.ID] = r.Scale
	}
	if len(e.loras) > 0 {
		e.loras[0].defaults.scales.Store(&scales)
	}
	return nil
}

// checkScales refuses an adapter list with an unknown or repeated id or
// a scale that is not finite.
func (e *Engine) checkScales(list []LoRAScale) error {
	seen := map[int]bool{}
	for _, r := range list {
		switch {
		case r.ID < 0 || r.ID >= len(e.loras):
			return fmt.Errorf("engine: LoRA adapter id %d (%d loaded)", r.ID, len(e.loras))
		case seen[r.ID]:
			return fmt.Errorf("engine: LoRA adapter id %d given twice", r.ID)
		case math.IsNaN(float64(r.Scale)) || math.IsInf(float64(r.Scale), 0):
			return fmt.Errorf("engine: LoRA adapter %d: scale %v", r.ID, r.Scale)
		}
		seen[r.ID] = true
	}
	return nil
}

// adapters resolves a request's adapters: nil takes every loaded adapter
// at its default scale; a list sets exactly those (the others are off, as
// llama.cpp's server does); scale 0 is off. It also returns the prefix
// cache's salt for that set (0: none).
func (e *Engine) adapters(req []LoRAScale) ([]model.AdapterScale, uint64, error) {
	var set []model.AdapterScale
	if req == nil {
		for i, sc := range e.defaultScales() {
			if sc != 0 {
				set = append(set, model.AdapterScale{L: e.loras[i].l, Scale: sc})
			}
		}
	} else {
		if err := e.checkScales(req); err != nil {
			return nil, 0, err
		}
		for _, r := range req {
			if r.Scale != 0 {
				set = append(set, model.AdapterScale{L: e.loras[r.ID].l, Scale: r.Scale})
			}
		}
	}
	if len(set) == 0 {
		return nil, 0, nil
	}
	// The salt names the adapters and scales, in the order they apply.
	h := fnv.New64a()
	for _, a := range set {
		for i, x := range e.loras {
			if x.l == a.L {
				binary.Write(h, binary.LittleEndian, int64(i))
			}
		}
		binary.Write(h, binary.LittleEndian, math.Float32bits(a.Scale))
	}
	return set, h.Sum64() | 1, nil
}

// adapterIDs appends the IDs of the adapters ens apply, each once,
// ascending.
func (e *Engine) adapterIDs(ids []int, ens []*entry) []int {
	for _, en := range ens {
		for _, a := range en.adapters {
			for i, x := range e.loras {
				if x.l == a.L && !slices.Contains(ids, i) {
					ids = append(ids, i)
				}
			}
		}
	}
	slices.Sort(ids)
	return ids
}
