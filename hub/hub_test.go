package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// fakeHub behaves like the Hub: model info with LFS sizes and hashes, and
// resolve URLs that redirect to another host (the CDN), which serves Range
// requests; it can cut a transfer short, lie about a hash, or require a
// token.
type fakeHub struct {
	files     map[string][]byte // repo/name → content
	badHash   map[string]bool
	cutAt     int64 // the CDN stops every first transfer of a file after this many bytes (0: never)
	cut       map[string]bool
	token     string
	hub, cdn  *httptest.Server
	downloads atomic.Int64
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{files: map[string][]byte{}, badHash: map[string]bool{}, cut: map[string]bool{}}
	h.cdn = httptest.NewServer(http.HandlerFunc(h.serveCDN))
	h.hub = httptest.NewServer(http.HandlerFunc(h.serveHub))
	t.Cleanup(func() { h.hub.Close(); h.cdn.Close() })
	return h
}

func (h *fakeHub) serveHub(w http.ResponseWriter, r *http.Request) {
	if h.token != "" && r.Header.Get("Authorization") != "Bearer "+h.token {
		http.Error(w, "gated", http.StatusUnauthorized)
		return
	}
	if repo, ok := strings.CutPrefix(r.URL.Path, "/api/models/"); ok {
		type lfs struct {
			SHA256 string `json:"sha256"`
			Size   int64  `json:"size"`
		}
		type sib struct {
			RFilename string `json:"rfilename"`
			LFS       *lfs   `json:"lfs,omitempty"`
		}
		var sibs []sib
		for k, data := range h.files {
			if name, ok := strings.CutPrefix(k, repo+"/"); ok {
				sum := sha256.Sum256(data)
				hash := hex.EncodeToString(sum[:])
				if h.badHash[k] {
					hash = strings.Repeat("0", 64)
				}
				sibs = append(sibs, sib{name, &lfs{hash, int64(len(data))}})
			}
		}
		if sibs == nil {
			http.NotFound(w, r)
			return
		}
		sibs = append(sibs, sib{RFilename: "README.md"})
		json.NewEncoder(w).Encode(map[string]any{"id": repo, "siblings": sibs})
		return
	}
	// /OWNER/REPO/resolve/main/FILE → the CDN.
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 5)
	if len(parts) == 5 && parts[2] == "resolve" {
		key := parts[0] + "/" + parts[1] + "/" + parts[4]
		if _, ok := h.files[key]; !ok {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, h.cdn.URL+"/blob/"+key, http.StatusFound)
		return
	}
	http.NotFound(w, r)
}

func (h *fakeHub) serveCDN(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		http.Error(w, "the token must not follow a redirect to another host", http.StatusBadRequest)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/blob/")
	data, ok := h.files[key]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h.downloads.Add(1)
	from := int64(0)
	if rg := r.Header.Get("Range"); rg != "" {
		from, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"), 10, 64)
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(data)-1, len(data)))
		w.Header().Set("Content-Length", strconv.Itoa(len(data)-int(from)))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	}
	body := data[from:]
	if h.cutAt > 0 && !h.cut[key] && int64(len(body)) > h.cutAt {
		h.cut[key] = true
		w.Write(body[:h.cutAt])
		panic(http.ErrAbortHandler) // drop the connection mid-transfer
	}
	w.Write(body)
}

