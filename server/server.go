// Package server is Loom's OpenAI-compatible HTTP server: it translates
// requests into engine requests, submits them to each model's engine
// (whose scheduler batches them continuously over a paged, prefix-shared
// KV cache) and streams the results back, with a chat page, Prometheus
// metrics under Loom's and vLLM's names, and hard limits on every input.
package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/loom-inference/loom/chat"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/loom-inference/loom/engine"
)

// Config configures a server.
type Config struct {
	APIKey       string        // required as "Authorization: Bearer KEY" on /v1/*, /rerank, /embeddings, /api/embed, /tokenize, /detokenize (empty: open)
	Parallel     int           // sequences decoded together per model loaded by Load (default 8)
	MaxWaiting   int           // queued requests per model loaded by Load before 429 (default 64)
	MaxBodyBytes int64         // request body limit (default 4 MiB)
	RetryAfter   time.Duration // advertised on 429 (default 1s)

	// ReasoningFormat is how replies return their reasoning unless a
	// request says (llama.cpp's --reasoning-format): auto (""),
	// deepseek, deepseek-legacy or none.
	ReasoningFormat string
	// ReasoningBudget bounds thinking models' reasoning blocks in tokens
	// unless a request says (llama.cpp's --reasoning-budget: -1 or nil
	// unlimited, 0 none): when spent, the block is closed.
	ReasoningBudget *int
	// ChatTemplateKwargs are template variables every chat request gets
	// (llama.cpp's --chat-template-kwargs), before its own.
	ChatTemplateKwargs map[string]any
	// Now is the clock chat templates read (strftime_now: Granite's and
	// Llama 3's date lines); nil: the system clock.
	Now func() time.Time

	// Connection limits, so a client that stalls holds nothing for long.
	// A response as a whole has no time limit (a stream may run for
	// minutes); each write of it has WriteTimeout.
	ReadHeaderTimeout time.Duration // to receive a request's headers (default 10s)
	BodyTimeout       time.Duration // to receive a request's whole body, from the end of its headers (default 60s); then 408
	WriteTimeout      time.Duration // longest one write may wait for a client that does not read (default 60s); then the request is cancelled
	IdleTimeout       time.Duration // a keep-alive connection between requests (default 120s)
	MaxHeaderBytes    int           // request line and headers (default 64 KiB); larger is 431

	// Models loaded on demand (ondemand.go). MaxLoaded bounds the engines
	// loaded at once (0: no bound): loading one more first unloads the
	// least recently used idle one. KeepAlive is how long a model loaded
	// on demand stays loaded without requests (nil: DefaultKeepAlive; 0:
	// unloaded after each request; negative: until the server stops).
	// LoadTimeout is how long a request waits for its model to load, or
	// for room to load it, before a 503 with Retry-After (default
	// DefaultLoadTimeout).
	MaxLoaded   int
	KeepAlive   *time.Duration
	LoadTimeout time.Duration
}

// Defaults of the connection limits.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 60 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
)

// Model is one served model.
type Model struct {
	Name    string
	Engine  *engine.Engine
	Chat    *chat.Template // how its conversations are laid out
	created int64
	slot    *slot // its entry in the registry
	// spec is the speculative decoding requests get unless they say
	// otherwise (Load's Options.Spec), hasDraft whether the engine has a
	// draft model (Options.DraftModel); known is false for an engine
	// given to Add, whose options the server does not know.
	spec            engine.SpecParams
	hasDraft, known bool
}

// Server serves models over HTTP. It owns their engines: Close closes
// them.
type Server struct {
	cfg     Config
	mu      sync.RWMutex     // guards the registry (slots, byName, every slot's fields), the requests in flight and closing
	slots   []*slot          // every model, loaded or not, in the order added
	byName  map[string]*slot // by id and alias
	closing bool

	// The registry's state (ondemand.go): requests in flight by ticket,
	// changed (closed and replaced whenever a model's state or leases
	// change), loads and unloads under way (bg), the models directories.
	keepAlive   time.Duration
	tickets     uint64
	inflight    map[uint64]struct{}
	changed     chan struct{}
	bg          sync.WaitGroup
	dirs        []string
	dirOpts     engine.Options
	dirTemplate string
	lastScan    time.Time
	ready       atomic.Bool
	metrics     *metrics
	mux         *http.ServeMux

	// Close cancels stop (every request's context derives from it), waits
	// for the handlers using an engine (active) and then closes the
	// engines, once.
	stop      context.Context
	cancel    context.CancelFunc
	active    sync.WaitGroup
	closeOnce sync.Once
}

