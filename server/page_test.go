package server_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/server"
)

// TestChatPageInBrowser opens the chat page in headless Chromium, sends a
// message and waits for the streamed reply and its tokens/s line.
func TestChatPageInBrowser(t *testing.T) {
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no chromium on PATH: the chat page was not tested in a browser (Debian: apt-get install chromium)")
	}
	f := start(t, server.Config{APIKey: testKey}, engine.Options{})
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.Headless)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var reply, meta, models string
	err := chromedp.Run(ctx,
		chromedp.Navigate(f.ts.URL+"/"),
		chromedp.SetValue("#key", testKey, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById("key").dispatchEvent(new Event("change")); true`, nil),
		chromedp.Poll(`document.querySelectorAll("#model option").length > 0`, nil),
		chromedp.Text("#model", &models, chromedp.ByQuery),
		chromedp.SetValue("#temp", "0", chromedp.ByQuery),
		chromedp.SetValue("#maxtok", "40", chromedp.ByQuery),
		chromedp.SendKeys("#input", "Tell me a story about a cat.", chromedp.ByQuery),
		chromedp.Click("#send", chromedp.ByQuery),
		chromedp.Poll(`document.querySelector('.msg.assistant[data-state="done"]') !== null`, nil),
		chromedp.Text(`.msg.assistant > div:first-child`, &reply, chromedp.ByQuery),
		chromedp.Text(`.msg.assistant .meta`, &meta, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(models, f.model) {
		t.Errorf("model picker shows %q", models)
	}
	if strings.TrimSpace(reply) == "" || !strings.Contains(meta, "tok/s") {
		t.Errorf("reply %q, meta %q", reply, meta)
	}
	t.Logf("reply %q (%s)", reply, meta)
	// LOOM_SCREENSHOT=FILE.png saves what the browser shows (the README's picture).
	if path := os.Getenv("LOOM_SCREENSHOT"); path != "" {
		var png []byte
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(1100, 640), chromedp.CaptureScreenshot(&png)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
