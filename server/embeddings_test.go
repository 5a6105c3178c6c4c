package server_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/server"
)

// embedModel returns the path of testmodels' embedding preset (F16, seed
// 1, with the metadata overrides sets), written into the test cache on
// first use.
func embedModel(t testing.TB, preset string, sets ...string) string {
	t.Helper()
	src := "modelgen -model " + preset + " -type F16 -seed 1"
	for _, s := range sets {
		src += " -set " + s
	}
	return testmodels.EmbedModel(t, src)
}

// embedFixture serves an embedding model ("bert"), two rerankers
// ("bert-rerank", "qwen3-rerank"), an embedding model without pooling
// ("bert-none") and a text-generation model ("stories").
type embedFixture struct {
	*fixture
	engines map[string]*engine.Engine
}

func startEmbed(t *testing.T, cfg server.Config) *embedFixture {
	t.Helper()
	if cfg.APIKey == "" {
		cfg.APIKey = testKey
	}
	srv := server.New(cfg)
	t.Cleanup(srv.Close)
	ef := &embedFixture{engines: map[string]*engine.Engine{}}
	for _, m := range []struct{ name, path string }{
		{"bert", embedModel(t, "bert-mini")},
		{"bert-rerank", embedModel(t, "bert-rerank-mini")},
		{"qwen3-rerank", embedModel(t, "qwen3-rerank-mini")},
		{"bert-none", embedModel(t, "bert-mini", "bert.pooling_type=0")},
		{"stories", filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")},
	} {
		o := engine.Options{Threads: 2}
		if m.name == "stories" {
			o.CtxLen = 256
		}
		mod, err := srv.Load(m.name, m.path, o, "")
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		ef.engines[m.name] = mod.Engine
	}
	srv.Ready()
	ef.fixture = startHTTP(t, srv)
	return ef
}

// texts are n distinct inputs of various lengths.
func texts(n int) []string {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing matches in paris tonight")
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for k := 0; k <= i%13; k++ {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[(i*7+k*3)%len(words)])
		}
		fmt.Fprintf(&b, " %d", i)
		out[i] = b.String()
	}
	return out
}

func sameVector(t *testing.T, what string, got []float64, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if float32(got[i]) != want[i] { // JSON's shortest float32 text read as a float64

			t.Fatalf("%s: value %d is %v, the engine's %v", what, i, got[i], want[i])
		}
	}
}

