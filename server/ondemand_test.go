package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// modelsDir makes a directory holding each file of files under the given
// names (hard links where the file system allows, else copies), on the
// file system of the test cache (the files can be large), removed with
// the test.
func modelsDir(t *testing.T, files map[string]string) string {
	t.Helper()
	cache, err := testmodels.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(cache, "ondemand-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for name, src := range files {
		dst := filepath.Join(dir, name)
		if err := os.Link(src, dst); err == nil {
			continue
		}
		copyFile(t, src, dst, -1)
	}
	return dir
}

// copyFile copies src to dst, only its first n bytes when n >= 0.
func copyFile(t *testing.T, src, dst string, n int64) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	var r io.Reader = in
	if n >= 0 {
		r = io.LimitReader(in, n)
	}
	if _, err := io.Copy(out, r); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// onDemand serves dir's models on demand with cfg (no API key).
func onDemand(t *testing.T, cfg Config, dir string) (*Server, *httptest.Server, openai.Client) {
	t.Helper()
	srv := New(cfg)
	ids, warnings, err := srv.AddModelDirs([]string{dir}, engine.Options{Threads: 2, CtxLen: 256}, "")
	if err != nil || len(warnings) > 0 || len(ids) == 0 {
		t.Fatalf("AddModelDirs: %v %v %v", ids, warnings, err)
	}
	srv.Ready()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(srv.Close)
	t.Cleanup(ts.Close)
	return srv, ts, openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
}

