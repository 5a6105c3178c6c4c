package explain_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHTML checks the page is self-contained and has every section, one
// heatmap per head and the roofline; when Chromium is installed it renders
// the page headless and checks what the browser saw.
func TestHTML(t *testing.T) {
	r := tinyReport(t)
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"1. Tokens", "2. Embeddings and positions", "3. Transformer blocks", "4. Next token",
		"5. KV cache", "6. Cost and the roofline", "7. Where the bytes are", "<title>roofline</title>", "arithmetic intensity"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, "<title>layer "); n != r.Model.NHeads {
		t.Errorf("%d heatmaps, want one per head (%d)", n, r.Model.NHeads)
	}
	// No network: no scripts, links, external images, fonts or imports.
	if m := regexp.MustCompile(`(?i)<script|<link|\bsrc=|href=|url\(|@import`).FindString(page); m != "" {
		t.Errorf("page references something external: %q", m)
	}
	if m := regexp.MustCompile(`https?://[^"]*`).FindAllString(page, -1); len(m) > 0 {
		for _, u := range m {
			if u != "http://www.w3.org/2000/svg" {
				t.Errorf("page names %q", u)
			}
		}
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no chromium on PATH: the page was not rendered (Debian: apt-get install chromium)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "explain.html")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + filepath.Join(dir, "profile")}
	dom, err := exec.CommandContext(ctx, browser, append(flags, "--dump-dom", "file://"+file)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if !strings.Contains(string(dom), "7. Where the bytes are") || strings.Count(string(dom), "<svg") < r.Model.NHeads+1 {
		t.Errorf("the browser's DOM lacks sections or SVGs (%d bytes)", len(dom))
	}
	if out, err := exec.CommandContext(ctx, browser, append(flags, "--window-size=1200,2400", "--screenshot="+shot, "file://"+file)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The heatmaps are blue: count strongly blue pixels.
	blue := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 2 {
		for x := bd.Min.X; x < bd.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			if b>>8 > 150 && r>>8 < 120 && g>>8 < 170 {
				blue++
			}
		}
	}
	if blue < 500 {
		t.Errorf("screenshot %v has %d heatmap-blue samples; the heatmaps did not render", bd.Size(), blue)
	}
	t.Logf("rendered %v, %d blue samples", bd.Size(), blue)
}
