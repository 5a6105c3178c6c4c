package server

// Models loaded on demand, as ollama does: the registry holds every model
// the server may serve (a slot each) whether its engine is loaded or not.
// A request naming an unloaded model loads it (concurrent requests share
// one load and its outcome); Config.MaxLoaded bounds the engines loaded at
// once (the least recently used idle one is unloaded first); a model idle
// for its keep-alive is unloaded. A request holds a lease on the model it
// uses from the lookup until its handler returns, and a model with a lease
// is never unloaded.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/loom-inference/loom/chat"
	"github.com/loom-inference/loom/engine"
)

// Defaults of the on-demand registry.
const (
	DefaultKeepAlive   = 5 * time.Minute // an on-demand model idle this long is unloaded (ollama's default)
	DefaultLoadTimeout = 5 * time.Minute // a request waits this long for its model to load
)

// Model states, as /v1/models reports them.
const (
	StatusUnloaded  = "unloaded"
	StatusLoading   = "loading"
	StatusLoaded    = "loaded"
	StatusUnloading = "unloading"
)

// slotKind says how a model came and whether it may be unloaded.
type slotKind int

const (
	kindOnDemand slotKind = iota // Register or a models directory: loaded by requests, unloaded when idle for its keep-alive
	kindStartup                  // Load: loaded at start; unloaded only to make room under MaxLoaded, then reloaded on demand
	kindFixed                    // Add: an engine the server cannot reload: never unloaded
)

// slot is one model of the registry, loaded or not.
type slot struct {
	name     string
	aliases  []string // further names it answers to (a models directory's relative path)
	path     string   // file, first split part or folder
	opts     engine.Options
	template string
	kind     slotKind
	fromDir  bool  // discovered in a models directory
	size     int64 // bytes on disk
	modified time.Time

	state    string
	model    *Model        // StatusLoaded
	attempt  *loadAttempt  // StatusLoading
	unloaded chan struct{} // StatusUnloading: closed when done
	lastErr  error         // the last load's failure (nil after a success)

	pins      int    // leases of requests using model
	waiting   int    // requests waiting for this slot's load
	legacy    uint64 // the last request ticket that may use model through s.model (no lease)
	lastUsed  time.Time
	keepAlive time.Duration // after the last request ends (<0: forever)
	expires   time.Time     // when idle and scheduled: the unload time (zero: not scheduled or never)
	timer     *time.Timer
	loadedAt  time.Time
	kvBytes   int64
	ctxLen    int
	caps      []string // capabilities, pooling and width of the last load, for listing it unloaded
	pooling   string
	dims      int
}

// loadAttempt is one load of a slot; every request waiting for it gets
// its outcome.
type loadAttempt struct {
	done chan struct{}
	err  error
}

// request is an authenticated request in flight: its ticket (increasing)
// and the leases it holds.
type request struct {
	ticket uint64
	leases []*slot
}

type requestKey struct{}

func requestFrom(ctx context.Context) *request {
	if ctx == nil {
		return nil
	}
	rq, _ := ctx.Value(requestKey{}).(*request)
	return rq
}

// begin registers a request in flight; end releases its leases.
func (s *Server) begin() *request {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tickets++
	rq := &request{ticket: s.tickets}
	s.inflight[rq.ticket] = struct{}{}
	return rq
}

func (s *Server) end(rq *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, rq.ticket)
	now := time.Now()
	for _, sl := range rq.leases {
		sl.pins--
		sl.lastUsed = now
	}
	rq.leases = nil
	// Settle every slot: one that a lease or a ticket held may be idle now.
	for _, sl := range s.slots {
		s.settleLocked(sl)
	}
	s.broadcastLocked()
}

// idleLocked reports whether no request uses or waits for sl.
func (s *Server) idleLocked(sl *slot) bool {
	if sl.pins > 0 || sl.waiting > 0 {
		return false
	}
	if sl.legacy != 0 {
		for t := range s.inflight {
			if t <= sl.legacy {
				return false
			}
		}
		sl.legacy = 0
	}
	return true
}

// settleLocked schedules a loaded, idle on-demand model's unload after its
// keep-alive (at once for 0), unless already scheduled.
func (s *Server) settleLocked(sl *slot) {
	if sl.state != StatusLoaded || sl.kind != kindOnDemand || !sl.expires.IsZero() || s.closing || !s.idleLocked(sl) {
		return
	}
	if sl.keepAlive < 0 {
		return
	}
	if sl.keepAlive == 0 {
		s.unloadLocked(sl, "keep_alive")
		return
	}
	sl.expires = time.Now().Add(sl.keepAlive)
	if sl.timer != nil {
		sl.timer.Stop()
	}
	sl.timer = time.AfterFunc(sl.keepAlive, func() { s.expire(sl) })
}

