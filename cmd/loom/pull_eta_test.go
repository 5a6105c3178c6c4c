package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPullProgressETA: the bar's ETA is the remaining bytes over the rate
// of this download (a fake clock): 900 of 1000 bytes left at 100 B/s is 9s,
// not 0s; a resumed download's rate counts only the bytes fetched now.
func TestPullProgressETA(t *testing.T) {
	now := time.Unix(1000, 0)
	var buf bytes.Buffer
	p := &progressBar{w: &buf, tty: true, now: func() time.Time { return now }}
	p.update("f.gguf", 0, 1000)
	now = now.Add(time.Second)
	p.update("f.gguf", 100, 1000)
	if !strings.Contains(buf.String(), "ETA 9s") {
		t.Errorf("100 of 1000 bytes after 1s: %q, want ETA 9s", buf.String())
	}
	buf.Reset()
	p = &progressBar{w: &buf, tty: true, now: func() time.Time { return now }}
	p.update("g.gguf", 500e6, 1000e6) // resumed at half
	now = now.Add(10 * time.Second)
	p.update("g.gguf", 600e6, 1000e6)
	if !strings.Contains(buf.String(), "10.0 MB/s ETA 40s") {
		t.Errorf("resumed: %q, want 10.0 MB/s ETA 40s", buf.String())
	}
	for _, c := range []struct {
		left int64
		rate float64
		want string
	}{{900, 100, "9s"}, {3600e6, 1e6, "1h0m0s"}, {10, 0, "?"}, {0, 5, "0s"}, {1 << 62, 1e-9, "?"}} {
		if got := formatETA(c.left, c.rate); got != c.want {
			t.Errorf("formatETA(%d, %g) = %q, want %q", c.left, c.rate, got, c.want)
		}
	}
	// A line left open by the bar is ended before anything else prints.
	buf.Reset()
	p.update("g.gguf", 700e6, 1000e6)
	p.finish()
	if !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("finish left the bar line open: %q", buf.String())
	}
	buf.Reset()
	p.finish()
	if buf.Len() != 0 {
		t.Errorf("finish with no open line printed %q", buf.String())
	}
}
