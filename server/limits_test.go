package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/server"
)

// readUntilClosed reads c until the server closes it (or limit passes)
// and returns what arrived, how long it took and whether it was closed.
func readUntilClosed(c net.Conn, limit time.Duration) (string, time.Duration, bool) {
	t0 := time.Now()
	c.SetReadDeadline(t0.Add(limit))
	b, err := io.ReadAll(c)
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	return string(b), time.Since(t0), !timedOut
}

func dial(t *testing.T, ts *httptest.Server) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func healthy(t *testing.T, ts *httptest.Server) {
	t.Helper()
	resp, err := http.Get(ts.URL + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestSlowClients: a body that never arrives, an idle keep-alive
// connection and a stream nobody reads are each let go after their
// timeout, while a stream that is read runs past all of them.
func TestSlowClients(t *testing.T) {
	const bodyTimeout, idleTimeout, writeTimeout = 300 * time.Millisecond, 600 * time.Millisecond, 300 * time.Millisecond
	f := start(t, server.Config{BodyTimeout: bodyTimeout, IdleTimeout: idleTimeout, WriteTimeout: writeTimeout},
		engine.Options{Threads: 2, CtxLen: 4096})

	for _, path := range []string{"/v1/chat/completions", "/no/such/route"} {
		t.Run("stalled body "+path, func(t *testing.T) {
			c := dial(t, f.ts)
			// Content-Length 1000, one byte sent.
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: loom\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", path, testKey)
			got, took, closed := readUntilClosed(c, bodyTimeout+5*time.Second)
			if !closed || took > bodyTimeout+2*time.Second {
				t.Fatalf("the connection stayed open %v (closed: %v) with a body timeout of %v; got %q", took, closed, bodyTimeout, got)
			}
			if path == "/v1/chat/completions" && !strings.HasPrefix(got, "HTTP/1.1 408") {
				t.Errorf("answer %.120q, want 408", got)
			}
			healthy(t, f.ts)
		})
	}

	t.Run("idle keep-alive", func(t *testing.T) {
		c := dial(t, f.ts)
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: loom\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		t0 := time.Now()
		c.SetReadDeadline(t0.Add(idleTimeout + 5*time.Second))
		_, err = br.ReadByte()
		if took := time.Since(t0); err != io.EOF || took > idleTimeout+2*time.Second {
			t.Fatalf("idle connection: %v after %v, want closed after %v", err, took, idleTimeout)
		}
	})

	// A stream that is read outlives the body and write timeouts: the
	// body's read deadline is lifted once the body is in.
	t.Run("long stream", func(t *testing.T) {
		t0 := time.Now()
		req, _ := http.NewRequest("POST", f.ts.URL+"/v1/completions", strings.NewReader(
			`{"prompt":"Once upon a time","max_tokens":150,"ignore_eos":true,"temperature":1,"seed":1,"stream":true}`))
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		took := time.Since(t0)
		if err != nil || !strings.HasSuffix(string(b), "data: [DONE]\n\n") || strings.Contains(string(b), `"error"`) {
			t.Fatalf("after %v: %v, stream ends %q", took, err, b[max(0, len(b)-200):])
		}
		if took < bodyTimeout {
			t.Logf("the stream took %v, under the %v body timeout: it proves nothing here", took, bodyTimeout)
		}
	})

	// A stream nobody reads: once the socket buffers are full, a write
	// waits writeTimeout, fails, and the request is cancelled.
	t.Run("stalled reader", func(t *testing.T) {
		ts := httptest.NewUnstartedServer(nil)
		ts.Listener = smallBuffers{ts.Listener}
		ts.Config = f.srv.HTTPServer()
		ts.Start()
		defer ts.Close()
		before := f.srv.Stats().GeneratedTokens
		c := dial(t, ts)
		c.(*net.TCPConn).SetReadBuffer(4096)
		body := `{"prompt":"Once upon a time","max_tokens":3000,"ignore_eos":true,"temperature":1,"logprobs":20,"stream":true}`
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: loom\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", testKey, len(body), body)
		// Never read: wait for the request to end.
		time.Sleep(100 * time.Millisecond)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if st := f.srv.Stats(); st.Running == 0 && st.Waiting == 0 && st.KVUsed == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		st := f.srv.Stats()
		if n := st.GeneratedTokens - before; st.Running != 0 || st.KVUsed != 0 || n >= 3000 {
			t.Fatalf("a stream nobody reads: %d running, %d KV blocks held, %d of 3000 tokens generated", st.Running, st.KVUsed, n)
		} else {
			t.Logf("the unread stream was cancelled after %d tokens", n)
		}
		if _, took, closed := readUntilClosed(c, 5*time.Second); !closed {
			t.Errorf("the connection of the unread stream is still open after %v", took)
		}
		healthy(t, f.ts)
	})
}

// settled waits for the server's schedulers to be idle with every KV
// block free (the published statistics trail the streams by a step).
func settled(t *testing.T, srv *server.Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := srv.Stats()
		if st.Running == 0 && st.Waiting == 0 && st.KVUsed == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not idle: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// smallBuffers gives accepted connections a small send buffer, so a
// client that does not read blocks the server's writes soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(8192)
	}
	return c, err
}

// TestAPIKeyForms: only "Bearer KEY" (any case of the scheme) opens the
// API.
func TestAPIKeyForms(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	for _, c := range []struct {
		name   string
		header map[string][]string
		status int
	}{
		{"Bearer", map[string][]string{"Authorization": {"Bearer " + testKey}}, 200},
		{"lower-case scheme", map[string][]string{"Authorization": {"bearer " + testKey}}, 200},
		{"upper-case scheme", map[string][]string{"Authorization": {"BEARER " + testKey}}, 200},
		{"two spaces", map[string][]string{"Authorization": {"Bearer  " + testKey}}, 200},
		{"bare key", map[string][]string{"Authorization": {testKey}}, 401},
		{"no space", map[string][]string{"Authorization": {"Bearer" + testKey}}, 401},
		{"Basic", map[string][]string{"Authorization": {"Basic " + testKey}}, 401},
		{"Token", map[string][]string{"Authorization": {"Token " + testKey}}, 401},
		{"scheme only", map[string][]string{"Authorization": {"Bearer"}}, 401},
		{"empty", map[string][]string{"Authorization": {""}}, 401},
		{"key prefix", map[string][]string{"Authorization": {"Bearer " + testKey[:len(testKey)-1]}}, 401},
		{"key and more", map[string][]string{"Authorization": {"Bearer " + testKey + "x"}}, 401},
		{"key then word", map[string][]string{"Authorization": {"Bearer " + testKey + " x"}}, 401},
		{"two headers", map[string][]string{"Authorization": {"Bearer " + testKey, "Bearer " + testKey}}, 401},
		{"x-api-key (not read)", map[string][]string{"X-Api-Key": {testKey}}, 401},
		{"none", nil, 401},
	} {
		req, _ := http.NewRequest("GET", f.ts.URL+"/v1/models", nil)
		for k, vs := range c.header {
			req.Header[k] = vs
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
}

// TestSDKModelGet: the SDK's Models.Get finds a served model and gets a
// typed 404 for another.
func TestSDKModelGet(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	m, err := f.client.Models.Get(context.Background(), f.model)
	if err != nil || m.ID != f.model || m.Object != "model" || m.OwnedBy != "loom" || m.Created == 0 {
		t.Fatalf("Models.Get(%q): %+v %v", f.model, m, err)
	}
	_, err = f.client.Models.Get(context.Background(), "gpt-4o")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "model_not_found" || apiErr.Type != "invalid_request_error" {
		t.Errorf("Models.Get of an unknown model: %v", err)
	}
	resp, _ := post(t, f.ts.URL+"/v1/models/"+f.model, "", "") // POST: no such route
	if resp.StatusCode != 404 && resp.StatusCode != 405 {
		t.Errorf("POST /v1/models/{id}: %d", resp.StatusCode)
	}
}

// TestGrammarDeadEnd: a grammar that no token of the vocabulary can begin
// is refused with 400 before anything streams, naming the field; one that
// runs into such a state later is a 400 too. TinyStories' vocabulary
// cannot spell "{" (so no JSON object) nor control characters.
func TestGrammarDeadEnd(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	chat := f.ts.URL + "/v1/chat/completions"
	msgs := `"messages":[{"role":"user","content":"hi"}],"max_tokens":8`
	for _, c := range []struct{ name, body, param string }{
		{"grammar", `{` + msgs + `,"grammar":"root ::= [\\x01]"}`, "grammar"},
		{"grammar streamed", `{` + msgs + `,"stream":true,"grammar":"root ::= [\\x01]"}`, "grammar"},
		{"json_object", `{` + msgs + `,"response_format":{"type":"json_object"}}`, "response_format"},
		{"json_schema streamed", `{` + msgs + `,"stream":true,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}}}`, "response_format"},
		{"llama.cpp json_schema", `{` + msgs + `,"json_schema":{"type":"object"}}`, "json_schema"},
		{"later", `{` + msgs + `,"grammar":"root ::= \"Once\" [\\x01]"}`, "grammar"},
	} {
		resp, body := post(t, chat, testKey, c.body)
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != 400 || e == nil || e["type"] != "invalid_request_error" || e["param"] != c.param {
			t.Errorf("%s: status %d %v, want 400 invalid_request_error on %s", c.name, resp.StatusCode, body, c.param)
		}
	}
	settled(t, f.srv)
	healthy(t, f.ts)
}

// TestErrorParams: each error names the field at fault, as it is called
// on the endpoint.
func TestErrorParams(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	chat, comp := f.ts.URL+"/v1/chat/completions", f.ts.URL+"/v1/completions"
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	tools := make([]string, 129)
	for i := range tools {
		tools[i] = fmt.Sprintf(`{"type":"function","function":{"name":"f%d"}}`, i)
	}
	for _, c := range []struct {
		name, url, body, param string
		status                 int
	}{
		{"chat over the context", chat, `{` + msgs + `,"max_tokens":100000}`, "messages", 400},
		{"completion over the context", comp, `{"prompt":"hi","max_tokens":100000}`, "prompt", 400},
		{"long completion prompt", comp, `{"prompt":"` + strings.Repeat("word ", 600) + `"}`, "prompt", 400},
		{"max_tokens", comp, `{"prompt":"hi","max_tokens":0}`, "max_tokens", 400},
		{"max_completion_tokens", chat, `{` + msgs + `,"max_completion_tokens":0}`, "max_completion_tokens", 400},
		{"stop too long", chat, `{` + msgs + `,"stop":"` + strings.Repeat("x", 100000) + `"}`, "stop", 400},
		{"a stop too long", comp, `{"prompt":"hi","stop":["a","` + strings.Repeat("x", 100000) + `"]}`, "stop", 400},
		{"too many tools", chat, `{` + msgs + `,"tools":[` + strings.Join(tools, ",") + `]}`, "tools", 400},
		{"deeply nested prompt", comp, `{"prompt":` + strings.Repeat("[", 9000) + "1" + strings.Repeat("]", 9000) + `}`, "prompt", 400},
		{"two grammars", chat, `{` + msgs + `,"grammar":"root ::= \"a\"","json_schema":{"type":"string"}}`, "grammar", 400},
	} {
		resp, body := post(t, c.url, testKey, c.body)
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != c.status || e == nil || e["param"] != c.param {
			t.Errorf("%s: status %d %v, want %d naming %s", c.name, resp.StatusCode, body, c.status, c.param)
		}
	}
}

// TestHeaderLimit: headers past MaxHeaderBytes are refused with 431.
func TestHeaderLimit(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	req, _ := http.NewRequest("GET", f.ts.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("X-Padding", strings.Repeat("x", server.DefaultMaxHeaderBytes+8192))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("%d KiB of headers: status %d, want 431", (server.DefaultMaxHeaderBytes+8192)>>10, resp.StatusCode)
	}
	healthy(t, f.ts)
}

// TestGrammarBombs: grammars whose expansion explodes (nested bounded
// repetitions, in a schema pattern or in GBNF) are refused with 400 and
// the server keeps answering. Run in a child process, so a crash (a
// stack overflow is fatal in Go) fails this test instead of the binary.
func TestGrammarBombs(t *testing.T) {
	if os.Getenv("LOOM_GRAMMAR_BOMB_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGrammarBombs$", "-test.v")
		cmd.Env = append(os.Environ(), "LOOM_GRAMMAR_BOMB_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			if len(out) > 3000 {
				out = out[:3000]
			}
			t.Fatalf("the server failed or died on a grammar bomb: %v\n%s", err, out)
		}
		for l := range strings.SplitSeq(string(out), "\n") {
			if strings.Contains(l, ": 400 after ") {
				t.Log(strings.TrimSpace(l))
			}
		}
		return
	}
	f := start(t, server.Config{}, engine.Options{})
	chat := f.ts.URL + "/v1/chat/completions"
	msgs := `"messages":[{"role":"user","content":"hi"}],"max_tokens":4`
	for _, c := range []struct{ name, body, param string }{
		{"schema pattern", `{` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"^((((a{0,100}){0,100}){0,100}){0,100})$"}}}}`, "response_format"},
		{"GBNF", `{` + msgs + `,"grammar":"root ::= ((\"a\"{0,1000}){0,1000}){0,1000}"}`, "grammar"},
	} {
		t0 := time.Now()
		resp, body := post(t, chat, testKey, c.body)
		e, _ := body["error"].(map[string]any)
		if resp.StatusCode != 400 || e == nil || e["param"] != c.param {
			t.Errorf("%s: status %d %v after %v, want 400 naming %s", c.name, resp.StatusCode, body, time.Since(t0), c.param)
		} else {
			t.Logf("%s: 400 after %v: %v", c.name, time.Since(t0), e["message"])
		}
		healthy(t, f.ts)
	}
}

// TestLogprobsWithoutTop: log-probabilities without top alternatives
// (chat logprobs: true alone, completions logprobs: 0) are answered; they
// used to crash the scheduler's loop, and the process with it.
func TestLogprobsWithoutTop(t *testing.T) {
	f := start(t, server.Config{}, engine.Options{})
	for _, c := range []struct{ url, body string }{
		{f.ts.URL + "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"logprobs":true}`},
		{f.ts.URL + "/v1/completions", `{"prompt":"Once","max_tokens":3,"logprobs":0}`},
		{f.ts.URL + "/v1/completions", `{"prompt":"Once","max_tokens":3,"logprobs":0,"stream":true}`},
	} {
		resp, _ := post(t, c.url, testKey, c.body)
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", c.body, resp.StatusCode)
		}
	}
	healthy(t, f.ts)
}

// TestKeepAliveAfterWriteTimeout: a kept-alive connection idle longer than
// WriteTimeout still gets the answers net/http writes before any handler
// runs (400 for a malformed request): the per-write deadlines timedWriter
// sets must not outlive their request (net/http clears the connection's
// write deadline after each request; this guards that assumption).
func TestKeepAliveAfterWriteTimeout(t *testing.T) {
	const writeTimeout = 200 * time.Millisecond
	f := start(t, server.Config{WriteTimeout: writeTimeout, IdleTimeout: 10 * time.Second}, engine.Options{})
	c := dial(t, f.ts)
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: loom\r\nAuthorization: Bearer %s\r\n\r\n", testKey)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	time.Sleep(3 * writeTimeout)
	fmt.Fprintf(c, "GET /v1/models HTTP/1.1\r\nHost: loom\r\nBad Header Line\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a malformed request on a connection idle past WriteTimeout: %v (want a 400 answer)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("malformed request: status %d, want 400", resp.StatusCode)
	}
	healthy(t, f.ts)
}