// expire unloads sl when its keep-alive has passed and it is still idle.
func (s *Server) expire(sl *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || sl.state != StatusLoaded || sl.expires.IsZero() || time.Now().Before(sl.expires) || !s.idleLocked(sl) {
		return
	}
	s.unloadLocked(sl, "keep_alive")
}

// unloadLocked starts unloading sl (loaded and idle): the engine is closed
// in the background (its file unmapped, its KV pool released) and the Go
// heap it held returned to the system.
func (s *Server) unloadLocked(sl *slot, reason string) {
	m := sl.model
	sl.state, sl.model, sl.expires = StatusUnloading, nil, time.Time{}
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
	done := make(chan struct{})
	sl.unloaded = done
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		m.Engine.Close()
		debug.FreeOSMemory()
		s.mu.Lock()
		sl.state, sl.unloaded = StatusUnloaded, nil
		close(done)
		s.broadcastLocked()
		s.mu.Unlock()
		s.metrics.unloaded(sl.name, reason)
	}()
}

// broadcastLocked wakes every request waiting for the registry to change.
func (s *Server) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// errors of acquire's waits
var (
	errWaitTimeout = errors.New("timeout")
	errClosing     = errors.New("closing")
)

// acquire finds the model name names (the only one when name is empty),
// loading it when it is not, and leases it to the request in ctx (one
// authenticated by the server: the lease ends when its handler returns).
// Without such a request (s.model) the model counts as used until every
// request in flight at the lookup has ended. It waits up to LoadTimeout for
// the load, and for room under MaxLoaded.
func (s *Server) acquire(ctx context.Context, name string) (*Model, *apiError) {
	sl, aerr := s.find(name)
	if aerr != nil {
		return nil, aerr
	}
	m, err := s.acquireSlot(ctx, sl, false)
	var lf *loadFailure
	switch {
	case errors.As(err, &lf):
		return nil, loadError(sl, lf.err)
	case err != nil:
		return nil, err.(*apiError)
	}
	return m, nil
}

// loadFailure is acquireSlot's error when the load it waited for failed.
type loadFailure struct{ err error }

func (f *loadFailure) Error() string { return f.err.Error() }

// acquireSlot is acquire for one slot: an *apiError, or a *loadFailure.
// Its waits end after LoadTimeout unless untimed.
func (s *Server) acquireSlot(ctx context.Context, sl *slot, untimed bool) (*Model, error) {
	rq := requestFrom(ctx)
	if ctx == nil {
		ctx = context.Background()
	}
	var cancel context.CancelFunc = func() {}
	defer func() { cancel() }()
	timed := false
	wait := func(ch <-chan struct{}) error { // s.mu held on entry and return
		if !timed && !untimed {
			timed = true
			ctx, cancel = context.WithTimeout(ctx, s.cfg.LoadTimeout)
		}
		s.mu.Unlock()
		defer s.mu.Lock()
		select {
		case <-ch:
			return nil
		case <-s.stop.Done():
			return errClosing
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return errWaitTimeout
			}
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closing {
			return nil, &apiError{status: 503, Msg: "the server is shutting down", Type: "server_error"}
		}
		switch sl.state {
		case StatusLoaded:
			if rq != nil {
				sl.pins++
				rq.leases = append(rq.leases, sl)
			} else {
				sl.legacy = s.tickets
			}
			sl.lastUsed, sl.keepAlive, sl.expires = time.Now(), s.keepAlive, time.Time{}
			if sl.timer != nil {
				sl.timer.Stop()
				sl.timer = nil
			}
			return sl.model, nil
		case StatusLoading:
			a := sl.attempt
			sl.waiting++
			err := wait(a.done)
			sl.waiting--
			if err != nil {
				s.settleLocked(sl) // a load nobody waits for any more
				return nil, s.waitError(sl, err)
			}
			if a.err != nil {
				return nil, &loadFailure{a.err}
			}
		case StatusUnloading:
			if err := wait(sl.unloaded); err != nil {
				return nil, s.waitError(sl, err)
			}
		case StatusUnloaded:
			if !s.roomLocked() {
				if v := s.victimLocked(); v != nil {
					s.unloadLocked(v, "models_max")
				}
				if err := wait(s.changed); err != nil {
					return nil, s.waitError(sl, err)
				}
				continue
			}
			a := &loadAttempt{done: make(chan struct{})}
			sl.state, sl.attempt = StatusLoading, a
			s.bg.Add(1)
			go s.load(sl, a)
		}
	}
}