// New makes a server; models are added with Load or Add (the server
// answers 503 on /health until Ready).
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
	orDefault := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	orDefault(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	orDefault(&cfg.BodyTimeout, DefaultBodyTimeout)
	orDefault(&cfg.WriteTimeout, DefaultWriteTimeout)
	orDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	orDefault(&cfg.LoadTimeout, DefaultLoadTimeout)
	s := &Server{cfg: cfg, byName: map[string]*slot{}, inflight: map[uint64]struct{}{}, changed: make(chan struct{}), keepAlive: DefaultKeepAlive}
	if cfg.KeepAlive != nil {
		s.keepAlive = *cfg.KeepAlive
	}
	s.stop, s.cancel = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.health)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /v1/models", s.auth(s.listModels))
	mux.HandleFunc("GET /v1/models/{id...}", s.auth(s.getModel))
	mux.HandleFunc("POST /v1/chat/completions", s.auth(s.chat))
	mux.HandleFunc("POST /v1/completions", s.auth(s.completions))
	mux.HandleFunc("POST /v1/embeddings", s.auth(s.embeddings))
	mux.HandleFunc("POST /embeddings", s.auth(s.llamaEmbeddings)) // llama.cpp's own shape (pooling none too)
	mux.HandleFunc("POST /embedding", s.auth(s.llamaEmbeddings))
	for _, p := range []string{"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"} { // llama.cpp's routes
		mux.HandleFunc("POST "+p, s.auth(s.rerank))
	}
	mux.HandleFunc("POST /api/embed", s.auth(s.ollamaEmbed))
	mux.HandleFunc("POST /tokenize", s.auth(s.tokenize))
	mux.HandleFunc("POST /detokenize", s.auth(s.detokenize))
	for _, r := range protocolRoutes { // the other providers' APIs, each in its own file
		h := r.handler(s)
		if r.open {
			mux.HandleFunc(r.pattern, h)
		} else {
			mux.HandleFunc(r.pattern, s.auth(h))
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: 404, Msg: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path), Type: "not_found_error"})
	})
	s.mux = mux
	return s
}

// route is one endpoint of another provider's protocol (Anthropic's
// Messages, OpenAI's Responses, ollama's API), registered by the file that
// implements it (an init appending to protocolRoutes), behind the API key
// unless open.
type route struct {
	pattern string // http.ServeMux pattern: "POST /v1/messages"
	handler func(s *Server) http.HandlerFunc
	open    bool // served without the API key (health-style probes such as ollama's GET /)
}

// protocolRoutes are the routes New registers besides its own.
var protocolRoutes []route

// Handler is the server's HTTP handler. It bounds the time to receive a
// request's body (BodyTimeout) and the time each write may wait for the
// client to read (WriteTimeout: the deadline is moved before every write
// and flush, so a stream may last as long as it keeps being read); the
// limits on headers and idle connections are the http.Server's (see
// HTTPServer).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// A deadline left by the previous request on this connection
		// must not cut what the server itself writes for this one.
		rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if r.Body != nil && r.Body != http.NoBody {
			// net/http lifts the deadline once the body is read to its
			// end (it then starts the background read that notices a
			// client leaving), so a long response is not cut. A body the
			// handler leaves unread keeps it: the server's drain after
			// the handler ends in time too.
			rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		}
		s.mux.ServeHTTP(&timedWriter{ResponseWriter: w, rc: rc, timeout: s.cfg.WriteTimeout}, r)
	})
}

// HTTPServer is an http.Server for the handler with the configured
// connection limits. It sets no WriteTimeout (a limit on the whole
// response, which would cut long streams): each write has its own.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout: s.cfg.IdleTimeout, MaxHeaderBytes: s.cfg.MaxHeaderBytes}
}

