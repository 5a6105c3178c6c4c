package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/loom-inference/loom/engine"
)

// Embeddings and reranking: OpenAI's POST /v1/embeddings, llama.cpp's own
// POST /embeddings (which serves models without pooling), llama.cpp's (and
// Jina's, Cohere's, TEI's) POST /v1/rerank and /rerank, and ollama's POST
// /api/embed. Every input is one request to the model's scheduler
// (engine.Embed, engine.Rerank): they run together, with whatever else
// the model runs.

// Limits of embedding and rerank requests (beyond them: 400).
const (
	maxEmbedInputs     = 2048 // inputs of one embeddings request (OpenAI's limit)
	maxRerankDocuments = 1000 // documents of one rerank request (Cohere's limit)
)

// modelKind is what a model does: "generate", "embed" or "rerank".
func modelKind(e *engine.Engine) string {
	switch e.Pooling() {
	case "":
		return "generate"
	case engine.PoolingRank:
		return "rerank"
	}
	return "embed"
}

// capabilities is what /v1/models says a model does (ollama's names, and
// "rerank").
func capabilities(e *engine.Engine) []string {
	switch modelKind(e) {
	case "embed":
		return []string{"embedding"}
	case "rerank":
		return []string{"rerank"}
	}
	return []string{"completion", "chat"}
}

// generative refuses a generation request (chat, completions) to an
// embedding or reranking model.
func generative(m *Model) *apiError {
	switch modelKind(m.Engine) {
	case "embed":
		return withCode(badRequest("model", "model %q is an embedding model (pooling %s): it does not generate text; use /v1/embeddings", m.Name, m.Engine.Pooling()), "model_not_supported")
	case "rerank":
		return withCode(badRequest("model", "model %q is a reranking model: it does not generate text; use /v1/rerank", m.Name), "model_not_supported")
	}
	return nil
}

// embeddable refuses an embeddings request to a model that does not
// embed; oai is the OpenAI route, which cannot return one vector per
// token (pooling none), as llama.cpp's.
func embeddable(m *Model, oai bool) *apiError {
	switch k := modelKind(m.Engine); {
	case k == "generate":
		return withCode(badRequest("model", "model %q is a text-generation model, not an embedding model: it cannot compute embeddings", m.Name), "model_not_supported")
	case k == "rerank":
		return withCode(badRequest("model", "model %q is a reranking model (pooling rank): its outputs are relevance scores; use /v1/rerank", m.Name), "model_not_supported")
	case oai && m.Engine.Pooling() == engine.PoolingNone:
		return withCode(badRequest("model", "model %q has pooling type 'none' (one vector per token), which is not OAI compatible: load it with a pooling type", m.Name), "model_not_supported")
	}
	return nil
}

// embedInput is one input: its token ids (as the engine evaluates them).
type embedInput []int32

