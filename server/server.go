// Package server is Loom's OpenAI-compatible HTTP server: it translates
// requests into scheduler requests (continuous batching over a paged,
// prefix-shared KV cache) and streams the results back, with a chat page,
// Prometheus metrics under Loom's and vLLM's names, and hard limits on
// every input.
package server

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/loom-inference/loom/engine"
)

// Config configures a server.
type Config struct {
	APIKey       string        // required as "Authorization: Bearer KEY" on /v1/*, /tokenize, /detokenize (empty: open)
	Parallel     int           // sequences decoded together per model (default 8)
	MaxWaiting   int           // queued requests per model before 429 (default 64)
	MaxBodyBytes int64         // request body limit (default 4 MiB)
	RetryAfter   time.Duration // advertised on 429 (default 1s)
}

// Model is one served model.
type Model struct {
	Name    string
	Engine  *engine.Engine
	sched   *engine.Scheduler
	created int64
}

// Server serves models over HTTP.
type Server struct {
	cfg     Config
	mu      sync.RWMutex
	models  []*Model
	byName  map[string]*Model
	ready   atomic.Bool
	metrics *metrics
	mux     *http.ServeMux
}

// New makes a server; models are added with Add (the server answers 503 on
// /health until Ready).
func New(cfg Config) *Server {
	if cfg.Parallel <= 0 {
		cfg.Parallel = 8
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = 64
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 4 << 20
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = time.Second
	}
	s := &Server{cfg: cfg, byName: map[string]*Model{}}
	s.metrics = newMetrics(s)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /v1/models", s.auth(s.listModels))
	mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chat))
	mux.HandleFunc("POST /v1/completions", s.auth(s.completions))
	mux.HandleFunc("POST /tokenize", s.auth(s.tokenize))
	mux.HandleFunc("POST /detokenize", s.auth(s.detokenize))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: 404, Msg: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), Type: "not_found_error"})
	})
	s.mux = mux
	return s
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.mux }

// Add serves e under name (the file's base name without extension when
// empty) and starts its scheduler.
func (s *Server) Add(name string, e *engine.Engine) *Model {
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(e.Path), filepath.Ext(e.Path))
	}
	m := &Model{Name: name, Engine: e, created: time.Now().Unix(),
		sched: e.NewScheduler(engine.SchedulerOptions{MaxRunning: s.cfg.Parallel, MaxWaiting: s.cfg.MaxWaiting})}
	s.mu.Lock()
	s.models = append(s.models, m)
	s.byName[name] = m
	s.mu.Unlock()
	return m
}

// Ready marks loading as done: /health answers 200.
func (s *Server) Ready() { s.ready.Store(true) }

// Close cancels every request and stops the schedulers.
func (s *Server) Close() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range s.models {
		m.sched.Close()
	}
}

// Stats sums the schedulers' statistics (for tests and the load command).
func (s *Server) Stats() engine.SchedStats {
	var t engine.SchedStats
	for _, m := range s.list() {
		st := m.sched.Stats()
		t.Running += st.Running
		t.Waiting += st.Waiting
		t.KVUsed += st.KVUsed
		t.KVBlocks += st.KVBlocks
		t.GeneratedTokens += st.GeneratedTokens
		t.Preemptions += st.Preemptions
	}
	return t
}

func (s *Server) list() []*Model {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]*Model(nil), s.models...)
}

// model finds the request's model: by name, or the only one when the
// request names none.
func (s *Server) model(name string) (*Model, *apiError) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if m, ok := s.byName[name]; ok {
		return m, nil
	}
	if name == "" && len(s.models) == 1 {
		return s.models[0], nil
	}
	var names []string
	for _, m := range s.models {
		names = append(names, m.Name)
	}
	if name == "" {
		return nil, badRequest("model", "model is required (served: %s)", strings.Join(names, ", "))
	}
	return nil, withCode(&apiError{status: 404, Msg: fmt.Sprintf("model %q not found (served: %s)", name, strings.Join(names, ", ")), Type: "invalid_request_error"}, "model_not_found")
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeError(w, &apiError{status: 503, Msg: "the server is loading its models", Type: "server_error"})
			return
		}
		if s.cfg.APIKey != "" {
			got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.APIKey)) != 1 {
				writeError(w, withCode(&apiError{status: 401, Msg: "invalid or missing API key (Authorization: Bearer KEY)", Type: "invalid_request_error"}, "invalid_api_key"))
				return
			}
		}
		h(w, r)
	}
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, 503, map[string]string{"status": "loading"})
		return
	}
	writeJSON(w, 200, map[string]string{"status": "ok"})
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	type entry struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []entry `json:"data"`
	}{Object: "list", Data: []entry{}}
	for _, m := range s.list() {
		out.Data = append(out.Data, entry{m.Name, "model", m.created, "loom"})
	}
	writeJSON(w, 200, out)
}

// decode reads a JSON body under the size limit: malformed JSON and wrong
// types are 400, an oversized body 413, invalid UTF-8 400; unknown fields
// are ignored, as OpenAI does.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: 413, Msg: fmt.Sprintf("request body exceeds %d bytes", s.cfg.MaxBodyBytes), Type: "invalid_request_error"}
		}
		return badRequest("", "reading the request body: %v", err)
	}
	return decodeBody(body, v)
}

// named is a request body that names a model.
type named interface{ modelName() string }

// open decodes the body into v and finds the model it names; on failure it
// has written the error.
func (s *Server) open(w http.ResponseWriter, r *http.Request, v named) (*Model, bool) {
	if err := s.decode(w, r, v); err != nil {
		writeError(w, err)
		return nil, false
	}
	m, err := s.model(v.modelName())
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return m, true
}

func decodeBody(body []byte, v any) *apiError {
	if !utf8.Valid(body) {
		return badRequest("", "the request body is not valid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	if err := d.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest(te.Field, "field %q: expected %s, got JSON %s", te.Field, te.Type, te.Value)
		}
		return badRequest("", "malformed JSON: %v", err)
	}
	if d.More() {
		return badRequest("", "malformed JSON: data after the request object")
	}
	return nil
}

type tokenizeRequest struct {
	Model      string `json:"model"`
	Content    string `json:"content"`
	AddSpecial bool   `json:"add_special"`
	WithPieces bool   `json:"with_pieces"`
}

type detokenizeRequest struct {
	Model  string  `json:"model"`
	Tokens []int32 `json:"tokens"`
}

func (r *tokenizeRequest) modelName() string   { return r.Model }
func (r *detokenizeRequest) modelName() string { return r.Model }

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	ids := m.Engine.Tokenize(req.Content, req.AddSpecial, true)
	if !req.WithPieces {
		writeJSON(w, 200, map[string]any{"tokens": ids})
		return
	}
	type piece struct {
		ID    int32  `json:"id"`
		Piece string `json:"piece"`
	}
	out := []piece{}
	for _, id := range ids {
		out = append(out, piece{id, string(m.Engine.Vocab.Piece(id, true))})
	}
	writeJSON(w, 200, map[string]any{"tokens": out})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	nv := int32(m.Engine.Vocab.Len())
	for i, id := range req.Tokens {
		if id < 0 || id >= nv {
			writeError(w, badRequest("tokens", "tokens[%d] = %d is outside the vocabulary (%d)", i, id, nv))
			return
		}
	}
	writeJSON(w, 200, map[string]string{"content": m.Engine.Vocab.Decode(req.Tokens)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.status == 0 {
		e.status = 500
	}
	writeJSON(w, e.status, map[string]*apiError{"error": e})
}

func randomSeed() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
