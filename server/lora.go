package server

import (
	"net/http"
	"strings"

	"github.com/loom-inference/loom/engine"
)

func init() {
	protocolRoutes = append(protocolRoutes, route{pattern: "GET /lora-adapters", handler: func(s *Server) http.HandlerFunc { return s.loraAdapters }})
}

// loraAdapter is one entry of llama.cpp's GET /lora-adapters.
type loraAdapter struct {
	ID    int     `json:"id"`
	Path  string  `json:"path"`
	Name  string  `json:"name"` // the file's base name (the metrics' adapter name)
	Scale float32 `json:"scale"`
}

// loraAdapters lists a model's LoRA adapters as llama.cpp's server does
// (id, path, default scale; a request's "lora" list picks them by id).
// With several models, ?model= names one (default: the only one).
func (s *Server) loraAdapters(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("model")
	if name == "" {
		if ms := s.list(); len(ms) == 1 {
			name = ms[0].Name
		} else {
			writeError(w, badRequest("model", "several models (or none) are loaded: name one with ?model="))
			return
		}
	}
	m, err := s.modelFor(r, name)
	if err != nil {
		writeError(w, err)
		return
	}
	out := []loraAdapter{}
	for _, a := range m.Engine.Adapters() {
		out = append(out, loraAdapter{ID: a.ID, Path: a.Path, Name: adapterName(a), Scale: a.Scale})
	}
	writeJSON(w, 200, out)
}

// adapterID finds the adapter of m named name (adapterName).
func adapterID(m *Model, name string) (int, bool) {
	for _, a := range m.Engine.Adapters() {
		if adapterName(a) == name {
			return a.ID, true
		}
	}
	return 0, false
}

// modelAdapters is the adapter list a request's model name implies:
// "BASE:ADAPTER" applies that adapter alone, at its default scale (1 when
// loaded at 0); nil for the base model's own name.
func modelAdapters(m *Model, requested string) []engine.LoRAScale {
	if requested == m.Name || !strings.HasPrefix(requested, m.Name+":") {
		return nil
	}
	id, ok := adapterID(m, requested[len(m.Name)+1:])
	if !ok {
		return nil
	}
	sc := m.Engine.Adapters()[id].Scale
	if sc == 0 {
		sc = 1
	}
	return []engine.LoRAScale{{ID: id, Scale: sc}}
}