func chatOnce(ctx context.Context, c openai.Client, model string) (string, error) {
	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, MaxTokens: openai.Int(4),
		Temperature: openai.Float(0), Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

// rssBytes is the process's resident set (VmRSS of /proc/self/status).
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	m := regexp.MustCompile(`(?m)^VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Skip("no VmRSS")
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// busy counts the models holding memory or about to (loaded, loading,
// unloading): what MaxLoaded bounds.
func (s *Server) busy() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, sl := range s.slots {
		if sl.state != StatusUnloaded {
			n++
		}
	}
	return n
}

func (s *Server) status(name string) string {
	sl := s.lookup(name)
	if sl == nil {
		return "absent"
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sl.state
}

func waitStatus(t *testing.T, s *Server, name, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for s.status(name) != want {
		if time.Now().After(deadline) {
			t.Fatalf("model %s: %s, want %s", name, s.status(name), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// metricValue reads one series of the server's /metrics.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// TestOnDemandRoundRobin: three models in a directory, at most two loaded
// (MaxLoaded 2): round-robin chat requests through the OpenAI SDK, in turn
// and then concurrently, all succeed; never more than two models hold
// memory; RSS stays under three models' worth, and unloading one returns
// its memory.
func TestOnDemandRoundRobin(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the smollm2-135m synthgguf file: run without -short")
	}
	src := testmodels.Synth(t, "-model", "smollm2-135m", "-type", "Q8_0", "-seed", "1")
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	size := st.Size()
	dir := modelsDir(t, map[string]string{"a.gguf": src, "b.gguf": src, "c.gguf": src})
	runtime.GC()
	debug.FreeOSMemory()
	base := rssBytes(t)
	srv, ts, client := onDemand(t, Config{MaxLoaded: 2, Parallel: 2}, dir)

	// /v1/models lists the three, none loaded.
	var list struct {
		Data []modelEntry `json:"data"`
	}
	getJSON(t, ts.URL+"/v1/models", &list)
	if len(list.Data) != 3 {
		t.Fatalf("/v1/models: %+v", list.Data)
	}
	for _, e := range list.Data {
		if e.Status != StatusUnloaded || e.Size != size {
			t.Errorf("%s: status %q size %d, want unloaded, %d", e.ID, e.Status, e.Size, size)
		}
	}

	// A watcher samples the registry throughout.
	var peakBusy atomic.Int64
	var peakRSS atomic.Int64
	stop := make(chan struct{})
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			if n := int64(srv.busy()); n > peakBusy.Load() {
				peakBusy.Store(n)
			}
			if n := int64(len(srv.Loaded())); n > 2 {
				t.Errorf("%d models loaded", n)
			}
			if r := rssBytes(t); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	ctx := context.Background()
	// What one loaded model takes (its file mapped, the weights it
	// repacks, its KV cache): more than the file.
	if _, err := chatOnce(ctx, client, "a"); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	debug.FreeOSMemory()
	one := rssBytes(t) - base
	models := []string{"a", "b", "c"}
	for round := 0; round < 2; round++ {
		for _, m := range models {
			if _, err := chatOnce(ctx, client, m); err != nil {
				t.Fatalf("round %d, %s: %v", round, m, err)
			}
			if n := len(srv.Loaded()); n > 2 {
				t.Fatalf("%d loaded", n)
			}
		}
	}
	// Concurrently: a client per model, four requests each.
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for _, m := range models {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				if _, err := chatOnce(ctx, client, m); err != nil {
					errs <- fmt.Errorf("%s: %w", m, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	close(stop)
	watch.Wait()
	if peakBusy.Load() > 2 {
		t.Errorf("%d models held memory at once, limit 2", peakBusy.Load())
	}
	if peakBusy.Load() < 2 {
		t.Errorf("never two models at once (peak %d)", peakBusy.Load())
	}
	// Three loaded would add 3 × one; two, about 2 × one.
	if grown := peakRSS.Load() - base; grown > 2*one+one*6/10 {
		t.Errorf("RSS grew by %d MiB, one model takes %d MiB: more than two held at once", grown>>20, one>>20)
	}
	loads := metricValue(t, ts.URL, `loom_model_loads_total{model_name="a",result="ok"}`) +
		metricValue(t, ts.URL, `loom_model_loads_total{model_name="b",result="ok"}`) +
		metricValue(t, ts.URL, `loom_model_loads_total{model_name="c",result="ok"}`)
	if loads < 4 {
		t.Errorf("%v loads, want at least 4 (round-robin over three with room for two)", loads)
	}
	if g := metricValue(t, ts.URL, "loom_models_loaded"); g < 1 || g > 2 {
		t.Errorf("loom_models_loaded %v", g)
	}

	// Unloading returns the memory: RSS with the loaded models, after.
	runtime.GC()
	debug.FreeOSMemory()
	loaded := rssBytes(t)
	n := len(srv.Loaded())
	for _, mi := range srv.Loaded() {
		if !srv.Unload(mi.Name) {
			t.Fatalf("Unload(%s) refused", mi.Name)
		}
		waitStatus(t, srv, mi.Name, StatusUnloaded)
	}
	runtime.GC()
	debug.FreeOSMemory()
	after := rssBytes(t)
	t.Logf("RSS: %d MiB before, %d MiB more with one model, peak %d MiB, %d MiB with %d loaded, %d MiB after unloading them (file %d MiB)",
		base>>20, one>>20, peakRSS.Load()>>20, loaded>>20, n, after>>20, size>>20)
	if after > loaded-int64(n)*size/2 {
		t.Errorf("RSS %d MiB after unloading %d models of %d MiB, %d MiB before: memory not returned", after>>20, n, size>>20, loaded>>20)
	}
	getJSON(t, ts.URL+"/v1/models", &list)
	for _, e := range list.Data {
		if e.Status != StatusUnloaded || len(e.Capabilities) == 0 {
			t.Errorf("%+v: want unloaded, capabilities known", e)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func tinyTest(t *testing.T) string {
	return testmodels.Synth(t, "-model", "tiny-test", "-type", "Q8_0", "-seed", "1")
}

// TestOnDemandLoadOnce: concurrent first requests to an unloaded model load
// it once, and all succeed.
func TestOnDemandLoadOnce(t *testing.T) {
	dir := modelsDir(t, map[string]string{"tiny.gguf": tinyTest(t), "other.gguf": tinyTest(t)})
	srv, ts, client := onDemand(t, Config{}, dir)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := chatOnce(context.Background(), client, "tiny"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := metricValue(t, ts.URL, `loom_model_loads_total{model_name="tiny",result="ok"}`); n != 1 {
		t.Errorf("%v loads of tiny, want 1", n)
	}
	if got := srv.status("other"); got != StatusUnloaded {
		t.Errorf("other: %s", got)
	}
	l := srv.Loaded()
	if len(l) != 1 || l[0].Name != "tiny" || l[0].ContextLen != 256 || l[0].KVBytes <= 0 || l[0].MemoryBytes() <= l[0].Size ||
		time.Until(l[0].ExpiresAt) < 4*time.Minute || time.Until(l[0].ExpiresAt) > DefaultKeepAlive || l[0].Permanent {
		t.Errorf("Loaded: %+v", l)
	}
	// GET /v1/models/{id} reports without loading.
	var e modelEntry
	getJSON(t, ts.URL+"/v1/models/other", &e)
	if e.Status != StatusUnloaded || srv.status("other") != StatusUnloaded {
		t.Errorf("GET /v1/models/other: %+v", e)
	}
	getJSON(t, ts.URL+"/v1/models/tiny", &e)
	if e.Status != StatusLoaded || len(e.Capabilities) != 2 {
		t.Errorf("GET /v1/models/tiny: %+v", e)
	}
}

// TestOnDemandLoadFailure: a truncated file fails every waiting request
// with one error naming the file; once the file is whole a request loads it.
func TestOnDemandLoadFailure(t *testing.T) {
	src := tinyTest(t)
	dir := modelsDir(t, map[string]string{})
	bad := filepath.Join(dir, "broken.gguf")
	copyFile(t, src, bad, 1<<20)
	_, ts, _ := onDemand(t, Config{}, dir)
	var wg sync.WaitGroup
	msgs := make([]string, 6)
	codes := make([]int, 6)
	for i := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"broken","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var body struct {
				Error apiError `json:"error"`
			}
			json.NewDecoder(resp.Body).Decode(&body)
			codes[i], msgs[i] = resp.StatusCode, body.Error.Msg
		}()
	}
	wg.Wait()
	for i := range msgs {
		if codes[i] != 500 || msgs[i] != msgs[0] || !strings.Contains(msgs[i], bad) || !strings.Contains(msgs[i], "could not be loaded") {
			t.Errorf("request %d: %d %q (first: %q)", i, codes[i], msgs[i], msgs[0])
		}
	}
	if n := metricValue(t, ts.URL, `loom_model_loads_total{model_name="broken",result="error"}`); n < 1 || n > 6 {
		t.Errorf("%v failed loads", n)
	}
	var list struct {
		Data []modelEntry `json:"data"`
	}
	getJSON(t, ts.URL+"/v1/models", &list)
	if len(list.Data) != 1 || list.Data[0].Status != StatusUnloaded || !strings.Contains(list.Data[0].LoadError, bad) {
		t.Errorf("/v1/models: %+v", list.Data)
	}
	// Fixed: the next request loads it.
	os.Remove(bad)
	copyFile(t, src, bad, -1)
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	if _, err := chatOnce(context.Background(), client, "broken"); err != nil {
		t.Fatalf("after the file was fixed: %v", err)
	}
}

// TestOnDemandKeepAlive: the default keeps a model loaded after its
// request; a request's keep-alive 0 (touch) unloads it once the request
// ends; the server's keep-alive 0 unloads after every request; a short one
// after that long idle; a negative one never; a model loaded at start is
// never unloaded for idling.
func TestOnDemandKeepAlive(t *testing.T) {
	dir := modelsDir(t, map[string]string{"m.gguf": tinyTest(t)})
	ctx := context.Background()

	srv, _, client := onDemand(t, Config{}, dir)
	if _, err := chatOnce(ctx, client, "m"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if got := srv.status("m"); got != StatusLoaded {
		t.Fatalf("after a request with the default keep-alive: %s", got)
	}
	// A request whose keep_alive is 0 (as ollama's handler will call touch).
	rq := srv.begin()
	m, aerr := srv.acquire(context.WithValue(ctx, requestKey{}, rq), "m")
	if aerr != nil {
		t.Fatal(aerr)
	}
	srv.touch(m, 0)
	time.Sleep(20 * time.Millisecond)
	if got := srv.status("m"); got != StatusLoaded {
		t.Fatalf("unloaded while its request runs: %s", got)
	}
	srv.end(rq)
	waitStatus(t, srv, "m", StatusUnloaded)
	// Touching a loaded, idle model: unloaded when it passes.
	if _, err := chatOnce(ctx, client, "m"); err != nil {
		t.Fatal(err)
	}
	srv.touch(srv.Loaded()[0].Model, 30*time.Millisecond)
	waitStatus(t, srv, "m", StatusUnloaded)

	zero, short, never := time.Duration(0), 50*time.Millisecond, time.Duration(-1)
	srv0, _, client0 := onDemand(t, Config{KeepAlive: &zero}, dir)
	for i := 0; i < 2; i++ {
		if _, err := chatOnce(ctx, client0, "m"); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, srv0, "m", StatusUnloaded)
	}
	// s.model (no lease): in use until the requests then in flight end.
	rq = srv0.begin()
	if _, aerr := srv0.model("m"); aerr != nil {
		t.Fatal(aerr)
	}
	srv0.end(srv0.begin()) // another request ends: m still counts as used
	time.Sleep(20 * time.Millisecond)
	if got := srv0.status("m"); got != StatusLoaded {
		t.Fatalf("s.model's model unloaded while its request runs: %s", got)
	}
	srv0.end(rq)
	waitStatus(t, srv0, "m", StatusUnloaded)

	srvS, _, clientS := onDemand(t, Config{KeepAlive: &short}, dir)
	if _, err := chatOnce(ctx, clientS, "m"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, srvS, "m", StatusUnloaded)

	srvN, _, clientN := onDemand(t, Config{KeepAlive: &never}, dir)
	if _, err := chatOnce(ctx, clientN, "m"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if l := srvN.Loaded(); len(l) != 1 || !l[0].ExpiresAt.IsZero() {
		t.Errorf("negative keep-alive: %+v", l)
	}

	// Loaded at start: kept whatever the keep-alive.
	srvL := New(Config{KeepAlive: &zero})
	t.Cleanup(srvL.Close)
	lm, err := srvL.Load("start", tinyTest(t), engine.Options{Threads: 2, CtxLen: 256}, "")
	if err != nil {
		t.Fatal(err)
	}
	srvL.Ready()
	tsL := httptest.NewServer(srvL.Handler())
	t.Cleanup(tsL.Close)
	clientL := openai.NewClient(option.WithBaseURL(tsL.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	if _, err := chatOnce(ctx, clientL, "start"); err != nil {
		t.Fatal(err)
	}
	srvL.touch(lm, 0)
	time.Sleep(50 * time.Millisecond)
	if got := srvL.status("start"); got != StatusLoaded {
		t.Errorf("a model loaded at start: %s after keep-alive 0", got)
	}
}

// TestOnDemandEvictsStartupModel: a model loaded at start gives its room
// under MaxLoaded to another and is loaded again by the next request
// naming it; a load that cannot get room in LoadTimeout is a 503 with
// Retry-After. Loaded at start, it waits as long as its load takes.
func TestOnDemandEvictsStartupModel(t *testing.T) {
	dir := modelsDir(t, map[string]string{"d.gguf": tinyTest(t)})
	srv := New(Config{MaxLoaded: 1, LoadTimeout: 3 * time.Second})
	t.Cleanup(srv.Close)
	if _, err := srv.Load("s", tinyTest(t), engine.Options{Threads: 2, CtxLen: 256}, ""); err != nil {
		t.Fatal(err)
	}
	if _, _, err := srv.AddModelDirs([]string{dir}, engine.Options{Threads: 2, CtxLen: 256}, ""); err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	client := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	ctx := context.Background()
	for _, m := range []string{"d", "s", "d"} {
		if _, err := chatOnce(ctx, client, m); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if l := srv.Loaded(); len(l) != 1 || l[0].Name != m {
			t.Fatalf("after %s: %+v", m, l)
		}
	}
	// d is in use (a request holds it): s waits for room, then 503.
	rq := srv.begin()
	if _, aerr := srv.acquire(context.WithValue(ctx, requestKey{}, rq), "d"); aerr != nil {
		t.Fatal(aerr)
	}
	resp, err := http.Post(ts.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"s","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "no room") {
		t.Errorf("while d is busy: %s %q, Retry-After %q", resp.Status, b, resp.Header.Get("Retry-After"))
	}
	srv.end(rq)
	if _, err := chatOnce(ctx, client, "s"); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoverModels: GGUF files at any depth, a split model once (by its
// first part, the id without the part), Hugging Face folders; not the
// projectors, hidden entries, other files.
func TestDiscoverModels(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.gguf", "sub/b.GGUF", "owner/repo/c-Q4_K_M.gguf", "split-00001-of-00002.gguf", "split-00002-of-00002.gguf",
		"mmproj-x.gguf", ".hidden/d.gguf", "notes.txt", "hf/config.json", "hf/model.safetensors", "hf/sub/e.gguf"} {
		p := filepath.Join(dir, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("xxxx"), 0o644)
	}
	found, err := DiscoverModels(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.ID+"="+f.Rel+":"+strconv.FormatInt(f.Size, 10))
	}
	want := "a=a:4 hf=hf:12 c-Q4_K_M=owner/repo/c-Q4_K_M:4 split=split:8 b=sub/b:4"
	if strings.Join(got, " ") != want {
		t.Errorf("found %v\nwant  %s", got, want)
	}
}

// TestOllamaOnDemand: ollama's routes take part in on-demand loading: a
// chat naming an unloaded model loads it, keep_alive 0 unloads it once the
// request ends, /api/tags lists it either way and /api/ps only while it is
// loaded, with when it expires.
func TestOllamaOnDemand(t *testing.T) {
	dir := modelsDir(t, map[string]string{"tiny.gguf": tinyTest(t)})
	srv, ts, _ := onDemand(t, Config{}, dir)
	var tags struct{ Models []struct{ Name string } }
	getJSON(t, ts.URL+"/api/tags", &tags)
	if len(tags.Models) != 1 || tags.Models[0].Name != "tiny:latest" {
		t.Fatalf("/api/tags before loading: %+v", tags)
	}
	var ps struct {
		Models []struct {
			Name      string
			ExpiresAt time.Time `json:"expires_at"`
		}
	}
	getJSON(t, ts.URL+"/api/ps", &ps)
	if len(ps.Models) != 0 {
		t.Fatalf("/api/ps before loading: %+v", ps)
	}
	chat := func(keepAlive string) {
		t.Helper()
		body := `{"model":"tiny","stream":false,"messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2}` + keepAlive + `}`
		resp, err := http.Post(ts.URL+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("chat: %d %s", resp.StatusCode, b)
		}
		io.Copy(io.Discard, resp.Body)
	}
	chat(`,"keep_alive":"10m"`)
	waitStatus(t, srv, "tiny", StatusLoaded)
	getJSON(t, ts.URL+"/api/ps", &ps)
	if len(ps.Models) != 1 || ps.Models[0].Name != "tiny:latest" || time.Until(ps.Models[0].ExpiresAt) < 9*time.Minute {
		t.Fatalf("/api/ps after a request with keep_alive 10m: %+v", ps)
	}
	chat(`,"keep_alive":0`)
	waitStatus(t, srv, "tiny", StatusUnloaded)
	getJSON(t, ts.URL+"/api/tags", &tags)
	if len(tags.Models) != 1 {
		t.Errorf("/api/tags after unloading: %+v", tags)
	}
}
