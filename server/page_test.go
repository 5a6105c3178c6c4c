package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/server"
)

// The chat page is tested in headless Chromium (skipped when there is none:
// Debian's package is chromium) at a desktop and a phone viewport.
// LOOM_PAGE_SHOTS=DIR saves screenshots there (desktop-*.png, phone-*.png).

type pageViewport struct {
	name string
	w, h int64
}

var (
	pageDesktop   = pageViewport{"desktop", 1280, 800}
	pagePhone     = pageViewport{"phone", 390, 844}
	pageViewports = []pageViewport{pageDesktop, pagePhone}
)

// pageBrowser starts headless Chromium for the test, or skips it.
func pageBrowser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no chromium on PATH: the chat page was not tested in a browser (Debian: apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	return actx
}

// pageTab opens url in a new tab (its own browser context: fresh localStorage)
// at viewport v; actions on it time out after 60 s.
func pageTab(t *testing.T, actx context.Context, v pageViewport, url string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel2 := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel2)
	opts := []chromedp.EmulateViewportOption{}
	if v == pagePhone {
		opts = append(opts, chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	pageRun(t, ctx, chromedp.EmulateViewport(v.w, v.h, opts...), chromedp.Navigate(url),
		chromedp.Poll(`document.querySelectorAll("#model option").length > 0`, nil))
	return ctx
}

func pageRun(t *testing.T, ctx context.Context, actions ...chromedp.Action) {
	t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// pageJS evaluates expr in the page into out (nil: ignored).
func pageJS(t *testing.T, ctx context.Context, expr string, out any) {
	t.Helper()
	pageRun(t, ctx, chromedp.Evaluate(expr, out))
}

// pageWait polls expr until it is truthy (10 s at most).
func pageWait(t *testing.T, ctx context.Context, expr string) {
	t.Helper()
	if err := chromedp.Run(ctx, chromedp.Poll(expr, nil, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		var state string
		chromedp.Run(ctx, chromedp.Evaluate(`document.getElementById("thread").innerText.slice(0, 800)`, &state))
		t.Fatalf("waiting for %s: %v\npage shows: %q", expr, err, state)
	}
}

// pageSend types text and presses Send, as a user would.
func pageSend(t *testing.T, ctx context.Context, text string) {
	t.Helper()
	pageRun(t, ctx, chromedp.SendKeys("#input", text, chromedp.ByQuery), chromedp.Click("#send", chromedp.ByQuery))
}

// pageLastReply is the last assistant message.
const pageLastReply = `[...document.querySelectorAll(".msg.assistant")].pop()`

// pageDone waits for the last assistant message to finish.
func pageDone(t *testing.T, ctx context.Context) {
	t.Helper()
	pageWait(t, ctx, pageLastReply+`?.dataset.state === "done"`)
}

// pageShot saves a screenshot of the viewport as DIR/name.png when LOOM_PAGE_SHOTS=DIR.
func pageShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("LOOM_PAGE_SHOTS")
	if dir == "" {
		return
	}
	var png []byte
	// Let the last frame paint (the streamed text is drawn once per animation frame).
	pageRun(t, ctx, chromedp.Sleep(150*time.Millisecond), chromedp.CaptureScreenshot(&png))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestChatPageInBrowser opens the chat page of a real server in headless
// Chromium, sends a message and waits for the streamed reply and its
// tokens/s line, at both viewports.
func TestChatPageInBrowser(t *testing.T) {
	actx := pageBrowser(t)
	f := start(t, server.Config{APIKey: testKey}, engine.Options{})
	for _, v := range pageViewports {
		t.Run(v.name, func(t *testing.T) {
			ctx, cancel := chromedp.NewContext(actx)
			defer cancel()
			ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			// The server wants a key: the page says so and opens the settings.
			pageRun(t, ctx, chromedp.EmulateViewport(v.w, v.h), chromedp.Navigate(f.ts.URL+"/"))
			pageWait(t, ctx, `document.getElementById("notice").textContent.includes("API key")`)
			pageRun(t, ctx,
				chromedp.SetValue("#key", testKey, chromedp.ByQuery),
				chromedp.Evaluate(`document.getElementById("key").dispatchEvent(new Event("change")); true`, nil),
				chromedp.Poll(`document.querySelectorAll("#model option").length > 0`, nil),
				chromedp.Evaluate(`document.body.classList.remove("nav-open"); document.getElementById("temp").value = "0"; document.getElementById("maxtok").value = "40"; true`, nil))
			var models, reply, meta string
			pageSend(t, ctx, "Tell me a story about a cat.")
			pageDone(t, ctx)
			pageRun(t, ctx,
				chromedp.Text("#model", &models, chromedp.ByQuery),
				chromedp.Text(`.msg.assistant .content`, &reply, chromedp.ByQuery),
				chromedp.Text(`.msg.assistant .meta`, &meta, chromedp.ByQuery))
			if !strings.Contains(models, f.model) {
				t.Errorf("model picker shows %q", models)
			}
			if strings.TrimSpace(reply) == "" || !strings.Contains(meta, "tok/s") {
				t.Errorf("reply %q, meta %q", reply, meta)
			}
			t.Logf("reply %q (%s)", reply, meta)
			pageShot(t, ctx, v.name+"-loom")
			// LOOM_SCREENSHOT=FILE.png saves what the browser shows (the README's picture).
			if path := os.Getenv("LOOM_SCREENSHOT"); path != "" && v == pageDesktop {
				var png []byte
				pageRun(t, ctx, chromedp.EmulateViewport(1100, 640), chromedp.CaptureScreenshot(&png))
				if err := os.WriteFile(path, png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestChatPageSource checks the page's source and headers: one file, no
// HTML parsing of text, a CSP that admits its one script by hash.
func TestChatPageSource(t *testing.T) {
	ts := startFakePage(t)
	r, err := http.Get(ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	src := string(body)
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "<link", "src=\"http", "@import"} {
		if strings.Contains(src, bad) {
			t.Errorf("page.html uses %q", bad)
		}
	}
	if regexp.MustCompile(`\son[a-z]+=`).MatchString(src) {
		t.Error("page.html has an inline event handler attribute (the CSP blocks them)")
	}
	i, j := strings.Index(src, "<script>"), strings.LastIndex(src, "</script>")
	sum := sha256.Sum256([]byte(src[i+len("<script>") : j]))
	csp := r.Header.Get("Content-Security-Policy")
	if want := fmt.Sprintf("script-src 'sha256-%s'", base64.StdEncoding.EncodeToString(sum[:])); !strings.Contains(csp, want) {
		t.Errorf("CSP %q lacks %q", csp, want)
	}
	if strings.Contains(csp, "script-src 'unsafe-inline'") {
		t.Errorf("CSP %q allows any inline script", csp)
	}
}
