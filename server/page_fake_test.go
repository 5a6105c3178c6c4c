package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/loom-inference/loom/server"
)

// The page's edge cases against a fake OpenAI endpoint that streams slowly
// and deterministically: the page is the real server's (with its CSP), the
// chat completions are the fake's, chosen by the last user message.

// pageCancelled receives the fake's slow streams that the client cut off.
var pageCancelled = make(chan string, 16)

const pageMarkdown = "## Shopping list\n\n" +
	"Here is what you need, with **bold**, *emphasis*, ~~less~~ and `inline code`:\n\n" +
	"- apples\n- pears\n  - conference\n- milk\n\n" +
	"1. first\n2. second\n\n" +
	"| Item | Qty |\n|------|----:|\n| apple | 3 |\n| pear | 2 |\n\n" +
	"> quoted\n\n" +
	"```go\nfmt.Println(\"<b>hi</b>\")\n```\n\n" +
	"A safe [link](https://example.com/docs) and unsafe [x](javascript:alert(1)) and [y](data:text/html,hi) links.\n" +
	"Raw HTML stays text: <img src=x onerror=\"window.pwned=1\"> and <script>window.pwned=2</script>.\n" +
	"*<img src=x onerror=\"window.pwned=3\">* [<img src=x onerror=\"window.pwned=4\">](https://example.com)"

func startFakePage(t *testing.T) *httptest.Server {
	t.Helper()
	srv := server.New(server.Config{}) // no models: only its page is used
	mux := http.NewServeMux()
	mux.Handle("/", srv.Handler())
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","object":"model"}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", fakePageChat)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func fakePageChat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct{ Role, Content string }
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	flusher := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flusher.Flush()
	}
	content := func(s string) {
		send(map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": s}}}})
	}
	finish := func(reason string, tokens int) {
		send(map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": reason}}})
		send(map[string]any{"object": "chat.completion.chunk", "choices": []any{}, "usage": map[string]any{"completion_tokens": tokens}})
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
	switch {
	case strings.Contains(prompt, "http error"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprint(w, `{"error":{"message":"max_tokens is too large: this model's context is 256 tokens","type":"invalid_request_error","param":"max_tokens"}}`)
		return
	case strings.Contains(prompt, "no connection"):
		panic(http.ErrAbortHandler) // the connection closes without an answer
	}
	w.Header().Set("Content-Type", "text/event-stream")
	send(map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant"}}}})
	switch {
	case strings.Contains(prompt, "slow"):
		for i := range 400 {
			select {
			case <-r.Context().Done():
				pageCancelled <- prompt
				return
			case <-time.After(40 * time.Millisecond):
			}
			content(fmt.Sprintf("w%d ", i))
		}
		finish("length", 400)
	case strings.Contains(prompt, "markdown"):
		for i := 0; i < len(pageMarkdown); i += 9 { // split mid-syntax on purpose
			content(pageMarkdown[i:min(i+9, len(pageMarkdown))])
			time.Sleep(2 * time.Millisecond)
		}
		finish("stop", 120)
	case strings.Contains(prompt, "stream error"):
		content("Partial answer ")
		content("before the failure")
		send(map[string]any{"error": map[string]any{"message": "the engine failed: out of KV cache", "type": "server_error"}})
	case strings.Contains(prompt, "drop"):
		content("Half a reply")
		time.Sleep(50 * time.Millisecond)
		panic(http.ErrAbortHandler) // the connection breaks mid-stream
	case strings.Contains(prompt, "think"):
		for _, r := range []string{"The user ", "wants a ", "greeting."} {
			send(map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"reasoning_content": r}}}})
			time.Sleep(10 * time.Millisecond)
		}
		content("Hello after thinking.")
		finish("stop", 9)
	case strings.Contains(prompt, "tool"):
		content("Let me check the weather.")
		// OpenAI's way: the id and name first, then the arguments in pieces.
		call := func(fn map[string]any, first bool) {
			tc := map[string]any{"index": 0, "function": fn}
			if first {
				tc["id"], tc["type"] = "call_1", "function"
			}
			send(map[string]any{"object": "chat.completion.chunk", "choices": []any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{tc}}}}})
		}
		call(map[string]any{"name": "get_weather", "arguments": ""}, true)
		for _, p := range []string{`{"city": "Par`, `is", "unit"`, `: "celsius"}`} {
			time.Sleep(20 * time.Millisecond)
			call(map[string]any{"arguments": p}, false)
		}
		finish("tool_calls", 17)
	default:
		content("Hello from the fake.")
		finish("stop", 5)
	}
}

