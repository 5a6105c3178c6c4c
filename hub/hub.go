// Package hub downloads GGUF files from the Hugging Face Hub (or a mirror)
// into a local cache: resumable (HTTP Range into a .partial file), checked
// against the SHA-256 the Hub publishes for LFS files before it is moved
// into place, with retries and backoff, and clear errors for private,
// gated or missing repositories.
package hub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Client talks to a Hub.
type Client struct {
	Endpoint string       // https://huggingface.co, or $HF_ENDPOINT
	Token    string       // $HF_TOKEN, for gated and private repositories
	Cache    string       // where files land: Cache/OWNER/REPO/FILE
	HTTP     *http.Client // nil: a client with timeouts
	Retries  int          // attempts per file beyond the first (default 4)
	// Progress, when set, is called as bytes arrive: done of total for file.
	Progress func(file string, done, total int64)
}

// NewClient configures a client from the environment (HF_ENDPOINT,
// HF_TOKEN) with cache as its directory.
func NewClient(cache string) *Client {
	c := &Client{Endpoint: "https://huggingface.co", Token: os.Getenv("HF_TOKEN"), Cache: cache}
	if e := os.Getenv("HF_ENDPOINT"); e != "" {
		c.Endpoint = strings.TrimRight(e, "/")
	}
	return c
}

// Spec names what to fetch: OWNER/REPO, OWNER/REPO:QUANT or
// OWNER/REPO/FILE.gguf.
type Spec struct {
	Repo  string // OWNER/REPO
	Quant string // e.g. Q4_K_M (optional)
	File  string // a file in the repository (optional)
}

var repoRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// ParseSpec reads OWNER/REPO[:QUANT] or OWNER/REPO/FILE.gguf.
func ParseSpec(s string) (Spec, error) {
	var sp Spec
	if repo, q, ok := strings.Cut(s, ":"); ok {
		sp.Repo, sp.Quant = repo, q
	} else if parts := strings.SplitN(s, "/", 3); len(parts) == 3 {
		sp.Repo, sp.File = parts[0]+"/"+parts[1], parts[2]
	} else {
		sp.Repo = s
	}
	if !repoRe.MatchString(sp.Repo) || strings.Contains(sp.Repo, "..") {
		return sp, fmt.Errorf("%q is not OWNER/REPO[:QUANT] or OWNER/REPO/FILE.gguf", s)
	}
	if sp.File != "" && (strings.Contains(sp.File, "..") || !strings.HasSuffix(strings.ToLower(sp.File), ".gguf")) {
		return sp, fmt.Errorf("%q: the file must be a .gguf inside the repository", s)
	}
	return sp, nil
}

// LooksLikeSpec reports whether s is meant as a Hub reference rather than
// a path: it does not exist on disk and has the OWNER/REPO shape, and it
// is not DIR/FILE.gguf or DIR/FILE.bin (a mistyped local file, not a
// repository named like a model file).
func LooksLikeSpec(s string) bool {
	if _, err := os.Stat(s); err == nil {
		return false
	}
	sp, err := ParseSpec(s)
	if err != nil || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "/") {
		return false
	}
	if sp.Quant == "" && sp.File == "" {
		low := strings.ToLower(sp.Repo)
		if strings.HasSuffix(low, ".gguf") || strings.HasSuffix(low, ".bin") {
			return false
		}
	}
	return true
}

// file is one entry of the Hub's model info.
type file struct {
	Name   string `json:"rfilename"`
	Size   int64  `json:"size"`
	SHA256 string // from lfs.sha256
}

