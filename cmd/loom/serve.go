package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/server"
)

// cmdServe runs the OpenAI-compatible server.
func cmdServe(args []string) error {
	fs := newFlags("serve")
	quantizeTo := fs.String("quantize", "", "for a Hugging Face folder: quantize the weights while loading (Q8_0, Q4_K_M, …, as llama-quantize)")
	var models, aliases []string
	fs.Func("m", "a model to serve (repeatable; models may also be given as arguments)", func(v string) error {
		if v == "" {
			return errors.New("empty model")
		}
		models = append(models, v)
		return nil
	})
	fs.Func("alias", "the id the API serves a model under (repeatable: the i-th names the i-th model; default: the file's base name)", func(v string) error {
		if v = strings.TrimSpace(v); v == "" {
			return errors.New("empty alias")
		}
		aliases = append(aliases, v)
		return nil
	})
	var modelDirs []string
	fs.Func("models-dir", "serve every model under `DIR` on demand (repeatable): GGUF files, split models, Hugging Face folders, listed by /v1/models unloaded and loaded by the first request naming one (the pull cache is served too)", func(v string) error {
		if v == "" {
			return errors.New("empty directory")
		}
		modelDirs = append(modelDirs, v)
		return nil
	})
	modelsMax := new(int)
	*modelsMax = -1 // not given
	fs.Func("models-max", "how many models may be loaded at once (`N`); loading one more first unloads the least recently used idle one (default: 3 with --models-dir, or the number of models given if more; else no limit; 0: no limit)", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errors.New("want 0 (no limit) or more")
		}
		*modelsMax = n
		return nil
	})
	keepAlive := fs.String("keep-alive", "5m", "how long a model loaded on demand stays loaded without requests (a duration, or seconds; 0: unload after each request; negative: until the server stops)")
	loadTimeout := fs.Duration("load-timeout", server.DefaultLoadTimeout, "how long a request waits for its model to load (or for room to load it) before a 503 with Retry-After")
	threads := fs.Int("t", defaultThreads(), "threads")
	host := fs.String("host", "127.0.0.1", "address to listen on")
	port := fs.Int("port", 8080, "port (0: any free port)")
	parallel := fs.Int("parallel", 8, "sequences decoded together per model")
	ctxLen := ctxFlags(fs)
	kvSize := fs.String("kv-size", "", "KV cache per model, shared by all sequences: positions (16384) or bytes (1GiB), at least one full context; default ctx-size × parallel")
	pooling := fs.String("pooling", "", "embedding models: pool as `KIND` says — none, mean, cls, last or rank — instead of as each file says (llama.cpp's --pooling; a text-generation model then serves embeddings only)")
	reranking := fs.Bool("reranking", false, "serve the models as rerankers (llama.cpp's --reranking: --pooling rank)")
	apiKey := fs.String("api-key", "", "require this key (Authorization: Bearer KEY)")
	apiKeyFile := fs.String("api-key-file", "", "read the API key from this file")
	maxWaiting := fs.Int("max-waiting", 64, "queued requests per model before 429")
	tmpl := fs.String("chat-template", "", "chat template for every model: a built-in name, a .jinja file or a tokenizer_config.json")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "on SIGTERM, how long in-flight requests may finish")
	spec := addSpecFlags(fs)
	lora := addLoRAFlags(fs)
	rf := addRopeFlags(fs)
	kvf := addCacheFlags(fs)
	stepTokens := fs.Int("step-tokens", 0, "tokens per forward pass: every running stream's next token plus prompt chunks, shortest remaining prompt first (vLLM's --max-num-batched-tokens; 0: 256)")
	fs.IntVar(stepTokens, "max-num-batched-tokens", 0, "same as --step-tokens")
	chunkLatency := fs.Float64("chunk-latency", 0, "bound a step that holds prompt chunks beside running streams to about `K` times a decode-only step (fitted from the steps served), so their inter-token latency stays within K while a long prompt prefills (it prefills slower); 0: chunks are cut by the token budget alone")
	reasoningFormat := fs.String("reasoning-format", "auto", "how replies return their reasoning unless a request says (reasoning_format): auto or deepseek (apart, as reasoning_content), deepseek-legacy (apart and in the content), none (in the content)")
	think := addThinkFlags(fs, false)
	kwargs := fs.String("chat-template-kwargs", "", "template variables for every chat request, as a JSON object (e.g. '{\"enable_thinking\": false}'); a request's chat_template_kwargs add to them")
	err := parseArgsFunc(fs, args, func(a string) error { models = append(models, a); return nil })
	if err != nil {
		return err
	}
	if err := server.CheckReasoningFormat(*reasoningFormat); err != nil {
		return fmt.Errorf("--reasoning-format: %w", err)
	}
	reasoningBudget := think.budget // a request's reasoning_budget_tokens overrides it
	if *reasoningBudget < -1 {
		return fmt.Errorf("--reasoning-budget %d: want -1 (unlimited), 0 (no thinking) or a number of tokens", *reasoningBudget)
	}
	if *reranking {
		if *pooling != "" && *pooling != engine.PoolingRank {
			return fmt.Errorf("--reranking is --pooling rank, not --pooling %s", *pooling)
		}
		*pooling = engine.PoolingRank
	}
	extra, err := think.extra()
	if err != nil {
		return err
	}
	if *kwargs != "" {
		var kw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(*kwargs), &kw); err != nil {
			return fmt.Errorf("--chat-template-kwargs: want a JSON object: %w", err)
		}
		for k, v := range kw {
			extra[k] = v
		}
	}
	// Every model gets the draft model and the speculation; a request's
	// speculative.* fields override them (server/openai.go).
	draft, specP, err := spec.params(true)
	if err != nil {
		return err
	}
	switch {
	case *port < 0 || *port > 65535:
		return fmt.Errorf("--port %d: want 0 to 65535", *port)
	case *parallel < 1 || *parallel > 256:
		return fmt.Errorf("--parallel %d: want 1 to 256", *parallel)
	case *ctxLen < 0 || *ctxLen > 1<<20:
		return fmt.Errorf("-c (--ctx-size) %d: want 0 (the model's) or a context size up to %d", *ctxLen, 1<<20)
	case *apiKey != "" && *apiKeyFile != "":
		return errors.New("give --api-key or --api-key-file, not both")
	case *maxWaiting < 1:
		return fmt.Errorf("--max-waiting %d: want at least 1", *maxWaiting)
	case *grace < 0:
		return fmt.Errorf("--shutdown-timeout %v: want 0 or more", *grace)
	case len(modelDirs) == 0 && len(aliases) > max(len(models), 1), len(modelDirs) > 0 && len(aliases) > len(models):
		return fmt.Errorf("--alias %q: %d aliases for %d model(s); the i-th --alias names the i-th model", aliases[len(aliases)-1], len(aliases), max(len(models), 1))
	case *loadTimeout <= 0:
		return fmt.Errorf("--load-timeout %v: want a positive duration", *loadTimeout)
	}
	keep, err := parseKeepAlive(*keepAlive)
	if err != nil {
		return fmt.Errorf("--keep-alive %q: %w", *keepAlive, err)
	}
	maxLoaded := *modelsMax
	switch {
	case maxLoaded == -1 && len(modelDirs) > 0:
		maxLoaded = max(3, len(models))
	case maxLoaded == -1:
		maxLoaded = 0
	case maxLoaded > 0 && len(models) > maxLoaded:
		return fmt.Errorf("--models-max %d: %d models are to be loaded at start", maxLoaded, len(models))
	}
	if err := checkThreads("-t", *threads); err != nil {
		return err
	}
	key := *apiKey
	if *apiKeyFile != "" {
		b, err := os.ReadFile(*apiKeyFile)
		if err != nil {
			return err
		}
		if key = strings.TrimSpace(string(b)); key == "" {
			return fmt.Errorf("%s is empty", *apiKeyFile)
		}
	}
	kvTokens, kvBytes, err := parseKVSize(*kvSize)
	if err != nil {
		return err
	}
	if len(models) == 0 && len(modelDirs) == 0 {
		p, err := modelPath("")
		if err != nil {
			return err
		}
		models = []string{p}
	}
	// Every model's file and id before anything is loaded: a missing file
	// or two models under one id fail at once.
	paths := make([]string, len(models))
	ids := make([]string, len(models))
	byID := map[string]int{}
	for i, m := range models {
		path, err := resolveModel(m)
		if err != nil {
			return err
		}
		paths[i] = path
		if i < len(aliases) {
			ids[i] = aliases[i]
		} else {
			ids[i] = server.ModelID(path)
		}
		if j, dup := byID[ids[i]]; dup {
			return fmt.Errorf("%s and %s would both be served as %q: name them apart with --alias (one per model, in order)", models[j], m, ids[i])
		}
		byID[ids[i]] = i
	}
	srv := server.New(server.Config{APIKey: key, Parallel: *parallel, MaxWaiting: *maxWaiting,
		ReasoningFormat: *reasoningFormat, ChatTemplateKwargs: extra, ReasoningBudget: reasoningBudget,
		MaxLoaded: maxLoaded, KeepAlive: &keep, LoadTimeout: *loadTimeout})
	addr := net.JoinHostPort(*host, strconv.Itoa(*port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := srv.HTTPServer()
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }() // /health answers 503 while loading
	fmt.Fprintf(os.Stderr, "loom serve: listening on http://%s (loading %d model(s))\n", ln.Addr(), len(models))
	if *chunkLatency < 0 || *chunkLatency > 1000 || *chunkLatency != *chunkLatency {
		return fmt.Errorf("--chunk-latency %g: want 0 (off) or a factor up to 1000", *chunkLatency)
	}
	if *stepTokens < 0 || *stepTokens > 1<<20 {
		return fmt.Errorf("--step-tokens %d: want 0 (the default, 256) to %d", *stepTokens, 1<<20)
	}
	opts := kvf.apply(engine.Options{Quantize: *quantizeTo, Threads: *threads, CtxLen: *ctxLen, ChunkLatency: *chunkLatency, StepTokens: *stepTokens,
		KVTokens: kvTokens, KVBytes: kvBytes, DraftModel: draft, Spec: specP, Pooling: *pooling, LoRA: lora.adapters(), Rope: rf.override()})
	// The server owns the engines it loads: Close cancels what still runs,
	// waits for its handlers, then closes them.
	defer srv.Close()
	for i, path := range paths {
		// Parallel (sequences decoded together, and the KV cache's size
		// without --kv-size) and MaxWaiting are the server's.
		m, err := srv.Load(ids[i], path, opts, *tmpl)
		if err != nil {
			hs.Close()
			return fmt.Errorf("%s: %w", path, kvError(err, *kvSize, "--ctx-size"))
		}
		e := m.Engine
		warn(e.Vocab().Warnings)
		warnContext(e)
		ci := e.Cache()
		if p := e.Pooling(); p != "" {
			kind := "embedding"
			if p == engine.PoolingRank {
				kind = "reranking"
			}
			fmt.Fprintf(os.Stderr, "loom serve: %s as %q (%s model: pooling %s, output width %d, context %d, KV %d blocks × %d = %.0f MiB)\n",
				path, m.Name, kind, p, e.EmbedDim(), e.CtxLen(), ci.Blocks, ci.BlockSize, float64(ci.Bytes)/(1<<20))
			continue
		}
		fmt.Fprintf(os.Stderr, "loom serve: %s as %q (template %s, context %d, KV %d blocks × %d = %.0f MiB, speculative decoding %s)\n",
			path, m.Name, m.Chat.Name, e.CtxLen(), ci.Blocks, ci.BlockSize, float64(ci.Bytes)/(1<<20), specName(specP, draft))
	}
	if len(modelDirs) > 0 {
		dirs := modelDirs
		if c := hubCache(); !slices.Contains(dirs, c) {
			if st, err := os.Stat(c); err == nil && st.IsDir() {
				dirs = append(dirs, c) // what loom pull fetched
			}
		}
		ids, warnings, err := srv.AddModelDirs(dirs, opts, *tmpl)
		if err != nil {
			hs.Close()
			return err
		}
		warn(warnings)
		limit := "no limit"
		if maxLoaded > 0 {
			limit = fmt.Sprintf("at most %d loaded at once", maxLoaded)
		}
		fmt.Fprintf(os.Stderr, "loom serve: %d model(s) on demand from %s (%s; unloaded after %s without requests): %s\n",
			len(ids), strings.Join(dirs, ", "), limit, keepAliveName(keep), strings.Join(ids, ", "))
	}
	srv.Ready()
	fmt.Fprintf(os.Stderr, "loom serve: ready — chat page http://%s/, API http://%s/v1\n", ln.Addr(), ln.Addr())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case err := <-serveErr:
		return err
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "loom serve: %v: finishing in-flight requests (up to %v)\n", s, *grace)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	err = hs.Shutdown(ctx) // stop accepting; wait for handlers
	if errors.Is(err, context.DeadlineExceeded) {
		hs.Close()  // close the connections left: writes to them fail at once
		srv.Close() // cancel their requests, wait for the handlers, close the engines
		fmt.Fprintln(os.Stderr, "loom serve: deadline passed; remaining requests cancelled")
		return nil
	}
	return err
}

func defaultThreads() int { return min(runtime.NumCPU(), 4) }

// parseKeepAlive reads --keep-alive: a duration ("5m", "-1s") or a
// number of seconds ("300", "0", "-1"), as ollama's OLLAMA_KEEP_ALIVE.
func parseKeepAlive(v string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n > 1e9 || n < -1e9 {
			return 0, errors.New("out of range")
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New("want a duration (5m, 1h30m, 0, -1) or a number of seconds")
	}
	return d, nil
}

func keepAliveName(d time.Duration) string {
	switch {
	case d < 0:
		return "never (negative keep-alive)"
	case d == 0:
		return "each request"
	}
	return d.String()
}

// cmdHealth checks a server's /health (a container health check on images
// without curl): exit 0 when it answers 200.
func cmdHealth(args []string) error {
	fs := newFlags("health")
	url := fs.String("url", "http://127.0.0.1:8080/health", "health endpoint")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := unexpected(pos, 0); err != nil {
		return err
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration", *timeout)
	}
	c := &http.Client{Timeout: *timeout}
	resp, err := c.Get(*url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", *url, resp.Status)
	}
	return nil
}