// TestChatPageNewChatStopsStream: "New chat" while a reply streams stops it
// (the request is cancelled, nothing more is drawn, Send is back); at phone
// width the messages are not covered by the sidebar, which opens behind the
// menu button.
func TestChatPageNewChatStopsStream(t *testing.T) {
	actx := pageBrowser(t)
	ts := startFakePage(t)
	for _, v := range pageViewports {
		t.Run(v.name, func(t *testing.T) {
			ctx := pageTab(t, actx, v, ts.URL+"/")
			checkPageLayout(t, ctx, v)
			pageSend(t, ctx, "Tell me something slow")
			pageWait(t, ctx, pageLastReply+`.textContent.includes("w5 ")`)
			var sendDisabled bool
			pageJS(t, ctx, `document.getElementById("send").disabled && !document.getElementById("stop").hidden`, &sendDisabled)
			if !sendDisabled {
				t.Error("while streaming, Send is enabled or Stop is hidden")
			}
			pageShot(t, ctx, v.name+"-midstream")
			newChat := "#clear"
			if v == pagePhone {
				newChat = "#new" // the sidebar's button is in the closed drawer
			}
			pageRun(t, ctx, chromedp.Click(newChat, chromedp.ByQuery))
			select {
			case <-pageCancelled:
			case <-time.After(5 * time.Second):
				t.Fatal("the server's stream was not cancelled by New chat")
			}
			pageWait(t, ctx, `!document.getElementById("send").disabled && !document.getElementById("send").hidden && document.getElementById("stop").hidden`)
			saved := func() string {
				var s string
				pageJS(t, ctx, `JSON.parse(localStorage.getItem("loom.chats"))[0].messages[1].content`, &s)
				return s
			}
			before := saved()
			pageRun(t, ctx, chromedp.Sleep(500*time.Millisecond))
			var msgs int
			pageJS(t, ctx, `document.querySelectorAll("#thread .msg").length`, &msgs)
			if msgs != 0 {
				t.Errorf("the new chat shows %d messages", msgs)
			}
			if after := saved(); after != before || !strings.HasPrefix(after, "w0 w1 ") {
				t.Errorf("the stopped reply went on: %q then %q", before, after)
			}
			pageShot(t, ctx, v.name+"-newchat")

			// The stopped conversation is kept, marked stopped, and the page can send again.
			var meta string
			pageJS(t, ctx, `JSON.parse(localStorage.getItem("loom.chats"))[0].messages[1].meta`, &meta)
			if !strings.Contains(meta, "stopped") {
				t.Errorf("stopped reply's meta %q", meta)
			}
			pageSend(t, ctx, "hello")
			pageDone(t, ctx)
			var reply string
			pageJS(t, ctx, pageLastReply+`.querySelector(".content").textContent`, &reply)
			if reply != "Hello from the fake." {
				t.Errorf("reply after New chat %q", reply)
			}
			checkPageLayout(t, ctx, v)
			if v == pagePhone {
				checkPageDrawer(t, ctx)
			}
		})
	}
}

type pageRect struct{ Left, Top, Right, Bottom, Width, Height float64 }

const pageRectJS = `(() => { const r = document.querySelector(%q).getBoundingClientRect(); return {left: r.left, top: r.top, right: r.right, bottom: r.bottom, width: r.width, height: r.height}; })()`

func pageRectOf(t *testing.T, ctx context.Context, sel string) pageRect {
	t.Helper()
	var r pageRect
	pageJS(t, ctx, fmt.Sprintf(pageRectJS, sel), &r)
	return r
}