// TestSDKEmbeddings: the official SDK's embeddings of 1, 16 and 256
// inputs, as floats and base64, are exactly the engine's EmbedTexts of the
// same inputs, in order, with the token counts as usage; token-id inputs
// give the same vectors as their texts; dimensions keeps the first values.
func TestSDKEmbeddings(t *testing.T) {
	f := startEmbed(t, server.Config{})
	e := f.engines["bert"]
	ctx := context.Background()
	for _, n := range []int{1, 16, 256} {
		in := texts(n)
		want, err := e.EmbedTexts(ctx, in, engine.EmbedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tokens := 0
		for _, w := range want {
			tokens += w.Tokens
		}
		for _, format := range []openai.EmbeddingNewParamsEncodingFormat{openai.EmbeddingNewParamsEncodingFormatFloat, openai.EmbeddingNewParamsEncodingFormatBase64} {
			p := openai.EmbeddingNewParams{Model: "bert", EncodingFormat: format}
			if n == 1 {
				p.Input.OfString = openai.String(in[0])
			} else {
				p.Input.OfArrayOfStrings = in
			}
			resp, err := f.client.Embeddings.New(ctx, p)
			if err != nil {
				t.Fatalf("%d inputs, %s: %v", n, format, err)
			}
			if len(resp.Data) != n || resp.Object != "list" || resp.Model != "bert" {
				t.Fatalf("%d inputs, %s: %d data, object %q, model %q", n, format, len(resp.Data), resp.Object, resp.Model)
			}
			for i, d := range resp.Data {
				if d.Index != int64(i) || d.Object != "embedding" {
					t.Fatalf("data[%d]: index %d, object %q", i, d.Index, d.Object)
				}
				if format == openai.EmbeddingNewParamsEncodingFormatBase64 && !strings.HasPrefix(d.JSON.Embedding.Raw(), `"`) {
					t.Fatalf("base64: embedding %.40s… is not a string", d.JSON.Embedding.Raw())
				}
				sameVector(t, fmt.Sprintf("%d inputs, %s, input %d", n, format, i), d.Embedding, want[i].Vector)
			}
			if resp.Usage.PromptTokens != int64(tokens) || resp.Usage.TotalTokens != int64(tokens) {
				t.Errorf("%d inputs: usage %+v, want %d tokens", n, resp.Usage, tokens)
			}
		}
	}
	// Each vector is the one the input gets alone (batching changes
	// nothing beyond rounding), and has unit length.
	in := texts(16)
	batch, _ := e.EmbedTexts(ctx, in, engine.EmbedOptions{})
	for i, s := range in {
		alone, err := e.EmbedTexts(ctx, []string{s}, engine.EmbedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var norm, diff float64
		for k, x := range alone[0].Vector {
			norm += float64(x) * float64(x)
			diff = max(diff, math.Abs(float64(x-batch[i].Vector[k])))
		}
		if math.Abs(norm-1) > 1e-5 || diff > 1e-5 {
			t.Errorf("input %d: |v|² %v, batched vs alone differ by %v", i, norm, diff)
		}
	}
	// Token ids, one list and a list of lists, are the texts' tokens.
	var ids [][]int64
	for _, s := range in[:3] {
		var row []int64
		for _, id := range e.Vocab().Encode(s, true, false) {
			row = append(row, int64(id))
		}
		ids = append(ids, row)
	}
	resp, err := f.client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "bert", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokenArrays: ids}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range ids {
		sameVector(t, fmt.Sprintf("token input %d", i), resp.Data[i].Embedding, batch[i].Vector)
	}
	resp, err = f.client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "bert", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfTokens: ids[1]}})
	if err != nil {
		t.Fatal(err)
	}
	sameVector(t, "one token input", resp.Data[0].Embedding, batch[1].Vector)
	// dimensions: Matryoshka truncation, then normalization.
	want, _ := e.EmbedTexts(ctx, in[:2], engine.EmbedOptions{Dimensions: 64})
	resp, err = f.client.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "bert", Dimensions: openai.Int(64),
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: in[:2]}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		sameVector(t, "dimensions 64", resp.Data[i].Embedding, want[i].Vector)
	}
	// llama.cpp's embd_normalize: -1 is the raw vector.
	want, _ = e.EmbedTexts(ctx, in[:1], engine.EmbedOptions{Norm: engine.NormNone})
	var raw struct {
		Data []struct {
			Embedding []float64 `json:"embedding"`
		} `json:"data"`
	}
	status, body := postBytes(t, f.ts.URL+"/v1/embeddings", fmt.Sprintf(`{"model":"bert","input":%q,"embd_normalize":-1}`, in[0]))
	if status != 200 || json.Unmarshal(body, &raw) != nil || len(raw.Data) != 1 {
		t.Fatalf("embd_normalize -1: %d %s", status, body)
	}
	sameVector(t, "embd_normalize -1", raw.Data[0].Embedding, want[0].Vector)
}