// timedWriter gives every write and flush WriteTimeout to complete.
type timedWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (t *timedWriter) Write(p []byte) (int, error) {
	t.rc.SetWriteDeadline(time.Now().Add(t.timeout))
	return t.ResponseWriter.Write(p)
}

// Flush implements http.Flusher.
func (t *timedWriter) Flush() {
	t.rc.SetWriteDeadline(time.Now().Add(t.timeout))
	t.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (t *timedWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// Load loads the model at path with the server's parallelism
// (o.Parallel, which also sizes the KV cache unless o.KVTokens or
// o.KVBytes do, and o.MaxWaiting come from the Config) and serves it
// under name, as Add, laid out by the chat template named template (a
// built-in, a .jinja file, a tokenizer_config.json; "": the model's own).
// It stays loaded (keep-alive does not apply) unless MaxLoaded needs its
// room for another model: then it is unloaded, and loaded again, with o,
// by the next request naming it. A model that fails to load is not served.
func (s *Server) Load(name, path string, o engine.Options, template string) (*Model, error) {
	if name == "" {
		name = ModelID(path)
	}
	sl := &slot{name: name, path: path, opts: o, template: template, kind: kindStartup, state: StatusUnloaded}
	sl.size, sl.modified = modelSize(path)
	s.mu.Lock()
	if err := s.addableLocked(name); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.insertLocked(sl)
	s.mu.Unlock()
	m, err := s.acquireSlot(nil, sl, true) // as long as it takes
	if err != nil {
		s.mu.Lock()
		s.removeLocked(sl)
		s.mu.Unlock()
		var lf *loadFailure
		if errors.As(err, &lf) {
			return nil, lf.err
		}
		return nil, err
	}
	return m, nil
}

// Add serves e under name (the file's base name without extension when
// empty); from then on the server owns e and Close closes it. Requests run
// on e's scheduler, with the parallelism e was loaded with (Load loads
// with the Config's); conversations are laid out by t (nil: the model's
// own template, chat.ForModel). A name already served is refused (e stays the
// caller's): the request's "model" must name one model. The server cannot
// load e again: it is never unloaded (it counts under MaxLoaded).
func (s *Server) Add(name string, e *engine.Engine, t *chat.Template) (*Model, error) {
	if t == nil {
		var err error
		if t, err = chat.ForModel(e, ""); err != nil {
			return nil, err
		}
	}
	if name == "" {
		name = ModelID(e.Path())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.addableLocked(name); err != nil {
		return nil, err
	}
	m := &Model{Name: name, Engine: e, Chat: t, created: time.Now().Unix()}
	sl := &slot{name: name, kind: kindFixed}
	sl.size, sl.modified = modelSize(e.Path())
	s.loadedLocked(sl, m)
	s.insertLocked(sl)
	s.broadcastLocked()
	return m, nil
}

// addableLocked refuses a new model under name when the server is closed or
// serves one under it already.
func (s *Server) addableLocked(name string) error {
	if s.closing {
		return errors.New("server: closed")
	}
	if _, dup := s.byName[name]; dup {
		return fmt.Errorf("server: two models with the id %q (give each its own alias)", name)
	}
	return nil
}

// removeLocked forgets an unloaded slot.
func (s *Server) removeLocked(sl *slot) {
	for i, x := range s.slots {
		if x == sl {
			s.slots = append(s.slots[:i], s.slots[i+1:]...)
			break
		}
	}
	for k, v := range s.byName {
		if v == sl {
			delete(s.byName, k)
		}
	}
}

// Ready marks loading as done: /health answers 200.
func (s *Server) Ready() { s.ready.Store(true) }

// Close cancels every request, waits for the handlers that use a model to
// return, then closes the engines (each once; later calls do nothing).
// Requests arriving meanwhile are refused with 503. A handler writing to
// a client that does not read waits up to WriteTimeout: close the
// connections first (http.Server.Shutdown or Close) to end those at once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		for _, sl := range s.slots {
			if sl.timer != nil {
				sl.timer.Stop()
			}
		}
		s.mu.Unlock()
		s.cancel()
		s.active.Wait()
		s.bg.Wait() // loads (whose engines are closed as they end) and unloads under way
		s.mu.Lock()
		var engines []*engine.Engine
		for _, sl := range s.slots {
			if sl.state == StatusLoaded {
				engines = append(engines, sl.model.Engine)
			}
			sl.state, sl.model = StatusUnloaded, nil
		}
		s.slots, s.byName = nil, map[string]*slot{}
		s.mu.Unlock()
		for _, e := range engines {
			e.Close()
		}
	})
}