// roomLocked reports whether one more engine may be loaded.
func (s *Server) roomLocked() bool {
	if s.cfg.MaxLoaded <= 0 {
		return true
	}
	n := 0
	for _, sl := range s.slots {
		if sl.state != StatusUnloaded {
			n++
		}
	}
	return n < s.cfg.MaxLoaded
}

// victimLocked is the least recently used loaded model that may be
// unloaded and is idle, or nil (then an unload under way, or a request
// ending, makes room).
func (s *Server) victimLocked() *slot {
	var v *slot
	for _, sl := range s.slots {
		if sl.state == StatusLoaded && sl.kind != kindFixed && s.idleLocked(sl) && (v == nil || sl.lastUsed.Before(v.lastUsed)) {
			v = sl
		}
	}
	return v
}

func (s *Server) waitError(sl *slot, err error) *apiError {
	switch {
	case errors.Is(err, errClosing):
		return &apiError{status: 503, Msg: "the server is shutting down", Type: "server_error"}
	case errors.Is(err, errWaitTimeout) && sl.state == StatusLoading:
		return withCode(&apiError{status: 503, Msg: fmt.Sprintf("model %q is still loading after %v; retry later", sl.name, s.cfg.LoadTimeout), Type: "server_error"}, "model_loading")
	case errors.Is(err, errWaitTimeout):
		return withCode(&apiError{status: 503, Msg: fmt.Sprintf("no room to load model %q within %v: %d models are loaded (the server's limit) and all are in use; retry later", sl.name, s.cfg.LoadTimeout, s.cfg.MaxLoaded), Type: "server_error"}, "model_loading")
	}
	return &apiError{status: 503, Msg: fmt.Sprintf("waiting for model %q: %v", sl.name, err), Type: "server_error"}
}

func loadError(sl *slot, err error) *apiError {
	if !strings.Contains(err.Error(), sl.path) {
		err = fmt.Errorf("%s: %w", sl.path, err)
	}
	return withCode(&apiError{status: 500, Msg: fmt.Sprintf("model %q could not be loaded: %v", sl.name, err), Type: "server_error"}, "model_load_failed")
}

// load loads sl's engine for attempt a and publishes the outcome.
func (s *Server) load(sl *slot, a *loadAttempt) {
	defer s.bg.Done()
	start := time.Now()
	m, err := s.loadModel(sl.name, sl.path, sl.opts, sl.template)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && s.closing {
		m.Engine.Close()
		err = errors.New("the server is shutting down")
	}
	sl.attempt, a.err = nil, err
	if err != nil {
		sl.state, sl.lastErr = StatusUnloaded, err
		if !strings.Contains(err.Error(), sl.path) {
			sl.lastErr = fmt.Errorf("%s: %w", sl.path, err)
		}
	} else {
		s.loadedLocked(sl, m)
	}
	close(a.done)
	s.broadcastLocked()
	s.metrics.loaded(sl.name, time.Since(start), err)
	s.settleLocked(sl) // nobody may be waiting any more
}

// loadModel loads an engine and its chat template with the server's
// parallelism.
func (s *Server) loadModel(name, path string, o engine.Options, template string) (*Model, error) {
	o.Parallel, o.MaxWaiting = s.cfg.Parallel, s.cfg.MaxWaiting
	e, err := engine.Load(path, o)
	if err != nil {
		return nil, err
	}
	t, err := chat.ForModel(e, template)
	if err != nil {
		e.Close()
		return nil, err
	}
	m := &Model{Name: name, Engine: e, Chat: t, created: time.Now().Unix()}
	m.spec, m.hasDraft, m.known = o.Spec, o.DraftModel != "", true
	return m, nil
}

// loadedLocked makes m sl's loaded model.
func (s *Server) loadedLocked(sl *slot, m *Model) {
	m.slot = sl
	e := m.Engine
	sl.state, sl.model, sl.lastErr = StatusLoaded, m, nil
	sl.loadedAt, sl.lastUsed, sl.keepAlive, sl.expires = time.Now(), time.Now(), s.keepAlive, time.Time{}
	sl.kvBytes, sl.ctxLen = e.Cache().Bytes, e.CtxLen()
	sl.caps, sl.pooling, sl.dims = capabilities(e), e.Pooling(), e.EmbedDim()
	if sl.kind == kindFixed {
		sl.path = e.Path()
	}
}

