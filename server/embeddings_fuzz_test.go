package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/server"
)

// FuzzEmbedRequests: any body sent to the embedding and rerank routes
// (OpenAI's, llama.cpp's, TEI's and ollama's shapes) is answered, as a
// result or a 4xx, never a panic or a 5xx: the inputs reach the engine only
// after every limit (count, length, vocabulary, dimensions) is checked.
func FuzzEmbedRequests(f *testing.F) {
	for _, s := range []string{
		`{"model":"bert","input":"hello world"}`,
		`{"model":"bert","input":["a","b c"],"encoding_format":"base64","dimensions":8}`,
		`{"model":"bert","input":[[101,7592,102],[101,102]],"embd_normalize":-1}`,
		`{"model":"bert","input":["x",[101,2]],"truncate":true}`,
		`{"model":"bert-none","content":"per token"}`,
		`{"model":"bert-rerank","query":"q","documents":["a","b",{"text":"c"}],"top_n":2,"return_documents":true}`,
		`{"model":"bert-rerank","query":"q","texts":["a"],"return_text":true}`,
		`{"model":"bert","input":["a"],"truncate":false,"dimensions":-1}`,
		`{"model":"stories","input":"x"}`,
	} {
		f.Add(byte(0), []byte(s))
	}
	srv := server.New(server.Config{})
	defer srv.Close()
	for _, m := range []struct{ name, preset, set string }{
		{"bert", "bert-mini", ""}, {"bert-rerank", "bert-rerank-mini", ""}, {"bert-none", "bert-mini", "bert.pooling_type=0"},
	} {
		var sets []string
		if m.set != "" {
			sets = append(sets, m.set)
		}
		if _, err := srv.Load(m.name, embedModel(f, m.preset, sets...), engine.Options{Threads: 1, CtxLen: 64}, ""); err != nil {
			f.Fatal(err)
		}
	}
	srv.Ready()
	h := srv.HTTPServer().Handler
	routes := []string{"/v1/embeddings", "/embeddings", "/v1/rerank", "/rerank", "/api/embed"}
	f.Fuzz(func(t *testing.T, route byte, body []byte) {
		r := httptest.NewRequest(http.MethodPost, routes[int(route)%len(routes)], bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%s %q: status %d: %s", r.URL.Path, body, w.Code, w.Body.String())
		}
	})
}