// enter counts a handler that will use a model; false once Close began.
// The handler calls s.active.Done when it returns.
func (s *Server) enter() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closing {
		return false
	}
	s.active.Add(1)
	return true
}

// Stats sums the models' scheduler statistics (for tests and the load
// command).
func (s *Server) Stats() engine.SchedStats {
	var t engine.SchedStats
	for _, m := range s.list() {
		st := m.Engine.Stats()
		t.Running += st.Running
		t.Waiting += st.Waiting
		t.KVUsed += st.KVUsed
		t.KVBlocks += st.KVBlocks
		t.GeneratedTokens += st.GeneratedTokens
		t.Preemptions += st.Preemptions
		t.SpecDrafts += st.SpecDrafts
		t.SpecDraftTokens += st.SpecDraftTokens
		t.SpecAccepted += st.SpecAccepted
	}
	return t
}

// list is the models loaded now.
func (s *Server) list() []*Model {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []*Model
	for _, sl := range s.slots {
		if sl.state == StatusLoaded {
			out = append(out, sl.model)
		}
	}
	return out
}

// model finds the request's model: by name, or the only one when the
// request names none, loading it when it is not (see acquire). Handlers
// with the request at hand should prefer modelFor (open uses it), whose
// lease ends exactly with the request.
func (s *Server) model(name string) (*Model, *apiError) {
	return s.acquire(nil, name)
}

// modelFor is model for the request r: the model is leased to r until its
// handler returns (it cannot be unloaded meanwhile).
func (s *Server) modelFor(r *http.Request, name string) (*Model, *apiError) {
	m, err := s.acquire(r.Context(), name)
	if err != nil && err.status == 404 {
		// BASE:ADAPTER names a loaded model's LoRA adapter (as vLLM and
		// the Gateway API Inference Extension route adapters by name):
		// the base model, which the request's adapters resolve for it.
		if i := strings.LastIndexByte(name, ':'); i > 0 {
			if base, e := s.acquire(r.Context(), name[:i]); e == nil {
				if _, ok := adapterID(base, name[i+1:]); ok {
					return base, nil
				}
			}
		}
	}
	return m, err
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.ready.Load() {
			writeError(w, &apiError{status: 503, Msg: "the server is loading its models", Type: "server_error"})
			return
		}
		if s.cfg.APIKey != "" && !validKey(r.Header.Values("Authorization"), s.cfg.APIKey) {
			writeError(w, withCode(&apiError{status: 401, Msg: "invalid or missing API key (Authorization: Bearer KEY)", Type: "invalid_request_error"}, "invalid_api_key"))
			return
		}
		if !s.enter() {
			writeError(w, &apiError{status: 503, Msg: "the server is shutting down", Type: "server_error"})
			return
		}
		defer s.active.Done()
		rq := s.begin() // the models it uses are leased to it until h returns
		defer s.end(rq)
		h(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, rq)))
	}
}