// find looks a model up by id or alias (the only one for ""); a miss
// rescans the models directories (at most once a second) before a 404.
func (s *Server) find(name string) (*slot, *apiError) {
	if sl := s.lookup(name); sl != nil {
		return sl, nil
	}
	if s.rescan(false) {
		if sl := s.lookup(name); sl != nil {
			return sl, nil
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var names []string
	for _, sl := range s.slots {
		names = append(names, sl.name)
	}
	if len(names) > 20 {
		names = append(names[:20], fmt.Sprintf("… %d more: GET /v1/models", len(names)-20))
	}
	if name == "" {
		return nil, badRequest("model", "model is required (served: %s)", strings.Join(names, ", "))
	}
	return nil, withCode(&apiError{status: 404, Msg: fmt.Sprintf("model %q not found (served: %s)", name, strings.Join(names, ", ")), Type: "invalid_request_error"}, "model_not_found")
}

func (s *Server) lookup(name string) *slot {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sl, ok := s.byName[name]; ok {
		return sl
	}
	if name == "" && len(s.slots) == 1 {
		return s.slots[0]
	}
	return nil
}

// touch sets the keep-alive of m's model after the requests using it end
// (ollama's keep_alive: 0 unloads it as soon as it is idle, a negative
// duration keeps it loaded until the server stops); the next request
// without one gets the server's default again. It applies to models loaded
// on demand; models loaded at start stay loaded.
func (s *Server) touch(m *Model, keepAlive time.Duration) {
	if m == nil || m.slot == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := m.slot
	if sl.kind != kindOnDemand || sl.model != m {
		return
	}
	sl.keepAlive, sl.expires = keepAlive, time.Time{}
	if sl.timer != nil {
		sl.timer.Stop()
		sl.timer = nil
	}
	s.settleLocked(sl)
}

// ModelInfo is one model of the registry, loaded or not (what ollama's
// /api/tags and /api/ps report).
type ModelInfo struct {
	Name     string
	Aliases  []string
	Path     string // the file (a split model's first part) or folder
	Status   string // StatusLoaded, StatusLoading, StatusUnloading or StatusUnloaded
	Size     int64  // bytes on disk
	Modified time.Time
	LoadErr  string // the last load's failure
	// Loaded models (and the last load's values for the others):
	Capabilities []string
	Pooling      string
	Dimensions   int
	ContextLen   int   // positions one sequence may hold
	KVBytes      int64 // the KV cache
	// Loaded models only:
	Model     *Model
	LoadedAt  time.Time
	ExpiresAt time.Time // when it is unloaded if no request comes (zero: not scheduled: in use, or kept until the server stops)
	Permanent bool      // loaded at start (or given as an engine): never unloaded for idling
	Requests  int       // requests holding it now
}

// MemoryBytes is what a loaded model takes: its weights' file and its KV
// cache (ollama's size in /api/ps).
func (mi ModelInfo) MemoryBytes() int64 { return mi.Size + mi.KVBytes }

func (s *Server) infoLocked(sl *slot) ModelInfo {
	mi := ModelInfo{Name: sl.name, Aliases: sl.aliases, Path: sl.path, Status: sl.state, Size: sl.size, Modified: sl.modified,
		Capabilities: sl.caps, Pooling: sl.pooling, Dimensions: sl.dims, ContextLen: sl.ctxLen, KVBytes: sl.kvBytes,
		Permanent: sl.kind != kindOnDemand, Requests: sl.pins}
	if sl.lastErr != nil {
		mi.LoadErr = sl.lastErr.Error()
	}
	if sl.state == StatusLoaded {
		mi.Model, mi.LoadedAt, mi.ExpiresAt = sl.model, sl.loadedAt, sl.expires
	}
	return mi
}

// catalog lists every model of the registry in order (loaded or not).
func (s *Server) catalog() []ModelInfo {
	s.rescan(false)
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ModelInfo, 0, len(s.slots))
	for _, sl := range s.slots {
		out = append(out, s.infoLocked(sl))
	}
	return out
}

// loadedModels lists the models loaded now, most recently used first
// (ollama's /api/ps), with their size, context length and expiry.
func (s *Server) loadedModels() []ModelInfo {
	s.mu.RLock()
	var out []ModelInfo
	var used []time.Time
	for _, sl := range s.slots {
		if sl.state == StatusLoaded {
			out = append(out, s.infoLocked(sl))
			used = append(used, sl.lastUsed)
		}
	}
	s.mu.RUnlock()
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return used[idx[a]].After(used[idx[b]]) })
	sorted := make([]ModelInfo, len(out))
	for i, j := range idx {
		sorted[i] = out[j]
	}
	return sorted
}