// checkPageLayout: the message area and the composer are in view and nothing
// covers them.
func checkPageLayout(t *testing.T, ctx context.Context, v pageViewport) {
	t.Helper()
	log, side, input := pageRectOf(t, ctx, "#log"), pageRectOf(t, ctx, "#side"), pageRectOf(t, ctx, "#input")
	if log.Width < float64(v.w)*0.6 || log.Height < float64(v.h)*0.5 || log.Left < 0 || log.Right > float64(v.w)+0.5 {
		t.Errorf("%s: message area %+v in a %dx%d viewport", v.name, log, v.w, v.h)
	}
	if side.Right > log.Left+0.5 && side.Left < log.Right && side.Width > 0 {
		t.Errorf("%s: the sidebar %+v overlaps the messages %+v", v.name, side, log)
	}
	if input.Bottom > float64(v.h) || input.Width < 150 {
		t.Errorf("%s: message box %+v", v.name, input)
	}
	var top string // what is drawn at the middle of the message area
	pageJS(t, ctx, fmt.Sprintf(`(() => { const e = document.elementFromPoint(%f, %f); return e && e.closest("#log") ? "log" : (e ? e.tagName + "#" + e.id : "none"); })()`,
		(log.Left+log.Right)/2, (log.Top+log.Bottom)/2), &top)
	if top != "log" {
		t.Errorf("%s: the middle of the message area shows %s", v.name, top)
	}
}

// checkPageDrawer: at phone width the menu button opens the conversations over
// the page and picking one closes them.
func checkPageDrawer(t *testing.T, ctx context.Context) {
	t.Helper()
	pageRun(t, ctx, chromedp.Click("#menu", chromedp.ByQuery))
	pageWait(t, ctx, `document.getElementById("side").getBoundingClientRect().left >= 0`)
	var n int
	pageJS(t, ctx, `document.querySelectorAll("#chats .chat").length`, &n)
	if n != 2 {
		t.Errorf("the drawer lists %d conversations, want 2", n)
	}
	pageShot(t, ctx, "phone-drawer")
	pageRun(t, ctx, chromedp.Click("#chats .chat .open", chromedp.ByQuery))
	pageWait(t, ctx, `document.getElementById("side").getBoundingClientRect().right <= 0`)
}

// TestChatPageMarkdown: replies render lists, emphasis, tables, headings,
// links and code, and nothing in them runs; the conversation survives a
// reload.
func TestChatPageMarkdown(t *testing.T) {
	actx := pageBrowser(t)
	ts := startFakePage(t)
	ctx := pageTab(t, actx, pageDesktop, ts.URL+"/")
	pageSend(t, ctx, "Show me some markdown <img src=x onerror=\"window.pwned=5\">")
	pageDone(t, ctx)
	check := func(when string) {
		t.Helper()
		var got map[string]any
		pageJS(t, ctx, `(() => {
			const c = `+pageLastReply+`.querySelector(".content"), n = (s) => c.querySelectorAll(s).length;
			return {
				h2: n("h2"), ul: n("ul > li"), nested: n("ul li > ul > li"), ol: n("ol > li"), em: n("em"), strong: n("strong"), del: n("del"),
				code: n("p code"), pre: n("pre code"), th: n("table th"), td: n("table td"), quote: n("blockquote"),
				right: c.querySelector("table td:nth-child(2)")?.style.textAlign,
				links: [...c.querySelectorAll("a")].map((a) => a.getAttribute("href")).join(" "),
				preText: c.querySelector("pre code")?.textContent,
				text: c.textContent,
				img: document.querySelectorAll("img").length,
				script: document.querySelectorAll("script").length,
				handlers: document.querySelectorAll("[onerror], [onload], [onclick]").length,
				js: document.querySelectorAll('[href^="javascript:"], [href^="data:"]').length,
				pwned: window.pwned === undefined ? 0 : window.pwned,
				user: document.querySelector(".msg.user").textContent,
			};
		})()`, &got)
		want := map[string]any{"h2": 1.0, "ul": 4.0, "nested": 1.0, "ol": 2.0, "em": 2.0, "strong": 1.0, "del": 1.0, "code": 1.0, "pre": 1.0,
			"th": 2.0, "td": 4.0, "quote": 1.0, "right": "right", "links": "https://example.com/docs https://example.com/",
			"preText": `fmt.Println("<b>hi</b>")`, "img": 0.0, "script": 1.0, "handlers": 0.0, "js": 0.0, "pwned": 0.0,
			"user": `Show me some markdown <img src=x onerror="window.pwned=5">`}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: %s = %v, want %v", when, k, got[k], w)
			}
		}
		text := got["text"].(string)
		for _, s := range []string{`<img src=x onerror="window.pwned=1">`, `<script>window.pwned=2</script>`, "[x](javascript:alert(1))", "[y](data:text/html,hi)"} {
			if !strings.Contains(text, s) {
				t.Errorf("%s: the reply does not show %q as text", when, s)
			}
		}
	}
	check("streamed")
	pageShot(t, ctx, "desktop-markdown")
	pageRun(t, ctx, chromedp.Reload(), chromedp.Poll(`document.querySelectorAll("#model option").length > 0`, nil))
	pageWait(t, ctx, `document.querySelectorAll(".msg").length === 2`)
	check("after reload")
	var title string
	pageJS(t, ctx, `document.querySelector("#chats .chat.active").textContent + "|" + document.getElementById("title").textContent`, &title)
	if !strings.HasPrefix(title, "Show me some markdown") {
		t.Errorf("after reload the conversation list/title is %q", title)
	}
}