// parseEmbedInput reads OpenAI's input: a string, a list of strings, a
// list of token ids, or a list of lists of token ids (a list may mix
// strings and token lists, as llama.cpp's does). Texts are tokenized as
// engine.EmbedTexts does (BOS/CLS and EOS/SEP added as the vocabulary
// says, special-token text read as those tokens, as llama.cpp's server does).
func parseEmbedInput(e *engine.Engine, raw json.RawMessage, param string) ([]embedInput, *apiError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest(param, "%s is required: a string, a list of strings, a list of token ids or a list of lists of token ids", param)
	}
	nv := e.Vocab().Len()
	text := func(s string, where string) (embedInput, *apiError) {
		if s == "" {
			return nil, badRequest(param, "%s is an empty string", where)
		}
		return e.EmbedTokens(s), nil
	}
	tokens := func(ids []int32, where string) (embedInput, *apiError) {
		if len(ids) == 0 {
			return nil, badRequest(param, "%s is an empty list of tokens", where)
		}
		for i, id := range ids {
			if id < 0 || int(id) >= nv {
				return nil, badRequest(param, "%s[%d] = %d is outside the vocabulary (%d tokens)", where, i, id, nv)
			}
		}
		return ids, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		in, err := text(s, param)
		if err != nil {
			return nil, err
		}
		return []embedInput{in}, nil
	}
	if raw[0] != '[' {
		return nil, badRequest(param, "%s must be a string, a list of strings, a list of token ids or a list of lists of token ids", param)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest(param, "%s: %v", param, err)
	}
	if len(list) == 0 {
		return nil, badRequest(param, "%s is an empty list: give at least one input", param)
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil { // one input as token ids
		in, err := tokens(ids, param)
		if err != nil {
			return nil, err
		}
		return []embedInput{in}, nil
	}
	if len(list) > maxEmbedInputs {
		return nil, withCode(badRequest(param, "%s has %d inputs; at most %d per request", param, len(list), maxEmbedInputs), "too_many_inputs")
	}
	out := make([]embedInput, len(list))
	for i, r := range list {
		where := fmt.Sprintf("%s[%d]", param, i)
		var err *apiError
		var s string
		var ids []int32
		switch {
		case json.Unmarshal(r, &s) == nil:
			out[i], err = text(s, where)
		case json.Unmarshal(r, &ids) == nil:
			out[i], err = tokens(ids, where)
		default:
			err = badRequest(param, "%s must be a string or a list of token ids", where)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fitInputs refuses an input longer than the model's context unless
// truncate (the engine then cuts it).
func fitInputs(m *Model, inputs []embedInput, truncate bool, param string) *apiError {
	ctxLen := m.Engine.CtxLen()
	if truncate {
		return nil
	}
	for i, in := range inputs {
		if len(in) > ctxLen {
			where := param
			if len(inputs) > 1 {
				where = fmt.Sprintf("%s[%d]", param, i)
			}
			return withCode(badRequest(param, "%s has %d tokens, more than model %q's context of %d; shorten it or set \"truncate\": true to cut it", where, len(in), m.Name, ctxLen), "context_length_exceeded")
		}
	}
	return nil
}

// engineError maps an error of Embed or Rerank: the engine closing is
// 503, a full queue 429, a cancelled request (the client left, or the
// server is closing) 503; anything else is the request's fault (400), as
// the engine's errors before evaluation are (an input too long, an empty
// one, dimensions too large).
func (s *Server) engineError(w http.ResponseWriter, err error, param string) *apiError {
	switch {
	case errors.Is(err, engine.ErrClosed), s.stop.Err() != nil:
		return &apiError{status: 503, Msg: "the server is shutting down", Type: "server_error"}
	case errors.Is(err, engine.ErrOverloaded):
		w.Header().Set("Retry-After", strconv.Itoa(int(s.cfg.RetryAfter.Seconds()+0.5)))
		return withCode(&apiError{status: 429, Msg: "the server is overloaded: too many requests waiting; retry later", Type: "rate_limit_error"}, "overloaded")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: 503, Msg: "the request was cancelled", Type: "server_error"}
	case errors.Is(err, engine.ErrNotEmbedding), errors.Is(err, engine.ErrNotReranker):
		return withCode(badRequest("model", "%v", err), "model_not_supported")
	}
	return badRequest(param, "%v", err)
}

// requestContext is cancelled when the client goes away or the server
// closes.
func (s *Server) requestContext(r *http.Request) (context.Context, func()) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.stop, cancel)
	return ctx, func() { stop(); cancel() }
}

// ---------------------------------------------------------------------------
// POST /v1/embeddings

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"` // "float" (default) or "base64"
	Dimensions     *int            `json:"dimensions"`
	User           string          `json:"user"`
	Truncate       bool            `json:"truncate"`       // Loom's: cut inputs longer than the context
	EmbdNormalize  *int            `json:"embd_normalize"` // llama.cpp's: -1 none, 0 max-abs (int16), 1 taxicab, 2 Euclidean (default)
}