// TestEmbeddingsBase64Wire: base64 is the little-endian float32 bytes of
// the float answer.
func TestEmbeddingsBase64Wire(t *testing.T) {
	f := startEmbed(t, server.Config{})
	var fl, b64 struct {
		Data []struct {
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	s1, b1 := postBytes(t, f.ts.URL+"/v1/embeddings", `{"model":"bert","input":"hello world"}`)
	s2, b2 := postBytes(t, f.ts.URL+"/v1/embeddings", `{"model":"bert","input":"hello world","encoding_format":"base64"}`)
	if s1 != 200 || s2 != 200 || json.Unmarshal(b1, &fl) != nil || json.Unmarshal(b2, &b64) != nil {
		t.Fatalf("%d %s\n%d %s", s1, b1, s2, b2)
	}
	var floats []float32
	var str string
	json.Unmarshal(fl.Data[0].Embedding, &floats)
	json.Unmarshal(b64.Data[0].Embedding, &str)
	bs, err := base64.StdEncoding.DecodeString(str)
	if err != nil || len(bs) != 4*len(floats) || len(floats) != 256 {
		t.Fatalf("base64 %q: %v (%d bytes for %d floats)", str, err, len(bs), len(floats))
	}
	for i, x := range floats {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(bs[4*i:])); got != x {
			t.Fatalf("value %d: base64 %v, float %v", i, got, x)
		}
	}
}

func postBytes(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestEmbeddingErrors: bad requests are 4xx with a message saying what is
// wrong (and, for the model's kind, naming the model).
func TestEmbeddingErrors(t *testing.T) {
	f := startEmbed(t, server.Config{})
	long := strings.Repeat("word ", 600) // 602 tokens with [CLS] and [SEP]: over BERT's 512
	many := make([]string, 2049)
	for i := range many {
		many[i] = "x"
	}
	manyJSON, _ := json.Marshal(many)
	docs := make([]string, 1001)
	for i := range docs {
		docs[i] = "d"
	}
	docsJSON, _ := json.Marshal(docs)
	for _, c := range []struct {
		name, path, body string
		status           int
		want             string // in the message
		code             string
	}{
		{"empty list", "/v1/embeddings", `{"model":"bert","input":[]}`, 400, "empty list", ""},
		{"empty string", "/v1/embeddings", `{"model":"bert","input":""}`, 400, "empty string", ""},
		{"empty string in list", "/v1/embeddings", `{"model":"bert","input":["a",""]}`, 400, "input[1] is an empty string", ""},
		{"no input", "/v1/embeddings", `{"model":"bert"}`, 400, "input is required", ""},
		{"input number", "/v1/embeddings", `{"model":"bert","input":3}`, 400, "must be a string", ""},
		{"bad list item", "/v1/embeddings", `{"model":"bert","input":["a",{"x":1}]}`, 400, "input[1] must be a string or a list of token ids", ""},
		{"token outside vocab", "/v1/embeddings", `{"model":"bert","input":[[101, 99999999]]}`, 400, "outside the vocabulary", ""},
		{"empty token list", "/v1/embeddings", `{"model":"bert","input":[[101],[]]}`, 400, "input[1] is an empty list of tokens", ""},
		{"too long", "/v1/embeddings", fmt.Sprintf(`{"model":"bert","input":["a",%q]}`, long), 400, "input[1] has 602 tokens, more than model \"bert\"'s context of 512", "context_length_exceeded"},
		{"too many inputs", "/v1/embeddings", fmt.Sprintf(`{"model":"bert","input":%s}`, manyJSON), 400, "2049 inputs; at most 2048", "too_many_inputs"},
		{"dimensions too large", "/v1/embeddings", `{"model":"bert","input":"a","dimensions":257}`, 400, "dimensions must be between 1 and 256", ""},
		{"dimensions zero", "/v1/embeddings", `{"model":"bert","input":"a","dimensions":0}`, 400, "dimensions must be between 1 and 256", ""},
		{"encoding format", "/v1/embeddings", `{"model":"bert","input":"a","encoding_format":"int8"}`, 400, "encoding_format must be", ""},
		{"embd_normalize", "/v1/embeddings", `{"model":"bert","input":"a","embd_normalize":3}`, 400, "embd_normalize must be", ""},
		{"generation model", "/v1/embeddings", `{"model":"stories","input":"a"}`, 400, "model \"stories\" is a text-generation model", "model_not_supported"},
		{"reranker embedded", "/v1/embeddings", `{"model":"bert-rerank","input":"a"}`, 400, "model \"bert-rerank\" is a reranking model", "model_not_supported"},
		{"pooling none", "/v1/embeddings", `{"model":"bert-none","input":"a"}`, 400, "pooling type 'none'", "model_not_supported"},
		{"no model", "/v1/embeddings", `{"input":"a"}`, 400, "model is required", ""},
		{"unknown model", "/v1/embeddings", `{"model":"nope","input":"a"}`, 404, "not found", "model_not_found"},
		{"chat to embedding model", "/v1/chat/completions", `{"model":"bert","messages":[{"role":"user","content":"hi"}]}`, 400, "model \"bert\" is an embedding model", "model_not_supported"},
		{"completion to embedding model", "/v1/completions", `{"model":"bert","prompt":"hi"}`, 400, "model \"bert\" is an embedding model", "model_not_supported"},
		{"completion to reranker", "/v1/completions", `{"model":"qwen3-rerank","prompt":"hi"}`, 400, "model \"qwen3-rerank\" is a reranking model", "model_not_supported"},
		{"rerank by generation model", "/v1/rerank", `{"model":"stories","query":"q","documents":["a"]}`, 400, "model \"stories\" is a text-generation model", "model_not_supported"},
		{"rerank by embedding model", "/v1/rerank", `{"model":"bert","query":"q","documents":["a"]}`, 400, "model \"bert\" is an embedding model without a ranking head", "model_not_supported"},
		{"rerank no documents", "/v1/rerank", `{"model":"bert-rerank","query":"q","documents":[]}`, 400, "documents must be a non-empty list", ""},
		{"rerank missing documents", "/v1/rerank", `{"model":"bert-rerank","query":"q"}`, 400, "documents must be a non-empty list", ""},
		{"rerank documents string", "/v1/rerank", `{"model":"bert-rerank","query":"q","documents":"abc"}`, 400, "documents must be a non-empty list of strings", ""},
		{"rerank no query", "/v1/rerank", `{"model":"bert-rerank","documents":["a"]}`, 400, "query is required", ""},
		{"rerank query not a string", "/v1/rerank", `{"model":"bert-rerank","query":3,"documents":["a"]}`, 400, "query", ""},
		{"rerank document number", "/v1/rerank", `{"model":"bert-rerank","query":"q","documents":["a",3]}`, 400, "documents[1] must be a string", ""},
		{"rerank top_n 0", "/v1/rerank", `{"model":"bert-rerank","query":"q","documents":["a"],"top_n":0}`, 400, "top_n must be at least 1", ""},
		{"rerank both lists", "/v1/rerank", `{"model":"bert-rerank","query":"q","documents":["a"],"texts":["b"]}`, 400, "not both", ""},
		{"rerank too many", "/v1/rerank", fmt.Sprintf(`{"model":"bert-rerank","query":"q","documents":%s}`, docsJSON), 400, "1001 documents; at most 1000", "too_many_inputs"},
		{"rerank too long", "/rerank", fmt.Sprintf(`{"model":"bert-rerank","query":"q","documents":["a",%q]}`, long), 400, "documents[1] with the query takes", "context_length_exceeded"},
		{"ollama token input", "/api/embed", `{"model":"bert","input":[101,102]}`, 400, "a string or a list of strings", ""},
		{"ollama generation model", "/api/embed", `{"model":"stories","input":"a"}`, 400, "model \"stories\" is a text-generation model", ""},
		{"ollama no truncate", "/api/embed", fmt.Sprintf(`{"model":"bert","input":%q,"truncate":false}`, long), 400, "more than model \"bert\"'s context", ""},
	} {
		status, body := postBytes(t, f.ts.URL+c.path, c.body)
		var out struct {
			Error json.RawMessage `json:"error"`
		}
		json.Unmarshal(body, &out)
		var msg, code string
		if strings.HasPrefix(c.path, "/api/") { // ollama's {"error": "message"}
			json.Unmarshal(out.Error, &msg)
		} else {
			var e struct{ Message, Code string }
			json.Unmarshal(out.Error, &e)
			msg, code = e.Message, e.Code
		}
		if status != c.status || !strings.Contains(msg, c.want) || code != c.code {
			t.Errorf("%s: %d %s, want %d with %q (code %q)", c.name, status, body, c.status, c.want, c.code)
		}
	}
	// The SDK sees the same errors as *openai.Error.
	_, err := f.client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "stories", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("a")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "text-generation model") {
		t.Errorf("SDK: %v", err)
	}
	// truncate: the long input is cut to the context.
	status, body := postBytes(t, f.ts.URL+"/v1/embeddings", fmt.Sprintf(`{"model":"bert","input":%q,"truncate":true}`, long))
	var resp struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if status != 200 || json.Unmarshal(body, &resp) != nil || resp.Usage.PromptTokens != 512 {
		t.Errorf("truncate: %d %.200s", status, body)
	}
	status, body = postBytes(t, f.ts.URL+"/v1/rerank", fmt.Sprintf(`{"model":"bert-rerank","query":"q","documents":[%q],"truncate":true}`, long))
	var rr struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if status != 200 || json.Unmarshal(body, &rr) != nil || rr.Usage.PromptTokens != 512 {
		t.Errorf("rerank truncate: %d %.200s", status, body)
	}
}

// TestBodyLimitEmbeddings: the server's body limit holds for embeddings
// (413 before anything is tokenized).
func TestBodyLimitEmbeddings(t *testing.T) {
	f := startEmbed(t, server.Config{MaxBodyBytes: 1 << 12})
	status, body := postBytes(t, f.ts.URL+"/v1/embeddings", fmt.Sprintf(`{"model":"bert","input":%q}`, strings.Repeat("a ", 4096)))
	if status != 413 || !strings.Contains(string(body), "exceeds 4096 bytes") {
		t.Errorf("%d %s", status, body)
	}
}

type rerankResp struct {
	Model  string `json:"model"`
	Object string `json:"object"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
	Results []struct {
		Index          int      `json:"index"`
		RelevanceScore *float32 `json:"relevance_score"`
		Document       *struct {
			Text string `json:"text"`
		} `json:"document"`
	} `json:"results"`
}

// TestRerank: 100 documents come back ordered by score, each with its own
// index and the engine's score for it; top_n keeps the first; documents
// are returned when asked; /rerank, llama.cpp's aliases and TEI's shape
// ("texts", a bare list with "score") answer the same.
func TestRerank(t *testing.T) {
	f := startEmbed(t, server.Config{})
	ctx := context.Background()
	docs := texts(100)
	docsJSON, _ := json.Marshal(docs)
	const query = "a fox in paris"
	for _, name := range []string{"bert-rerank", "qwen3-rerank"} {
		want, err := f.engines[name].Rerank(ctx, query, docs, engine.RerankOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tokens := 0
		for _, w := range want {
			tokens += w.Tokens
		}
		for _, path := range []string{"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"} {
			status, body := postBytes(t, f.ts.URL+path, fmt.Sprintf(`{"model":%q,"query":%q,"documents":%s}`, name, query, docsJSON))
			var r rerankResp
			if status != 200 || json.Unmarshal(body, &r) != nil {
				t.Fatalf("%s %s: %d %.300s", name, path, status, body)
			}
			if r.Model != name || r.Object != "list" || len(r.Results) != 100 || r.Usage.PromptTokens != tokens || r.Usage.TotalTokens != tokens {
				t.Fatalf("%s %s: model %q object %q, %d results, usage %+v (want %d tokens)", name, path, r.Model, r.Object, len(r.Results), r.Usage, tokens)
			}
			seen := map[int]bool{}
			for i, x := range r.Results {
				if x.RelevanceScore == nil || *x.RelevanceScore != want[x.Index].Score || seen[x.Index] || x.Document != nil {
					t.Fatalf("%s: result %d: %+v (engine: %v)", name, i, x, want[x.Index])
				}
				seen[x.Index] = true
				if i > 0 && *x.RelevanceScore > *r.Results[i-1].RelevanceScore {
					t.Fatalf("%s: result %d scores %v above result %d's %v", name, i, *x.RelevanceScore, i-1, *r.Results[i-1].RelevanceScore)
				}
			}
		}
		// top_n and return_documents; documents as Jina's objects.
		objs := make([]map[string]string, len(docs))
		for i, d := range docs {
			objs[i] = map[string]string{"text": d}
		}
		objsJSON, _ := json.Marshal(objs)
		status, body := postBytes(t, f.ts.URL+"/v1/rerank", fmt.Sprintf(`{"model":%q,"query":%q,"documents":%s,"top_n":5,"return_documents":true}`, name, query, objsJSON))
		var r rerankResp
		if status != 200 || json.Unmarshal(body, &r) != nil || len(r.Results) != 5 {
			t.Fatalf("top_n 5: %d %.300s", status, body)
		}
		best := slices.Clone(want)
		slices.SortStableFunc(best, func(a, b engine.Ranked) int {
			switch {
			case a.Score > b.Score:
				return -1
			case a.Score < b.Score:
				return 1
			}
			return 0
		})
		for i, x := range r.Results {
			if x.Index != best[i].Index || x.Document == nil || x.Document.Text != docs[x.Index] {
				t.Errorf("top_n 5: result %d is %+v, want document %d", i, x, best[i].Index)
			}
		}
		// TEI: "texts" → a bare list with "score" (and "text" with return_text).
		status, body = postBytes(t, f.ts.URL+"/rerank", fmt.Sprintf(`{"model":%q,"query":%q,"texts":%s,"return_text":true,"top_n":3}`, name, query, docsJSON))
		var tei []struct {
			Index int     `json:"index"`
			Score float32 `json:"score"`
			Text  string  `json:"text"`
		}
		if status != 200 || json.Unmarshal(body, &tei) != nil || len(tei) != 3 {
			t.Fatalf("TEI: %d %.300s", status, body)
		}
		for i, x := range tei {
			if x.Index != best[i].Index || x.Score != best[i].Score || x.Text != docs[x.Index] {
				t.Errorf("TEI result %d: %+v, want %+v", i, x, best[i])
			}
		}
	}
}

// TestOllamaEmbed: ollama's /api/embed shape; inputs longer than the
// context are cut by default, as ollama does.
func TestOllamaEmbed(t *testing.T) {
	f := startEmbed(t, server.Config{})
	e := f.engines["bert"]
	in := texts(3)
	want, _ := e.EmbedTexts(context.Background(), in, engine.EmbedOptions{})
	inJSON, _ := json.Marshal(in)
	status, body := postBytes(t, f.ts.URL+"/api/embed", fmt.Sprintf(`{"model":"bert","input":%s}`, inJSON))
	var r struct {
		Model           string      `json:"model"`
		Embeddings      [][]float64 `json:"embeddings"`
		TotalDuration   *int64      `json:"total_duration"`
		LoadDuration    *int64      `json:"load_duration"`
		PromptEvalCount int         `json:"prompt_eval_count"`
	}
	if status != 200 || json.Unmarshal(body, &r) != nil {
		t.Fatalf("%d %.300s", status, body)
	}
	tokens := 0
	for i := range want {
		sameVector(t, fmt.Sprintf("ollama input %d", i), r.Embeddings[i], want[i].Vector)
		tokens += want[i].Tokens
	}
	if r.Model != "bert" || len(r.Embeddings) != 3 || r.TotalDuration == nil || *r.TotalDuration <= 0 || r.LoadDuration == nil || r.PromptEvalCount != tokens {
		t.Errorf("response %.300s", body)
	}
	// One string; dimensions; a long input cut (truncate defaults to true).
	status, body = postBytes(t, f.ts.URL+"/api/embed", fmt.Sprintf(`{"model":"bert","input":%q,"dimensions":32}`, strings.Repeat("word ", 600)))
	r.Embeddings = nil
	if status != 200 || json.Unmarshal(body, &r) != nil || len(r.Embeddings) != 1 || len(r.Embeddings[0]) != 32 || r.PromptEvalCount != 512 {
		t.Errorf("long input: %d %.300s", status, body)
	}
}

// TestLlamaEmbeddings: llama.cpp's own /embeddings answers a bare list,
// every token's raw vector for a model without pooling, the pooled vector
// (in a list of one) otherwise; "content" is read as "input".
func TestLlamaEmbeddings(t *testing.T) {
	f := startEmbed(t, server.Config{})
	ctx := context.Background()
	in := texts(2)
	var out []struct {
		Index     int         `json:"index"`
		Embedding [][]float64 `json:"embedding"`
	}
	none := f.engines["bert-none"]
	var ids [][]int32
	for _, s := range in {
		ids = append(ids, none.Vocab().Encode(s, true, false))
	}
	want, err := none.Embed(ctx, ids, engine.EmbedOptions{Norm: engine.NormNone})
	if err != nil {
		t.Fatal(err)
	}
	inJSON, _ := json.Marshal(in)
	status, body := postBytes(t, f.ts.URL+"/embeddings", fmt.Sprintf(`{"model":"bert-none","input":%s}`, inJSON))
	if status != 200 || json.Unmarshal(body, &out) != nil || len(out) != 2 {
		t.Fatalf("%d %.300s", status, body)
	}
	for i, o := range out {
		if o.Index != i || len(o.Embedding) != len(ids[i]) || len(want[i].PerToken) != len(ids[i]) {
			t.Fatalf("input %d: index %d, %d vectors for %d tokens", i, o.Index, len(o.Embedding), len(ids[i]))
		}
		for k, v := range o.Embedding {
			sameVector(t, fmt.Sprintf("input %d token %d", i, k), v, want[i].PerToken[k])
		}
	}
	wantPooled, _ := f.engines["bert"].EmbedTexts(ctx, in[:1], engine.EmbedOptions{})
	status, body = postBytes(t, f.ts.URL+"/embedding", fmt.Sprintf(`{"model":"bert","content":%q}`, in[0]))
	out = nil
	if status != 200 || json.Unmarshal(body, &out) != nil || len(out) != 1 || len(out[0].Embedding) != 1 {
		t.Fatalf("content: %d %.300s", status, body)
	}
	sameVector(t, "pooled", out[0].Embedding[0], wantPooled[0].Vector)
	if status, body = postBytes(t, f.ts.URL+"/embeddings", `{"model":"bert"}`); status != 400 || !strings.Contains(string(body), `\"input\" or \"content\" must be provided`) {
		t.Errorf("no input: %d %s", status, body)
	}
}