// TestChatPageErrors: a failed request shows the server's message or the
// network error, before or during the stream (keeping the text so far).
func TestChatPageErrors(t *testing.T) {
	actx := pageBrowser(t)
	ts := startFakePage(t)
	ctx := pageTab(t, actx, pageDesktop, ts.URL+"/")
	for _, c := range []struct{ prompt, content, err string }{
		{"an http error please", "", "max_tokens is too large: this model's context is 256 tokens (HTTP 400)"},
		{"a stream error please", "Partial answer before the failure", "the engine failed: out of KV cache"},
		{"no connection please", "", "Connection failed: Failed to fetch"},
		{"drop the connection", "Half a reply", "Connection failed: network error"},
	} {
		pageRun(t, ctx, chromedp.Click("#clear", chromedp.ByQuery))
		pageSend(t, ctx, c.prompt)
		pageDone(t, ctx)
		var got struct{ Content, Err, Meta string }
		pageJS(t, ctx, `(() => { const m = `+pageLastReply+`; return {content: m.querySelector(".content").textContent,
			err: m.querySelector(".error")?.textContent || "", meta: m.querySelector(".meta")?.textContent || ""}; })()`, &got)
		if got.Content != c.content || got.Err != c.err {
			t.Errorf("%s: shows %+v, want content %q and error %q", c.prompt, got, c.content, c.err)
		}
		var sendOK bool
		pageJS(t, ctx, `!document.getElementById("send").disabled`, &sendOK)
		if !sendOK {
			t.Errorf("%s: Send stays disabled", c.prompt)
		}
		if c.prompt == "a stream error please" {
			pageShot(t, ctx, "desktop-error")
		}
	}
}

// TestChatPageToolCalls: streamed tool calls show as a collapsible block
// with the function's name and its arguments.
func TestChatPageToolCalls(t *testing.T) {
	actx := pageBrowser(t)
	ts := startFakePage(t)
	ctx := pageTab(t, actx, pagePhone, ts.URL+"/")
	pageSend(t, ctx, "use a tool")
	pageDone(t, ctx)
	tool := pageRectOf(t, ctx, "details.tool")
	if tool.Height < 20 || tool.Width < 200 {
		t.Errorf("tool call block %+v", tool)
	}
	var name, args, pre string
	pageRun(t, ctx,
		chromedp.Text("details.tool .name", &name, chromedp.ByQuery),
		chromedp.Text("details.tool .args", &args, chromedp.ByQuery),
		chromedp.Click("details.tool summary", chromedp.ByQuery),
		chromedp.Text("details.tool pre", &pre, chromedp.ByQuery))
	if name != "get_weather" || args != `{"city": "Paris", "unit": "celsius"}` {
		t.Errorf("tool call shows %q %q", name, args)
	}
	if want := "{\n  \"city\": \"Paris\",\n  \"unit\": \"celsius\"\n}"; pre != want {
		t.Errorf("opened tool call shows %q, want %q", pre, want)
	}
	pageShot(t, ctx, "phone-toolcall")
}