func (r *embeddingRequest) modelName() string { return r.Model }

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string of little-endian float32s
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embedUsage      `json:"usage"`
}

type embedUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// normFromLlama is llama.cpp's --embd-normalize / embd_normalize number as
// a Norm (its p-norms above 2 are not supported).
func normFromLlama(n int) (engine.Norm, bool) {
	switch n {
	case -1:
		return engine.NormNone, true
	case 0:
		return engine.NormMaxAbs, true
	case 1:
		return engine.NormTaxicab, true
	case 2:
		return engine.NormL2, true
	}
	return 0, false
}

// dimensionsOption checks a request's dimensions against the model's
// width.
func dimensionsOption(m *Model, d *int) (int, *apiError) {
	if d == nil {
		return 0, nil
	}
	width := m.Engine.EmbedDim()
	if *d < 1 || *d > width {
		return 0, badRequest("dimensions", "dimensions must be between 1 and %d (model %q's embeddings have %d), got %d", width, m.Name, width, *d)
	}
	return *d, nil
}

func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req embeddingRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	if err := embeddable(m, true); err != nil {
		writeError(w, err)
		return
	}
	b64 := false
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		b64 = true
	default:
		writeError(w, badRequest("encoding_format", "encoding_format must be \"float\" or \"base64\", got %q", req.EncodingFormat))
		return
	}
	opts := engine.EmbedOptions{Truncate: req.Truncate}
	var aerr *apiError
	if opts.Dimensions, aerr = dimensionsOption(m, req.Dimensions); aerr != nil {
		writeError(w, aerr)
		return
	}
	if req.EmbdNormalize != nil {
		n, ok := normFromLlama(*req.EmbdNormalize)
		if !ok {
			writeError(w, badRequest("embd_normalize", "embd_normalize must be -1 (none), 0 (max absolute, int16), 1 (taxicab) or 2 (Euclidean), got %d", *req.EmbdNormalize))
			return
		}
		opts.Norm = n
	}
	inputs, aerr := parseEmbedInput(m.Engine, req.Input, "input")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if aerr := fitInputs(m, inputs, req.Truncate, "input"); aerr != nil {
		writeError(w, aerr)
		return
	}
	embs, err := s.embed(r, m, inputs, opts)
	if err != nil {
		writeError(w, s.engineError(w, err, "input"))
		return
	}
	resp := embeddingResponse{Object: "list", Data: make([]embeddingData, len(embs)), Model: m.Name}
	for i, e := range embs {
		var v any = e.Vector
		if b64 {
			v = floatsBase64(e.Vector)
		}
		resp.Data[i] = embeddingData{Object: "embedding", Index: i, Embedding: v}
		resp.Usage.PromptTokens += e.Tokens
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	s.metrics.observeEmbed(m.Name, "embeddings", len(embs), resp.Usage.PromptTokens, start)
	writeJSON(w, 200, resp)
}

// llamaEmbedRequest is llama.cpp's own /embeddings request: "input" or
// "content", embd_normalize; its answer is a bare list.
type llamaEmbedRequest struct {
	Model         string          `json:"model"`
	Input         json.RawMessage `json:"input"`
	Content       json.RawMessage `json:"content"`
	EmbdNormalize *int            `json:"embd_normalize"`
	Truncate      bool            `json:"truncate"`
}

func (r *llamaEmbedRequest) modelName() string { return r.Model }

// llamaEmbedding is one input's answer: every token's vector with pooling
// none (as the model computes them, not normalized, as llama.cpp's
// server), else the pooled vector alone.
type llamaEmbedding struct {
	Index     int         `json:"index"`
	Embedding [][]float32 `json:"embedding"`
}