// listFiles asks the Hub for the repository's files, sizes and hashes.
func (c *Client) listFiles(ctx context.Context, repo string) ([]file, error) {
	var info struct {
		Siblings []struct {
			RFilename string `json:"rfilename"`
			Size      int64  `json:"size"`
			LFS       *struct {
				SHA256 string `json:"sha256"`
				Size   int64  `json:"size"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	u := c.Endpoint + "/api/models/" + repo + "?blobs=true"
	resp, err := c.get(ctx, u, 0)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&info); err != nil {
		return nil, fmt.Errorf("%s: model info: %w", repo, err)
	}
	var out []file
	for _, s := range info.Siblings {
		f := file{Name: s.RFilename, Size: s.Size}
		if s.LFS != nil {
			f.SHA256, f.Size = s.LFS.SHA256, s.LFS.Size
		}
		out = append(out, f)
	}
	return out, nil
}

var splitRe = regexp.MustCompile(`-(\d{5})-of-(\d{5})\.gguf$`)

// choose picks the files to fetch: the named file; else the GGUF files
// matching the quantization; else Q4_K_M if there is one, else the
// smallest GGUF. A split file brings all its parts.
func choose(files []file, sp Spec) ([]file, error) {
	var ggufs []file
	for _, f := range files {
		if strings.HasSuffix(strings.ToLower(f.Name), ".gguf") {
			ggufs = append(ggufs, f)
		}
	}
	if len(ggufs) == 0 {
		return nil, fmt.Errorf("%s has no GGUF files", sp.Repo)
	}
	var pick *file
	switch {
	case sp.File != "":
		for i := range ggufs {
			if ggufs[i].Name == sp.File {
				pick = &ggufs[i]
			}
		}
		if pick == nil {
			return nil, fmt.Errorf("%s has no file %s", sp.Repo, sp.File)
		}
	default:
		q := strings.ToUpper(sp.Quant)
		if q == "" {
			q = "Q4_K_M"
		}
		var matches []file
		for _, f := range ggufs {
			if strings.Contains(strings.ToUpper(f.Name), q) {
				matches = append(matches, f)
			}
		}
		if len(matches) == 0 && sp.Quant != "" {
			var names []string
			for _, f := range ggufs {
				names = append(names, f.Name)
			}
			return nil, fmt.Errorf("%s has no %s file (it has: %s)", sp.Repo, sp.Quant, strings.Join(names, ", "))
		}
		if len(matches) == 0 {
			matches = ggufs
		}
		sort.Slice(matches, func(i, j int) bool { return matches[i].Size < matches[j].Size })
		pick = &matches[0]
	}
	m := splitRe.FindStringSubmatch(pick.Name)
	if m == nil {
		return []file{*pick}, nil
	}
	n, _ := strconv.Atoi(m[2])
	stem := strings.TrimSuffix(pick.Name, m[0])
	var parts []file
	for i := 1; i <= n; i++ {
		want := fmt.Sprintf("%s-%05d-of-%05d.gguf", stem, i, n)
		found := false
		for _, f := range ggufs {
			if f.Name == want {
				parts, found = append(parts, f), true
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: split part %s is missing", sp.Repo, want)
		}
	}
	return parts, nil
}

// Pull fetches what sp names into the cache (skipping files already there
// with the right size) and returns the local paths, the first part first.
func (c *Client) Pull(ctx context.Context, sp Spec) ([]string, error) {
	files, err := c.listFiles(ctx, sp.Repo)
	if err != nil {
		return nil, err
	}
	pick, err := choose(files, sp)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range pick {
		p, err := c.fetch(ctx, sp.Repo, f)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Local returns cached paths for sp without any network access (false if
// nothing cached matches).
func (c *Client) Local(sp Spec) ([]string, bool) {
	dir := filepath.Join(c.Cache, filepath.FromSlash(sp.Repo))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	var files []file
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() && strings.HasSuffix(e.Name(), ".gguf") {
			files = append(files, file{Name: e.Name(), Size: info.Size()})
		}
	}
	pick, err := choose(files, sp)
	if err != nil {
		return nil, false
	}
	var out []string
	for _, f := range pick {
		out = append(out, filepath.Join(dir, f.Name))
	}
	return out, true
}

// fetch downloads one file with resume, retries and hash check.
func (c *Client) fetch(ctx context.Context, repo string, f file) (string, error) {
	if strings.Contains(f.Name, "/") || strings.Contains(f.Name, "..") {
		return "", fmt.Errorf("%s: refusing file name %q", repo, f.Name)
	}
	dir := filepath.Join(c.Cache, filepath.FromSlash(repo))
	final := filepath.Join(dir, f.Name)
	if st, err := os.Stat(final); err == nil && (f.Size == 0 || st.Size() == f.Size) {
		return final, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	partial := final + ".partial"
	u := c.Endpoint + "/" + repo + "/resolve/main/" + url.PathEscape(f.Name)
	retries := c.Retries
	if retries == 0 {
		retries = 4
	}
	var err error
	for attempt := 0; attempt <= retries; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(time.Duration(1<<min(attempt-1, 5)) * 250 * time.Millisecond):
			}
		}
		if err = c.download(ctx, u, partial, f); err == nil {
			break
		}
		var perm *permanentError
		if errors.As(err, &perm) || ctx.Err() != nil {
			return "", err
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v (after %d attempts; the partial download is kept for the next try)", f.Name, err, retries+1)
	}
	if f.SHA256 != "" {
		sum, err := fileSHA256(partial)
		if err != nil {
			return "", err
		}
		if !strings.EqualFold(sum, f.SHA256) {
			os.Remove(partial)
			return "", fmt.Errorf("%s: SHA-256 %s does not match the Hub's %s; the file was discarded", f.Name, sum, f.SHA256)
		}
	}
	if err := os.Rename(partial, final); err != nil {
		return "", err
	}
	return final, nil
}

// permanentError is not retried (401, 403, 404, a full disk).
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// download appends to partial from where it stopped (HTTP Range).
func (c *Client) download(ctx context.Context, u, partial string, f file) error {
	var have int64
	if st, err := os.Stat(partial); err == nil {
		have = st.Size()
	}
	if f.Size > 0 && have == f.Size {
		return nil
	}
	if f.Size > 0 && have > f.Size {
		os.Remove(partial)
		have = 0
	}
	resp, err := c.get(ctx, u, have)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if resp.StatusCode != http.StatusPartialContent { // the whole file: start over
		flags = os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		have = 0
	}
	out, err := os.OpenFile(partial, flags, 0o644)
	if err != nil {
		return &permanentError{err}
	}
	total := f.Size
	if total == 0 && resp.ContentLength > 0 {
		total = have + resp.ContentLength
	}
	w := &progressWriter{w: out, done: have, total: total, name: f.Name, fn: c.Progress}
	_, err = io.Copy(w, resp.Body)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) { // writing failed (e.g. the disk is full)
			return &permanentError{fmt.Errorf("writing %s: %w", partial, err)}
		}
		return fmt.Errorf("download interrupted at %d bytes: %w", w.done, err)
	}
	if f.Size > 0 && w.done != f.Size {
		return fmt.Errorf("download ended at %d of %d bytes", w.done, f.Size)
	}
	return nil
}

// get sends a GET (from byte offset from) with the token and maps statuses
// to errors that say what to do.
func (c *Client) get(ctx context.Context, u string, from int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	req.Header.Set("User-Agent", "loom")
	if from > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", from))
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment,
			ResponseHeaderTimeout: 30 * time.Second, TLSHandshakeTimeout: 15 * time.Second},
			CheckRedirect: stripAuthAcrossHosts}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent:
		return resp, nil
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		resp.Body.Close()
		return nil, fmt.Errorf("%s: the server refused the resume range", u)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		msg := "access denied: the repository is gated or private; accept its terms on the Hub and set HF_TOKEN"
		if c.Token != "" {
			msg = "access denied with the HF_TOKEN given: check the token and that its account accepted the repository's terms"
		}
		return nil, &permanentError{fmt.Errorf("%s: %s (HTTP %d)", u, msg, resp.StatusCode)}
	case http.StatusNotFound:
		return nil, &permanentError{fmt.Errorf("%s: not found (HTTP 404): check the repository and file names", u)}
	}
	return nil, fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
}

// stripAuthAcrossHosts keeps the token from following a redirect to
// another host (the Hub sends files from a CDN with signed URLs, which
// must not see it and may refuse a second credential).
func stripAuthAcrossHosts(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("too many redirects")
	}
	if req.URL.Host != via[0].URL.Host {
		req.Header.Del("Authorization")
	}
	return nil
}

type progressWriter struct {
	w           io.Writer
	done, total int64
	name        string
	fn          func(string, int64, int64)
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	if p.fn != nil {
		p.fn(p.name, p.done, p.total)
	}
	return n, err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// DefaultCacheDir is where pulled models live: $LOOM_HUB_CACHE, else the
// user cache directory's loom/hub (the temporary directory's when there is
// none).
func DefaultCacheDir() string {
	if d := os.Getenv("LOOM_HUB_CACHE"); d != "" {
		return d
	}
	c, err := os.UserCacheDir()
	if err != nil {
		c = os.TempDir()
	}
	return filepath.Join(c, "loom", "hub")
}
