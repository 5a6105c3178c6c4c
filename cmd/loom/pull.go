package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/hub"
)

// hubCache is where pulled models live.
func hubCache() string {
	if d := os.Getenv("LOOM_HUB_CACHE"); d != "" {
		return d
	}
	c, err := os.UserCacheDir()
	if err != nil {
		c = os.TempDir()
	}
	return filepath.Join(c, "loom", "hub")
}

// progress draws a bar on a terminal (plain lines every 10% otherwise).
func progress() func(string, int64, int64) {
	tty := isTerminal(os.Stderr)
	start, last, lastPct := time.Now(), time.Time{}, int64(-1)
	return func(name string, done, total int64) {
		pct := int64(0)
		if total > 0 {
			pct = done * 100 / total
		}
		secs := time.Since(start).Seconds()
		speed := float64(done) / max(secs, 1e-3)
		if tty {
			if time.Since(last) < 100*time.Millisecond && done != total {
				return
			}
			last = time.Now()
			eta := "?"
			if speed > 0 && total > 0 {
				eta = (time.Duration(float64(total-done)/speed) * time.Second / time.Second).Round(time.Second).String()
			}
			bar := strings.Repeat("█", int(pct/4)) + strings.Repeat("░", 25-int(pct/4))
			fmt.Fprintf(os.Stderr, "\r%s %s %3d%% %.1f/%.1f MB %.1f MB/s ETA %s   ", name, bar, pct, float64(done)/1e6, float64(total)/1e6, speed/1e6, eta)
			if done == total {
				fmt.Fprintln(os.Stderr)
			}
			return
		}
		if pct/10 != lastPct/10 || done == total {
			lastPct = pct
			fmt.Fprintf(os.Stderr, "%s: %d%% (%.1f of %.1f MB, %.1f MB/s)\n", name, pct, float64(done)/1e6, float64(total)/1e6, speed/1e6)
		}
	}
}

// cmdPull downloads a GGUF from the Hugging Face Hub into the cache.
func cmdPull(args []string) error {
	fl := flag.NewFlagSet("pull", flag.ContinueOnError)
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: loom pull OWNER/REPO[:QUANT] | OWNER/REPO/FILE.gguf\n\nDownloads into the cache (resumable, SHA-256 checked). HF_TOKEN for gated repositories, HF_ENDPOINT for a mirror.")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return errors.New("want one OWNER/REPO[:QUANT]")
	}
	paths, err := pull(fl.Arg(0))
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
	c.Progress = progress()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return c.Pull(ctx, sp)
}

// resolveModel turns -m OWNER/REPO[:QUANT] into a cached file, pulling it
// on first use; other values are paths.
func resolveModel(m string) (string, error) {
	if m == "" || !hub.LooksLikeSpec(m) {
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
			return "", err
		}
	}
	return paths[0], nil // a split model: the first part brings the others
}

// cmdList lists cached models.
func cmdList(args []string) error {
	fl := flag.NewFlagSet("list", flag.ContinueOnError)
	if err := fl.Parse(args); err != nil {
		return err
	}
	root := hubCache()
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSIZE\tTYPE\tARCH")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
				typ = fileType(ft)
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

// fileType names llama.cpp's general.file_type values.
func fileType(ft uint64) string {
	names := map[uint64]string{0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
		11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 25: "IQ4_NL", 32: "BF16"}
	if n, ok := names[ft]; ok {
		return n
	}
	return fmt.Sprintf("type %d", ft)
}

// cmdRm removes cached models: OWNER/REPO (all its files), OWNER/REPO:QUANT
// or OWNER/REPO/FILE.gguf.
func cmdRm(args []string) error {
	fl := flag.NewFlagSet("rm", flag.ContinueOnError)
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		return errors.New("usage: loom rm OWNER/REPO[:QUANT] | OWNER/REPO/FILE.gguf")
	}
	sp, err := hub.ParseSpec(fl.Arg(0))
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
		return fmt.Errorf("%s is not cached", fl.Arg(0))
	}
	for _, p := range paths {
		if err := os.Remove(p); err != nil {
			return err
		}
		fmt.Println("removed", p)
	}
	return nil
}