// llamaEmbeddings is llama.cpp's POST /embeddings (and /embedding): the
// route that serves a model without pooling.
func (s *Server) llamaEmbeddings(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req llamaEmbedRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	if err := embeddable(m, false); err != nil {
		writeError(w, err)
		return
	}
	raw, param := req.Input, "input"
	if len(bytes.TrimSpace(raw)) == 0 {
		raw, param = req.Content, "content"
	}
	opts := engine.EmbedOptions{Truncate: req.Truncate}
	if req.EmbdNormalize != nil {
		n, ok := normFromLlama(*req.EmbdNormalize)
		if !ok {
			writeError(w, badRequest("embd_normalize", "embd_normalize must be -1 (none), 0 (max absolute, int16), 1 (taxicab) or 2 (Euclidean), got %d", *req.EmbdNormalize))
			return
		}
		opts.Norm = n
	}
	if m.Engine.Pooling() == engine.PoolingNone {
		opts.Norm = engine.NormNone
	}
	inputs, aerr := parseEmbedInput(m.Engine, raw, param)
	if aerr != nil {
		if len(bytes.TrimSpace(raw)) == 0 {
			aerr = badRequest("input", "\"input\" or \"content\" must be provided")
		}
		writeError(w, aerr)
		return
	}
	if aerr := fitInputs(m, inputs, req.Truncate, param); aerr != nil {
		writeError(w, aerr)
		return
	}
	embs, err := s.embed(r, m, inputs, opts)
	if err != nil {
		writeError(w, s.engineError(w, err, param))
		return
	}
	out := make([]llamaEmbedding, len(embs))
	tokens := 0
	for i, e := range embs {
		out[i] = llamaEmbedding{Index: i, Embedding: e.PerToken}
		if e.Vector != nil {
			out[i].Embedding = [][]float32{e.Vector}
		}
		tokens += e.Tokens
	}
	s.metrics.observeEmbed(m.Name, "embeddings", len(embs), tokens, start)
	writeJSON(w, 200, out)
}

// embed runs the inputs through the model's scheduler.
func (s *Server) embed(r *http.Request, m *Model, inputs []embedInput, opts engine.EmbedOptions) ([]engine.Embedding, error) {
	ctx, cancel := s.requestContext(r)
	defer cancel()
	in := make([][]int32, len(inputs))
	for i, x := range inputs {
		in[i] = x
	}
	return m.Engine.Embed(ctx, in, opts)
}

// floatsBase64 is OpenAI's base64 encoding of an embedding: its float32
// values little-endian, in standard base64.
func floatsBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// ---------------------------------------------------------------------------
// POST /v1/rerank, /rerank (and llama.cpp's /reranking, /v1/reranking)

// rerankRequest is llama.cpp's rerank request: Jina's and Cohere's shape
// (query, documents, top_n, return_documents), or TEI's when it has
// "texts" (query, texts, return_text: the answer is then a bare list).
type rerankRequest struct {
	Model           string          `json:"model"`
	Query           *string         `json:"query"`
	Documents       json.RawMessage `json:"documents"` // strings, or objects with a "text"
	Texts           json.RawMessage `json:"texts"`     // TEI's name of documents
	TopN            *int            `json:"top_n"`
	ReturnDocuments bool            `json:"return_documents"`
	ReturnText      bool            `json:"return_text"` // TEI's
	Truncate        bool            `json:"truncate"`    // cut documents so each pair fits the context
}

func (r *rerankRequest) modelName() string { return r.Model }

type rerankDocument struct {
	Text string `json:"text"`
}

type rerankResult struct {
	Index          int             `json:"index"`
	RelevanceScore float32         `json:"relevance_score"`
	Document       *rerankDocument `json:"document,omitempty"`
}

type rerankResponse struct {
	Model   string         `json:"model"`
	Object  string         `json:"object"`
	Usage   embedUsage     `json:"usage"`
	Results []rerankResult `json:"results"`
}

// teiResult is one result in TEI's shape.
type teiResult struct {
	Index int     `json:"index"`
	Score float32 `json:"score"`
	Text  *string `json:"text,omitempty"`
}