func blob(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

func client(h *fakeHub, cache string) *Client {
	c := NewClient(cache)
	c.Endpoint, c.Retries = h.hub.URL, 2
	return c
}

func TestPull(t *testing.T) {
	h := newFakeHub(t)
	small, big := blob(1000, 1), blob(300000, 2)
	h.files["acme/tiny-GGUF/tiny-Q8_0.gguf"] = small
	h.files["acme/tiny-GGUF/tiny-Q4_K_M.gguf"] = big
	h.files["acme/tiny-GGUF/tiny-F16.gguf"] = blob(500000, 3)
	cache := t.TempDir()
	c := client(h, cache)
	ctx := context.Background()

	// OWNER/REPO: Q4_K_M by default; redirected to the CDN, which cuts the
	// first transfer short: the retry resumes with Range and the result is
	// byte-exact.
	h.cutAt = 100000
	var lastDone, lastTotal int64
	c.Progress = func(_ string, done, total int64) { lastDone, lastTotal = done, total }
	paths, err := c.Pull(ctx, Spec{Repo: "acme/tiny-GGUF"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(paths[0]); filepath.Base(paths[0]) != "tiny-Q4_K_M.gguf" || !bytes.Equal(got, big) {
		t.Fatalf("pulled %s (%d bytes), want the Q4_K_M file byte for byte", paths[0], len(got))
	}
	if lastDone != int64(len(big)) || lastTotal != int64(len(big)) {
		t.Errorf("progress ended at %d of %d", lastDone, lastTotal)
	}
	if n := h.downloads.Load(); n != 2 {
		t.Errorf("%d transfers, want 2 (cut, then resumed)", n)
	}
	// OWNER/REPO:QUANT; then the cache answers without the network.
	if paths, err = c.Pull(ctx, Spec{Repo: "acme/tiny-GGUF", Quant: "q8_0"}); err != nil || filepath.Base(paths[0]) != "tiny-Q8_0.gguf" {
		t.Fatalf("quant pull: %v %v", paths, err)
	}
	before := h.downloads.Load()
	if local, ok := c.Local(Spec{Repo: "acme/tiny-GGUF", Quant: "Q8_0"}); !ok || local[0] != paths[0] {
		t.Errorf("cache lookup: %v %v", local, ok)
	}
	if _, err := c.Pull(ctx, Spec{Repo: "acme/tiny-GGUF", Quant: "Q8_0"}); err != nil || h.downloads.Load() != before {
		t.Errorf("a cached file was downloaded again: %v", err)
	}
	if _, err := c.Pull(ctx, Spec{Repo: "acme/tiny-GGUF", Quant: "Q2_K"}); err == nil || !strings.Contains(err.Error(), "no Q2_K") {
		t.Errorf("missing quant: %v", err)
	}
}

func TestPullErrors(t *testing.T) {
	h := newFakeHub(t)
	h.files["acme/x/x-Q8_0.gguf"] = blob(5000, 4)
	h.badHash["acme/x/x-Q8_0.gguf"] = true
	cache := t.TempDir()
	c := client(h, cache)
	ctx := context.Background()
	// A wrong hash: rejected, nothing left in the cache.
	_, err := c.Pull(ctx, Spec{Repo: "acme/x", File: "x-Q8_0.gguf"})
	if err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("bad hash: %v", err)
	}
	filepath.Walk(cache, func(p string, info os.FileInfo, _ error) error {
		if info != nil && !info.IsDir() {
			t.Errorf("left in the cache after a hash mismatch: %s", p)
		}
		return nil
	})
	// 404 and 401 say what is wrong.
	if _, err := c.Pull(ctx, Spec{Repo: "acme/missing"}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("404: %v", err)
	}
	h.token = "secret"
	if _, err := c.Pull(ctx, Spec{Repo: "acme/x"}); err == nil || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("401: %v", err)
	}
	c.Token = "secret" // the token reaches the Hub, never the CDN
	h.badHash["acme/x/x-Q8_0.gguf"] = false
	if _, err := c.Pull(ctx, Spec{Repo: "acme/x"}); err != nil {
		t.Errorf("with the token: %v", err)
	}
}

func TestPullSplit(t *testing.T) {
	h := newFakeHub(t)
	for i := 1; i <= 3; i++ {
		h.files[fmt.Sprintf("acme/big/big-Q4_K_M-%05d-of-00003.gguf", i)] = blob(2000+i, byte(i))
	}
	paths, err := client(h, t.TempDir()).Pull(context.Background(), Spec{Repo: "acme/big"})
	if err != nil || len(paths) != 3 || !strings.HasSuffix(paths[0], "-00001-of-00003.gguf") {
		t.Fatalf("split pull: %v %v", paths, err)
	}
}

func TestParseSpec(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Spec
		ok   bool
	}{
		{"bartowski/Llama-3.2-1B-Instruct-GGUF", Spec{Repo: "bartowski/Llama-3.2-1B-Instruct-GGUF"}, true},
		{"owner/repo:Q4_K_M", Spec{Repo: "owner/repo", Quant: "Q4_K_M"}, true},
		{"owner/repo/model-Q8_0.gguf", Spec{Repo: "owner/repo", File: "model-Q8_0.gguf"}, true},
		{"owner/repo/../../etc/passwd.gguf", Spec{}, false},
		{"owner/repo/readme.md", Spec{}, false},
		{"noslash", Spec{}, false},
		{"../x/y", Spec{}, false},
	} {
		got, err := ParseSpec(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseSpec(%q) = %+v, %v", c.in, got, err)
		}
	}
}

// TestLooksLikeSpec: a missing DIR/FILE.gguf (or .bin) is a mistyped
// local path, not a Hub repository named FILE.gguf; OWNER/REPO[:QUANT]
// and OWNER/REPO/FILE.gguf are Hub names unless they exist on disk.
func TestLooksLikeSpec(t *testing.T) {
	dir := t.TempDir()
	local := filepath.Join(dir, "m.gguf")
	os.WriteFile(local, nil, 0o644)
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"bartowski/Llama-3.2-1B-Instruct-GGUF", true},
		{"owner/repo:Q4_K_M", true},
		{"owner/repo/model-Q8_0.gguf", true},
		{"models/typo.gguf", false},
		{"models/Typo.GGUF", false},
		{"checkpoints/stories.bin", false},
		{"owner/repo.gguf:Q8_0", true},
		{local, false},
		{"./owner/repo", false},
		{"Once upon a time", false},
	} {
		if got := LooksLikeSpec(c.in); got != c.want {
			t.Errorf("LooksLikeSpec(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