// Models lists the registry (loaded or not), for the command line and
// tests.
func (s *Server) Models() []ModelInfo { return s.catalog() }

// Loaded lists the loaded models, most recently used first.
func (s *Server) Loaded() []ModelInfo { return s.loadedModels() }

// Unload unloads the named model once no request uses it (waiting up to
// LoadTimeout); false when it is not loaded or cannot be unloaded (given
// as an engine to Add).
func (s *Server) Unload(name string) bool {
	sl := s.lookup(name)
	if sl == nil {
		return false
	}
	deadline := time.Now().Add(s.cfg.LoadTimeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if sl.state != StatusLoaded || sl.kind == kindFixed || s.closing {
			return false
		}
		if s.idleLocked(sl) {
			s.unloadLocked(sl, "request")
			return true
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(time.Until(deadline)):
		}
		s.mu.Lock()
		if time.Now().After(deadline) {
			return false
		}
	}
}

// Register serves the model at path under name (the file's base name when
// empty) without loading it: the first request naming it loads it with o
// (Parallel and MaxWaiting are the server's) and the chat template
// template, and it is unloaded after KeepAlive without requests.
func (s *Server) Register(name, path string, o engine.Options, template string) error {
	if name == "" {
		name = ModelID(path)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return errors.New("server: closed")
	}
	if _, dup := s.byName[name]; dup {
		return fmt.Errorf("server: two models with the id %q (give each its own alias)", name)
	}
	sl := &slot{name: name, path: path, opts: o, template: template, kind: kindOnDemand, state: StatusUnloaded}
	sl.size, sl.modified = modelSize(path)
	s.insertLocked(sl)
	return nil
}

func (s *Server) insertLocked(sl *slot) {
	s.slots = append(s.slots, sl)
	s.byName[sl.name] = sl
	for _, a := range sl.aliases {
		s.byName[a] = sl
	}
}

// AddModelDirs serves every model under dirs (GGUF files, a split model's
// first part, Hugging Face folders; see DiscoverModels) on demand, loaded
// with o and template, and looks for new ones when a request names an
// unknown model or /v1/models is listed (at most once a second). It
// returns the ids it registered, and a warning for each model it skipped.
func (s *Server) AddModelDirs(dirs []string, o engine.Options, template string) (ids, warnings []string, err error) {
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil {
			return nil, nil, fmt.Errorf("models directory: %w", err)
		} else if !st.IsDir() {
			return nil, nil, fmt.Errorf("models directory %s is not a directory", d)
		}
	}
	s.mu.Lock()
	s.dirs = append(s.dirs, dirs...)
	s.dirOpts, s.dirTemplate = o, template
	s.mu.Unlock()
	ids, warnings = s.scan()
	return ids, warnings, nil
}

// rescan scans the models directories again unless it did less than a
// second ago (force: anyway); it reports whether it scanned.
func (s *Server) rescan(force bool) bool {
	s.mu.Lock()
	if len(s.dirs) == 0 || (!force && time.Since(s.lastScan) < time.Second) {
		s.mu.Unlock()
		return false
	}
	s.lastScan = time.Now()
	s.mu.Unlock()
	s.scan()
	return true
}

