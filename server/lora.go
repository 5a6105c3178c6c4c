package server

import (
	"encoding/json"
	"math"
	"net/http"
	"strings"

	"github.com/loom-inference/loom/engine"
)

func init() {
	protocolRoutes = append(protocolRoutes,
		route{pattern: "GET /lora-adapters", handler: func(s *Server) http.HandlerFunc { return s.loraAdapters }},
		route{pattern: "POST /lora-adapters", handler: func(s *Server) http.HandlerFunc { return s.setLoRAAdapters }})
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
	m, ok := s.loraModel(w, r)
	if !ok {
		return
	}
	out := []loraAdapter{}
	for _, a := range m.Engine.Adapters() {
		out = append(out, loraAdapter{ID: a.ID, Path: a.Path, Name: adapterName(a), Scale: a.Scale})
	}
	writeJSON(w, 200, out)
}

// setLoRAAdapters is llama.cpp's POST /lora-adapters: the body,
// [{"id": 0, "scale": 0.5}, …], sets the default scales of the model's
// adapters, which every request without its own "lora" list applies from
// then on (requests already running keep theirs); the adapters not listed
// are off (scale 0), as llama.cpp's. With several models, ?model= names
// one. The scales last as long as the model stays loaded (a model loaded
// on demand again starts from its --lora scales).
func (s *Server) setLoRAAdapters(w http.ResponseWriter, r *http.Request) {
	m, ok := s.loraModel(w, r)
	if !ok {
		return
	}
	var raw json.RawMessage
	if err := s.decode(w, r, &raw); err != nil {
		writeError(w, err)
		return
	}
	list, err := parseLoRAList(raw, m, "adapters", "")
	if err != nil {
		writeError(w, err)
		return
	}
	if err := m.Engine.SetAdapterScales(list); err != nil { // checked above: not reached
		writeError(w, badRequest("", "%v", err))
		return
	}
	writeJSON(w, 200, map[string]bool{"success": true})
}

// loraModel is the model a /lora-adapters request names with ?model=,
// else the only one loaded; on failure it has written the error.
func (s *Server) loraModel(w http.ResponseWriter, r *http.Request) (*Model, bool) {
	name := r.URL.Query().Get("model")
	if name == "" {
		ms := s.list()
		if len(ms) != 1 {
			writeError(w, badRequest("model", "several models (or none) are loaded: name one with ?model="))
			return nil, false
		}
		name = ms[0].Name
	}
	m, err := s.modelFor(r, name)
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return m, true
}

// maxLoRAScale bounds an adapter's scale.
const maxLoRAScale = 1e4

// parseLoRAList reads a list of adapter scales, [{"id": N, "scale": S},
// …], against m's adapters: each needs an id of one of them, given once,
// and a finite scale of at most maxLoRAScale in magnitude. name is the
// list's name in messages, param the field errors name ("": none).
func parseLoRAList(raw json.RawMessage, m *Model, name, param string) ([]engine.LoRAScale, *apiError) {
	var list []struct {
		ID    *int     `json:"id"`
		Scale *float64 `json:"scale"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		msg := "null"
		if err != nil {
			msg = err.Error()
		}
		return nil, badRequest(param, `%s must be a list of {"id": N, "scale": S}: %v`, name, msg)
	}
	n := len(m.Engine.Adapters())
	out := []engine.LoRAScale{}
	for i, a := range list {
		switch {
		case a.ID == nil || a.Scale == nil:
			return nil, badRequest(param, "%s[%d] needs an id and a scale", name, i)
		case *a.ID < 0 || *a.ID >= n:
			return nil, badRequest(param, "%s[%d]: adapter id %d, model %q has %d adapters (loom serve --lora FILE)", name, i, *a.ID, m.Name, n)
		case math.IsNaN(*a.Scale) || math.IsInf(*a.Scale, 0) || math.Abs(*a.Scale) > maxLoRAScale:
			return nil, badRequest(param, "%s[%d]: scale %v is out of range (a finite number, at most %v in magnitude)", name, i, *a.Scale, maxLoRAScale)
		}
		for _, b := range out {
			if b.ID == *a.ID {
				return nil, badRequest(param, "%s[%d]: adapter id %d given twice", name, i, *a.ID)
			}
		}
		out = append(out, engine.LoRAScale{ID: *a.ID, Scale: float32(*a.Scale)})
	}
	return out, nil
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
