package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/hub"
	"github.com/loom-inference/loom/internal/quantize"
)

// hubCache is where pulled models live (hub.DefaultCacheDir).
func hubCache() string { return hub.DefaultCacheDir() }

// progressBar draws a download's progress on a terminal (a bar redrawn in
// place), or plain lines every 10% otherwise.
type progressBar struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	files map[string]fileStart
	last  time.Time
	pct   int64 // last percentage printed (plain lines)
	open  bool  // the bar is drawn and its line not ended
}

// fileStart is where a file's download began: the rate counts only what
// arrives now, not what a resumed download already had.
type fileStart struct {
	at   time.Time
	done int64
}

func newProgressBar() *progressBar {
	return &progressBar{w: os.Stderr, tty: isTerminal(os.Stderr), now: time.Now}
}

// update shows done of total bytes of name.
func (p *progressBar) update(name string, done, total int64) {
	now := p.now()
	if p.files == nil {
		p.files = map[string]fileStart{}
	}
	st, ok := p.files[name]
	if !ok {
		st = fileStart{now, done}
		p.files[name] = st
		p.pct = -1
	}
	pct := int64(0)
	if total > 0 {
		pct = min(max(done*100/total, 0), 100)
	}
	secs := now.Sub(st.at).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(done-st.done) / secs
	}
	if !p.tty {
		if pct/10 != p.pct/10 || done == total {
			p.pct = pct
			fmt.Fprintf(p.w, "%s: %d%% (%.1f of %.1f MB, %.1f MB/s)\n", name, pct, float64(done)/1e6, float64(total)/1e6, rate/1e6)
		}
		return
	}
	if now.Sub(p.last) < 100*time.Millisecond && done != total && ok {
		return
	}
	p.last = now
	eta := "?"
	if total > 0 {
		eta = formatETA(total-done, rate)
	}
	bar := strings.Repeat("█", int(pct/4)) + strings.Repeat("░", 25-int(pct/4))
	fmt.Fprintf(p.w, "\r%s %s %3d%% %.1f/%.1f MB %.1f MB/s ETA %s   ", name, bar, pct, float64(done)/1e6, float64(total)/1e6, rate/1e6, eta)
	p.open = true
	if done == total {
		p.finish()
	}
}

// finish ends the bar's line, if one is open, so what prints next starts a
// line of its own.
func (p *progressBar) finish() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// formatETA is the time left for left bytes at rate bytes per second,
// rounded to the second ("?" without a rate or beyond a year).
func formatETA(left int64, rate float64) string {
	if left <= 0 {
		return "0s"
	}
	secs := float64(left) / rate
	if !(rate > 0) || secs > 365*24*3600 {
		return "?"
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Second).String()
}

// cmdPull downloads a GGUF from the Hugging Face Hub into the cache.
func cmdPull(args []string) error {
	pos, err := parseArgs(newFlags("pull"), args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("want OWNER/REPO[:QUANT] or OWNER/REPO/FILE.gguf")
	}
	if err := unexpected(pos, 1); err != nil {
		return err
	}
	paths, err := pull(pos[0])
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Println(p)
	}
	return nil
}

func pull(spec string) ([]string, error) {
	sp, err := hub.ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	c := hub.NewClient(hubCache())
	bar := newProgressBar()
	c.Progress = bar.update
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	paths, err := c.Pull(ctx, sp)
	bar.finish() // the error, if any, starts a line of its own
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: interrupted; the partial download is kept and the next pull resumes it", spec)
	}
	return paths, err
}

// resolveModel turns -m OWNER/REPO[:QUANT] into a cached file, pulling it
// on first use; other values are paths, which must exist.
func resolveModel(m string) (string, error) {
	if m == "" {
		return m, nil
	}
	if !hub.LooksLikeSpec(m) {
		if _, err := os.Stat(m); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%s: no such model file or folder (a model is a GGUF file, a Hugging Face folder, a llama2.c .bin, or OWNER/REPO[:QUANT] from the Hugging Face Hub)", m)
		}
		return m, nil
	}
	sp, err := hub.ParseSpec(m)
	if err != nil {
		return "", err
	}
	paths, ok := hub.NewClient(hubCache()).Local(sp)
	if !ok {
		fmt.Fprintf(os.Stderr, "loom: %s is not cached: pulling it\n", m)
		if paths, err = pull(m); err != nil {
			return "", fmt.Errorf("%s is no local file or folder, and pulling it from the Hugging Face Hub failed: %w", m, err)
		}
	}
	return paths[0], nil // a split model: the first part brings the others
}

// cmdList lists cached models.
func cmdList(args []string) error {
	pos, err := parseArgs(newFlags("list"), args)
	if err != nil {
		return err
	}
	if err := unexpected(pos, 0); err != nil {
		return err
	}
	root := hubCache()
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSIZE\tTYPE\tARCH")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".gguf") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := d.Info()
		typ, arch := "?", "?"
		if f, err := gguf.Open(p); err == nil {
			if a, ok := f.String("general.architecture"); ok {
				arch = a
			}
			if ft, err := f.Uint("general.file_type"); err == nil {
				typ = quantize.FType(ft).String()
			}
			f.Close()
		}
		fmt.Fprintf(w, "%s\t%.1f MB\t%s\t%s\n", filepath.ToSlash(rel), float64(info.Size())/1e6, typ, arch)
		return nil
	})
	w.Flush()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// cmdRm removes cached models: OWNER/REPO (all its files), OWNER/REPO:QUANT
// or OWNER/REPO/FILE.gguf.
func cmdRm(args []string) error {
	pos, err := parseArgs(newFlags("rm"), args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return errors.New("want OWNER/REPO[:QUANT] or OWNER/REPO/FILE.gguf")
	}
	if err := unexpected(pos, 1); err != nil {
		return err
	}
	sp, err := hub.ParseSpec(pos[0])
	if err != nil {
		return err
	}
	c := hub.NewClient(hubCache())
	dir := filepath.Join(c.Cache, filepath.FromSlash(sp.Repo))
	if sp.File == "" && sp.Quant == "" {
		if _, err := os.Stat(dir); err != nil {
			return fmt.Errorf("%s is not cached", sp.Repo)
		}
		fmt.Println("removed", dir)
		return os.RemoveAll(dir)
	}
	paths, ok := c.Local(sp)
	if !ok {
		return fmt.Errorf("%s is not cached", pos[0])
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return err
		}
		fmt.Println("removed", p)
	}
	return nil
}