// TestModelsKinds: /v1/models lists every model with what it does.
func TestModelsKinds(t *testing.T) {
	f := startEmbed(t, server.Config{})
	page, err := f.client.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, m := range page.Data {
		var extra struct {
			Capabilities []string `json:"capabilities"`
			Pooling      string   `json:"pooling"`
			Dimensions   int      `json:"dimensions"`
		}
		json.Unmarshal([]byte(m.RawJSON()), &extra)
		got[m.ID] = fmt.Sprintf("%v %s %d", extra.Capabilities, extra.Pooling, extra.Dimensions)
	}
	want := map[string]string{
		"bert":         "[embedding] mean 256",
		"bert-none":    "[embedding] none 256",
		"bert-rerank":  "[rerank] rank 1",
		"qwen3-rerank": "[rerank] rank 2",
		"stories":      "[completion chat]  0",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %q, want %q", id, got[id], w)
		}
	}
}

// TestEmbedMetrics: embedding and rerank requests are counted, with their
// inputs and tokens, per model.
func TestEmbedMetrics(t *testing.T) {
	f := startEmbed(t, server.Config{})
	postBytes(t, f.ts.URL+"/v1/embeddings", `{"model":"bert","input":["a b","c"]}`)
	postBytes(t, f.ts.URL+"/v1/rerank", `{"model":"bert-rerank","query":"q","documents":["a","b","c"]}`)
	resp, err := http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`loom_embedding_requests_total{endpoint="embeddings",model_name="bert"} 1`,
		`loom_embedding_inputs_total{endpoint="embeddings",model_name="bert"} 2`,
		`loom_embedding_tokens_total{endpoint="embeddings",model_name="bert"} 7`,
		`loom_embedding_requests_total{endpoint="rerank",model_name="bert-rerank"} 1`,
		`loom_embedding_inputs_total{endpoint="rerank",model_name="bert-rerank"} 3`,
		`loom_e2e_request_latency_seconds_count{model_name="bert"} 1`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