// scan registers the models directories' new models and forgets the
// unloaded ones whose files are gone.
func (s *Server) scan() (ids, warnings []string) {
	s.mu.RLock()
	dirs := append([]string(nil), s.dirs...)
	s.mu.RUnlock()
	var found []FoundModel
	for _, d := range dirs {
		f, err := DiscoverModels(d)
		if err != nil {
			warnings = append(warnings, err.Error())
		}
		found = append(found, f...)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastScan = time.Now()
	if s.closing {
		return nil, warnings
	}
	present := map[string]bool{}
	byPath := map[string]*slot{}
	for _, sl := range s.slots {
		byPath[canonical(sl.path)] = sl
	}
	for _, f := range found {
		p := canonical(f.Path)
		present[p] = true
		if byPath[p] != nil {
			continue
		}
		name, alias := f.ID, f.Rel
		if _, taken := s.byName[name]; taken {
			name, alias = f.Rel, ""
		}
		if _, taken := s.byName[name]; taken {
			warnings = append(warnings, fmt.Sprintf("%s: skipped: the id %q is taken by another model", f.Path, f.ID))
			continue
		}
		sl := &slot{name: name, path: f.Path, opts: s.dirOpts, template: s.dirTemplate, kind: kindOnDemand,
			fromDir: true, state: StatusUnloaded, size: f.Size, modified: f.Modified}
		if _, taken := s.byName[alias]; alias != "" && alias != name && !taken {
			sl.aliases = []string{alias}
		}
		s.insertLocked(sl)
		byPath[p] = sl
		ids = append(ids, name)
	}
	// Files removed since: an unloaded model goes from the list.
	kept := s.slots[:0]
	for _, sl := range s.slots {
		if sl.fromDir && sl.state == StatusUnloaded && sl.waiting == 0 && !present[canonical(sl.path)] {
			delete(s.byName, sl.name)
			for _, a := range sl.aliases {
				delete(s.byName, a)
			}
			continue
		}
		kept = append(kept, sl)
	}
	for i := len(kept); i < len(s.slots); i++ {
		s.slots[i] = nil
	}
	s.slots = kept
	return ids, warnings
}

func canonical(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// FoundModel is a model DiscoverModels found.
type FoundModel struct {
	ID       string // the file's name without .gguf (a split model's without -00001-of-0000N.gguf; a folder's name)
	Rel      string // its path under the directory, without .gguf: an alias, and the id when two files share a name
	Path     string
	Size     int64 // bytes on disk (every part of a split model; every file of a folder)
	Modified time.Time
}

var splitPart = regexp.MustCompile(`-(\d{5})-of-(\d{5})\.gguf$`)

// DiscoverModels lists the models under dir, in lexical order: every
// .gguf file (a split model once, by its first part; not the other parts,
// and not the multimodal projectors, mmproj*.gguf, which are no model of
// their own) and every Hugging Face folder (a directory with a
// config.json, not looked into further). Hidden entries are skipped;
// symbolic links to files are followed.
func DiscoverModels(dir string) ([]FoundModel, error) {
	var out []FoundModel
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable subdirectory
		}
		name := d.Name()
		if p != dir && strings.HasPrefix(name, ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if p != dir {
				if _, err := os.Stat(filepath.Join(p, "config.json")); err == nil {
					size, mod := modelSize(p)
					out = append(out, FoundModel{ID: name, Rel: rel, Path: p, Size: size, Modified: mod})
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.EqualFold(filepath.Ext(name), ".gguf") || strings.HasPrefix(strings.ToLower(name), "mmproj") {
			return nil
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return nil
		}
		if m := splitPart.FindStringSubmatch(name); m != nil && m[1] != "00001" {
			return nil
		}
		size, mod := modelSize(p)
		out = append(out, FoundModel{ID: ModelID(p), Rel: strings.TrimSuffix(splitPart.ReplaceAllString(rel, ".gguf"), filepath.Ext(rel)), Path: p, Size: size, Modified: mod})
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("models directory %s: %w", dir, err)
	}
	return out, nil
}

// ModelID is the id a model at path is served under without an alias: the
// file's (or folder's) base name without its extension, and without a
// split model's -00001-of-0000N part.
func ModelID(path string) string {
	base := filepath.Base(path)
	if m := splitPart.FindString(base); m != "" {
		return strings.TrimSuffix(base, m)
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// modelSize is the bytes of a model's file (every part of a split one;
// every file of a folder) and its latest modification.
func modelSize(path string) (int64, time.Time) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, time.Time{}
	}
	if st.IsDir() {
		var n int64
		mod := st.ModTime()
		filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if i, err := d.Info(); err == nil {
					n += i.Size()
					if i.ModTime().After(mod) {
						mod = i.ModTime()
					}
				}
			}
			return nil
		})
		return n, mod
	}
	m := splitPart.FindStringSubmatch(path)
	if m == nil {
		return st.Size(), st.ModTime()
	}
	n, _ := strconv.Atoi(m[2])
	stem := strings.TrimSuffix(path, m[0])
	var total int64
	for i := 1; i <= n && i <= 1000; i++ {
		if pst, err := os.Stat(fmt.Sprintf("%s-%05d-of-%05d.gguf", stem, i, n)); err == nil {
			total += pst.Size()
		}
	}
	return total, st.ModTime()
}