// rerankable refuses a rerank request to a model without a ranking head.
func rerankable(m *Model) *apiError {
	switch modelKind(m.Engine) {
	case "generate":
		return withCode(badRequest("model", "model %q is a text-generation model, not a reranking model: it cannot rerank", m.Name), "model_not_supported")
	case "embed":
		return withCode(badRequest("model", "model %q is an embedding model without a ranking head (pooling %s, not rank): it cannot rerank; use /v1/embeddings", m.Name, m.Engine.Pooling()), "model_not_supported")
	}
	return nil
}

func (s *Server) rerank(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req rerankRequest
	m, ok := s.open(w, r, &req)
	if !ok {
		return
	}
	if err := rerankable(m); err != nil {
		writeError(w, err)
		return
	}
	if req.Query == nil {
		writeError(w, badRequest("query", "query is required (a string)"))
		return
	}
	tei := req.Texts != nil
	list, param := req.Documents, "documents"
	switch {
	case tei && req.Documents != nil:
		writeError(w, badRequest("texts", "give the documents as documents or as texts, not both"))
		return
	case tei:
		list, param = req.Texts, "texts"
	}
	var raw []json.RawMessage
	if l := bytes.TrimSpace(list); len(l) > 0 && string(l) != "null" {
		if l[0] != '[' || json.Unmarshal(l, &raw) != nil {
			writeError(w, badRequest(param, "%s must be a non-empty list of strings", param))
			return
		}
	}
	if len(raw) == 0 {
		writeError(w, badRequest(param, "%s must be a non-empty list of strings", param))
		return
	}
	if len(raw) > maxRerankDocuments {
		writeError(w, withCode(badRequest(param, "%s has %d documents; at most %d per request", param, len(raw), maxRerankDocuments), "too_many_inputs"))
		return
	}
	docs := make([]string, len(raw))
	for i, d := range raw {
		var obj struct {
			Text *string `json:"text"`
		}
		switch {
		case json.Unmarshal(d, &docs[i]) == nil:
		case !tei && json.Unmarshal(d, &obj) == nil && obj.Text != nil:
			docs[i] = *obj.Text
		default:
			writeError(w, badRequest(param, "%s[%d] must be a string", param, i))
			return
		}
	}
	topN := len(docs)
	if req.TopN != nil {
		if *req.TopN < 1 {
			writeError(w, badRequest("top_n", "top_n must be at least 1, got %d", *req.TopN))
			return
		}
		topN = min(*req.TopN, len(docs))
	}
	if !req.Truncate {
		ctxLen := m.Engine.CtxLen()
		for i, d := range docs {
			if n := len(m.Engine.RerankTokens(*req.Query, d)); n > ctxLen {
				writeError(w, withCode(badRequest(param, "%s[%d] with the query takes %d tokens, more than model %q's context of %d; shorten it or set \"truncate\": true to cut the document", param, i, n, m.Name, ctxLen), "context_length_exceeded"))
				return
			}
		}
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	ranked, err := m.Engine.Rerank(ctx, *req.Query, docs, engine.RerankOptions{Truncate: req.Truncate})
	if err != nil {
		writeError(w, s.engineError(w, err, param))
		return
	}
	tokens := 0
	for _, x := range ranked {
		tokens += x.Tokens
	}
	sortRanked(ranked)
	ranked = ranked[:topN]
	s.metrics.observeEmbed(m.Name, "rerank", len(docs), tokens, start)
	if tei {
		out := make([]teiResult, len(ranked))
		for i, x := range ranked {
			out[i] = teiResult{Index: x.Index, Score: x.Score}
			if req.ReturnText {
				out[i].Text = &docs[x.Index]
			}
		}
		writeJSON(w, 200, out)
		return
	}
	resp := rerankResponse{Model: m.Name, Object: "list", Usage: embedUsage{tokens, tokens}, Results: make([]rerankResult, len(ranked))}
	for i, x := range ranked {
		resp.Results[i] = rerankResult{Index: x.Index, RelevanceScore: x.Score}
		if req.ReturnDocuments {
			resp.Results[i].Document = &rerankDocument{docs[x.Index]}
		}
	}
	writeJSON(w, 200, resp)
}

// sortRanked orders scores from the most relevant (ties: document order).
func sortRanked(r []engine.Ranked) {
	slices.SortStableFunc(r, func(a, b engine.Ranked) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
}

// ---------------------------------------------------------------------------
// POST /api/embed (ollama)

// ollamaEmbedRequest is ollama's /api/embed request.
type ollamaEmbedRequest struct {
	Model      string          `json:"model"`
	Input      json.RawMessage `json:"input"`
	Truncate   *bool           `json:"truncate"` // default true
	Dimensions *int            `json:"dimensions"`
	KeepAlive  json.RawMessage `json:"keep_alive"` // ignored: models stay loaded
	Options    json.RawMessage `json:"options"`    // ignored
}

func (r *ollamaEmbedRequest) modelName() string { return r.Model }

type ollamaEmbedResponse struct {
	Model           string      `json:"model"`
	Embeddings      [][]float32 `json:"embeddings"`
	TotalDuration   int64       `json:"total_duration"` // nanoseconds
	LoadDuration    int64       `json:"load_duration"`  // nanoseconds (0: the model is loaded)
	PromptEvalCount int         `json:"prompt_eval_count"`
}

// ollamaError writes an error as ollama does: {"error": "message"}.
func ollamaError(w http.ResponseWriter, e *apiError) {
	if e.status == 0 {
		e.status = 500
	}
	writeJSON(w, e.status, map[string]string{"error": e.Msg})
}

// ollamaEmbed is ollama's POST /api/embed: L2-normalized embeddings of a
// string or a list of strings, inputs longer than the context cut unless
// "truncate": false.
func (s *Server) ollamaEmbed(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var req ollamaEmbedRequest
	if err := s.decode(w, r, &req); err != nil {
		ollamaError(w, err)
		return
	}
	m, aerr := s.ollamaModel(r, req.Model)
	if aerr != nil {
		ollamaError(w, aerr)
		return
	}
	if aerr := embeddable(m, true); aerr != nil {
		ollamaError(w, aerr)
		return
	}
	truncate := req.Truncate == nil || *req.Truncate
	opts := engine.EmbedOptions{Truncate: truncate}
	if opts.Dimensions, aerr = dimensionsOption(m, req.Dimensions); aerr != nil {
		ollamaError(w, aerr)
		return
	}
	// ollama takes strings only; a token list is refused.
	if raw := bytes.TrimSpace(req.Input); len(raw) > 0 && raw[0] == '[' {
		var list []string
		if json.Unmarshal(raw, &list) != nil {
			ollamaError(w, badRequest("input", "input must be a string or a list of strings"))
			return
		}
	}
	inputs, aerr := parseEmbedInput(m.Engine, req.Input, "input")
	if aerr != nil {
		ollamaError(w, aerr)
		return
	}
	if aerr := fitInputs(m, inputs, truncate, "input"); aerr != nil {
		ollamaError(w, aerr)
		return
	}
	embs, err := s.embed(r, m, inputs, opts)
	if err != nil {
		ollamaError(w, s.engineError(w, err, "input"))
		return
	}
	resp := ollamaEmbedResponse{Model: m.Name, Embeddings: make([][]float32, len(embs))}
	for i, e := range embs {
		resp.Embeddings[i] = e.Vector
		resp.PromptEvalCount += e.Tokens
	}
	resp.TotalDuration = time.Since(start).Nanoseconds()
	s.metrics.observeEmbed(m.Name, "embeddings", len(embs), resp.PromptEvalCount, start)
	writeJSON(w, 200, resp)
}