// TestChatPageReasoning: streamed reasoning_content shows as a collapsed
// "Thinking" block above the answer, which stays the message's content.
func TestChatPageReasoning(t *testing.T) {
	actx := pageBrowser(t)
	ts := startFakePage(t)
	ctx := pageTab(t, actx, pagePhone, ts.URL+"/")
	pageSend(t, ctx, "think first")
	pageDone(t, ctx)
	var kind, content, pre string
	var open bool
	pageRun(t, ctx,
		chromedp.Text("details.think .kind", &kind, chromedp.ByQuery),
		chromedp.Text(".msg.assistant .content", &content, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("details.think").open`, &open),
		chromedp.Click("details.think summary", chromedp.ByQuery),
		chromedp.Text("details.think pre", &pre, chromedp.ByQuery))
	if kind != "Thinking" || open || content != "Hello after thinking." || pre != "The user wants a greeting." {
		t.Errorf("thinking block %q (open %v) reasoning %q, answer %q", kind, open, pre, content)
	}
	pageShot(t, ctx, "phone-thinking")
}

// TestChatPageStorage: the page keeps the newest 50 conversations, and when
// the browser's quota is hit it keeps what fits and says so.
func TestChatPageStorage(t *testing.T) {
	actx := pageBrowser(t)
	ts := startFakePage(t)
	ctx := pageTab(t, actx, pageDesktop, ts.URL+"/")
	pageJS(t, ctx, `localStorage.setItem("loom.chats", JSON.stringify(Array.from({length: 70}, (_, i) =>
		({id: "c" + i, title: "old chat " + i, updated: 0, messages: [{role: "user", content: "q" + i}, {role: "assistant", content: "a" + i}]})))); true`, nil)
	pageRun(t, ctx, chromedp.Reload(), chromedp.Poll(`document.querySelectorAll("#model option").length > 0`, nil))
	var n int
	pageJS(t, ctx, `document.querySelectorAll("#chats .chat").length`, &n)
	if n != 50 {
		t.Errorf("the page lists %d conversations, want the newest 50", n)
	}
	pageSend(t, ctx, "hello")
	pageDone(t, ctx)
	var stored []struct{ Title string }
	pageJS(t, ctx, `JSON.parse(localStorage.getItem("loom.chats"))`, &stored)
	if len(stored) != 50 || stored[0].Title != "hello" || stored[49].Title != "old chat 48" {
		t.Errorf("stored %d conversations, first %v", len(stored), stored[:min(len(stored), 2)])
	}

	// A quota of 2,000 characters: the newest conversations that fit are kept.
	pageJS(t, ctx, `(() => { const set = Storage.prototype.setItem;
		Storage.prototype.setItem = function (k, v) { if (v.length > 2000) throw new DOMException("quota", "QuotaExceededError"); return set.call(this, k, v); };
		return true; })()`, nil)
	pageRun(t, ctx, chromedp.Click("#clear", chromedp.ByQuery))
	pageSend(t, ctx, "hello again")
	pageDone(t, ctx)
	var kept struct {
		N      int
		Len    int
		First  string
		Notice string
	}
	pageJS(t, ctx, `(() => { const s = localStorage.getItem("loom.chats"); const c = JSON.parse(s);
		return {n: c.length, len: s.length, first: c[0].title, notice: document.getElementById("notice").textContent}; })()`, &kept)
	if kept.N == 0 || kept.N >= 50 || kept.Len > 2000 || kept.First != "hello again" || !strings.Contains(kept.Notice, "storage is full") {
		t.Errorf("with the quota hit: %+v", kept)
	}
}