// validKey reports whether the request's Authorization is exactly one
// "Bearer KEY" (RFC 6750: the scheme in any case, then one or more
// spaces) with the server's key, compared in constant time. A bare key,
// another scheme or two Authorization headers are refused; x-api-key is
// not read (no Anthropic-protocol route is served).
func validKey(auth []string, key string) bool {
	if len(auth) != 1 {
		return false
	}
	scheme, token, ok := strings.Cut(auth[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	token = strings.TrimLeft(token, " ")
	return subtle.ConstantTimeCompare([]byte(token), []byte(key)) == 1
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	if !s.ready.Load() {
		writeJSON(w, 503, map[string]string{"status": "loading"})
		return
	}
	writeJSON(w, 200, map[string]string{"status": "ok"})
}

// modelEntry is a model as /v1/models lists it.
type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Loom's: what the model does ("completion", "chat"; "embedding";
	// "rerank"), and for an embedding or reranking model its pooling and
	// the width of its vectors (a reranker's: its scores).
	// A model not loaded since the server started has none of these
	// (they are known once it is loaded).
	Capabilities []string `json:"capabilities,omitempty"`
	Pooling      string   `json:"pooling,omitempty"`
	Dimensions   int      `json:"dimensions,omitempty"`
	// Parent is the base model of a LoRA adapter served as a model
	// (vLLM's): "BASE:ADAPTER" applies the adapter at its default scale
	// (1 when it is loaded at 0).
	Parent string `json:"parent,omitempty"`
	// Loom's: "loaded", "loading", "unloading" or "unloaded" (served on
	// demand: a request naming it loads it), the bytes of its file(s),
	// and why its last load failed.
	Status    string `json:"status"`
	Size      int64  `json:"size,omitempty"`
	LoadError string `json:"load_error,omitempty"`
}

func (mi ModelInfo) entry() modelEntry {
	created := mi.Modified.Unix()
	if mi.Model != nil {
		created = mi.Model.created
	}
	if mi.Modified.IsZero() && mi.Model == nil {
		created = 0
	}
	return modelEntry{ID: mi.Name, Object: "model", Created: created, OwnedBy: "loom",
		Capabilities: mi.Capabilities, Pooling: mi.Pooling, Dimensions: mi.Dimensions,
		Status: mi.Status, Size: mi.Size, LoadError: mi.LoadErr}
}

func (s *Server) listModels(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Object string       `json:"object"`
		Data   []modelEntry `json:"data"`
	}{Object: "list", Data: []modelEntry{}}
	for _, mi := range s.catalog() {
		e := mi.entry()
		out.Data = append(out.Data, e)
		if mi.Model != nil {
			for _, a := range mi.Model.Engine.Adapters() {
				ae := e
				ae.ID, ae.Parent = mi.Name+":"+adapterName(a), mi.Name
				out.Data = append(out.Data, ae)
			}
		}
	}
	writeJSON(w, 200, out)
}

// getModel is GET /v1/models/{id} (the id may contain slashes); it does not
// load the model.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sl := s.lookup(id)
	if sl == nil && s.rescan(false) {
		sl = s.lookup(id)
	}
	if sl == nil || id == "" {
		e := badRequest("model", "model %q not found", id)
		e.status = 404
		writeError(w, withCode(e, "model_not_found"))
		return
	}
	s.mu.RLock()
	mi := s.infoLocked(sl)
	s.mu.RUnlock()
	writeJSON(w, 200, mi.entry())
}

// decode reads a JSON body under the size limit: malformed JSON and wrong
// types are 400, an oversized body 413, invalid UTF-8 400; unknown fields
// are ignored, as OpenAI does.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	if t, ok := w.(*timedWriter); ok {
		w = t.ResponseWriter // MaxBytesReader tells the server's own writer to close the connection
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: 413, Msg: fmt.Sprintf("request body exceeds %d bytes", s.cfg.MaxBodyBytes), Type: "invalid_request_error"}
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return &apiError{status: 408, Msg: fmt.Sprintf("the request body did not arrive within %v", s.cfg.BodyTimeout), Type: "invalid_request_error"}
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
	m, err := s.modelFor(r, v.modelName())
	if err != nil {
		if err.status == 503 {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(s.cfg.RetryAfter.Seconds()+0.5))))
		}
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
			// The wire name: fields of the embedded sampling struct are
			// reported with its Go name in front.
			field := strings.TrimPrefix(te.Field, "sampling.")
			return badRequest(field, "field %q: expected %s, got JSON %s", field, te.Type, te.Value)
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
		out = append(out, piece{id, string(m.Engine.Vocab().Piece(id, true))})
	}
	writeJSON(w, 200, map[string]any{"tokens": out})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req detokenizeRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	nv := int32(m.Engine.Vocab().Len())
	for i, id := range req.Tokens {
		if id < 0 || id >= nv {
			writeError(w, badRequest("tokens", "tokens[%d] = %d is outside the vocabulary (%d)", i, id, nv))
			return
		}
	}
	writeJSON(w, 200, map[string]string{"content": m.Engine.Vocab().Decode(req.Tokens)})
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
	if e.status == 503 && e.Code != nil && *e.Code == "model_loading" && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1") // the model's load goes on: a retry waits for it again
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
