package server

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/loom-inference/loom/engine"
)

// Metrics are exported under Loom's names and under the names vLLM uses,
// which the Kubernetes Gateway API Inference Extension's endpoint picker
// reads (its model-server protocol: vllm:num_requests_waiting,
// vllm:num_requests_running, vllm:kv_cache_usage_perc, with
// vllm:gpu_cache_usage_perc as the older name of the last), so a fleet of
// loom serve pods can sit behind it unchanged. Every series carries the
// model_name label, as vLLM's do.

// VLLMMetricNames are the vLLM-compatible names this server exports.
var VLLMMetricNames = []string{
	"vllm:num_requests_running", "vllm:num_requests_waiting",
	"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
	"vllm:prompt_tokens_total", "vllm:generation_tokens_total",
	"vllm:num_preemptions_total", "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
	"vllm:cache_config_info",
	"vllm:time_to_first_token_seconds", "vllm:time_per_output_token_seconds", "vllm:e2e_request_latency_seconds",
	"vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_accepted_tokens_total",
}

type metrics struct {
	s    *Server
	reg  *prometheus.Registry
	ttft []*prometheus.HistogramVec
	tpot []*prometheus.HistogramVec
	e2e  []*prometheus.HistogramVec

	// Embedding and rerank requests (endpoint "embeddings" or "rerank"):
	// requests, inputs (texts or documents) and tokens evaluated.
	embedRequests, embedInputs, embedTokens *prometheus.CounterVec

	// The registry (ondemand.go): loads (result "ok" or "error") and their
	// duration, unloads by reason ("keep_alive", "models_max",
	// "request"); the loaded count is read at scrape time.
	loads, unloads *prometheus.CounterVec
	loadSeconds    *prometheus.HistogramVec
}

type gaugeDesc struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(st engine.SchedStats) float64
}

func newMetrics(s *Server) *metrics {
	m := &metrics{s: s, reg: prometheus.NewRegistry()}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"model_name"})
		m.reg.MustRegister(h)
		return h
	}
	ttftB := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	tpotB := []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	e2eB := []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960}
	for _, prefix := range []string{"loom_", "vllm:"} {
		m.ttft = append(m.ttft, hist(prefix+"time_to_first_token_seconds", "Time to first token (seconds).", ttftB))
		m.tpot = append(m.tpot, hist(prefix+"time_per_output_token_seconds", "Time per output token after the first (seconds).", tpotB))
		m.e2e = append(m.e2e, hist(prefix+"e2e_request_latency_seconds", "End-to-end request latency (seconds).", e2eB))
	}
	counter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"model_name", "endpoint"})
		m.reg.MustRegister(c)
		return c
	}
	m.embedRequests = counter("loom_embedding_requests_total", "Embedding and rerank requests answered (endpoint embeddings or rerank).")
	m.embedInputs = counter("loom_embedding_inputs_total", "Inputs embedded, or documents reranked.")
	m.embedTokens = counter("loom_embedding_tokens_total", "Tokens evaluated for embeddings and reranking.")
	m.loads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_model_loads_total",
		Help: "Model loads (at start and on demand), by result: ok or error."}, []string{"model_name", "result"})
	m.unloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "loom_model_unloads_total",
		Help: "Model unloads, by reason: keep_alive (idle for its keep-alive), models_max (room for another model), request."}, []string{"model_name", "reason"})
	m.loadSeconds = hist("loom_model_load_seconds", "Time to load a model (seconds), successful loads.",
		[]float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300})
	m.reg.MustRegister(m.loads, m.unloads, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "loom_models_loaded",
		Help: "Models loaded now (their engines in memory)."}, func() float64 { return float64(len(s.list())) }))
	m.reg.MustRegister(m)
	// The Go runtime's and the process's own series (go_goroutines,
	// go_memstats_*, process_resident_memory_bytes, process_open_fds, …),
	// as the default Prometheus registry has them.
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe records a finished request's latencies.
func (m *metrics) observe(model string, r engine.Result, start time.Time) {
	if r.FinishReason == engine.FinishError || r.FinishReason == engine.FinishCancelled {
		return
	}
	for i := range m.ttft {
		if r.Generated > 0 {
			m.ttft[i].WithLabelValues(model).Observe(r.TTFT.Seconds())
		}
		if r.Generated > 1 {
			m.tpot[i].WithLabelValues(model).Observe((r.Duration - r.TTFT).Seconds() / float64(r.Generated-1))
		}
		m.e2e[i].WithLabelValues(model).Observe(time.Since(start).Seconds())
	}
}

// observeEmbed records an answered embedding or rerank request.
func (m *metrics) observeEmbed(model, endpoint string, inputs, tokens int, start time.Time) {
	m.embedRequests.WithLabelValues(model, endpoint).Inc()
	m.embedInputs.WithLabelValues(model, endpoint).Add(float64(inputs))
	m.embedTokens.WithLabelValues(model, endpoint).Add(float64(tokens))
	for i := range m.e2e {
		m.e2e[i].WithLabelValues(model).Observe(time.Since(start).Seconds())
	}
}

// loaded records a load's outcome.
func (m *metrics) loaded(model string, d time.Duration, err error) {
	if err != nil {
		m.loads.WithLabelValues(model, "error").Inc()
		return
	}
	m.loads.WithLabelValues(model, "ok").Inc()
	m.loadSeconds.WithLabelValues(model).Observe(d.Seconds())
}

// unloaded records an unload.
func (m *metrics) unloaded(model, reason string) {
	m.unloads.WithLabelValues(model, reason).Inc()
}

var scrapeMetrics = func() []gaugeDesc {
	usage := func(st engine.SchedStats) float64 { return st.CacheUsage }
	g := func(name, help string, kind prometheus.ValueType, v func(engine.SchedStats) float64) gaugeDesc {
		return gaugeDesc{prometheus.NewDesc(name, help, []string{"model_name"}, nil), kind, v}
	}
	var out []gaugeDesc
	for _, p := range []string{"loom_", "vllm:"} {
		running, waiting := "requests_running", "requests_waiting"
		usageName := "kv_cache_usage_ratio"
		promptName, genName, preName := "prompt_tokens_total", "generation_tokens_total", "preemptions_total"
		hitsName, queriesName := "prefix_cache_hit_tokens_total", "prefix_cache_query_tokens_total"
		draftsName, draftTokName, acceptedName := "spec_decode_drafts_total", "spec_decode_draft_tokens_total", "spec_decode_accepted_tokens_total"
		if p == "vllm:" {
			running, waiting, usageName, preName = "num_requests_running", "num_requests_waiting", "kv_cache_usage_perc", "num_preemptions_total"
			hitsName, queriesName = "prefix_cache_hits_total", "prefix_cache_queries_total"
			draftsName, draftTokName, acceptedName = "spec_decode_num_drafts_total", "spec_decode_num_draft_tokens_total", "spec_decode_num_accepted_tokens_total"
		}
		out = append(out,
			g(p+running, "Requests in the running batch.", prometheus.GaugeValue, func(st engine.SchedStats) float64 { return float64(st.Running) }),
			g(p+waiting, "Requests waiting to be scheduled.", prometheus.GaugeValue, func(st engine.SchedStats) float64 { return float64(st.Waiting) }),
			g(p+usageName, "Fraction of the KV cache held by sequences: their blocks and, for hybrid models, their recurrent states (1 = full).", prometheus.GaugeValue, usage),
			g(p+promptName, "Prompt tokens requested.", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.PromptTokens) }),
			g(p+genName, "Tokens generated.", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.GeneratedTokens) }),
			g(p+preName, "Sequences preempted (cache freed, recomputed later).", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.Preemptions) }),
			g(p+hitsName, "Prompt tokens found in the prefix cache.", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.CachedTokens) }),
			g(p+queriesName, "Prompt tokens looked up in the prefix cache.", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.PromptTokens) }),
			// Speculative decoding, as vLLM counts it: a draft is one
			// sequence's proposal verified in one step; acceptance rate =
			// accepted / draft tokens, mean accepted length = 1 + accepted / drafts.
			g(p+draftsName, "Speculative decoding: drafts verified (one per sequence and step that carried drafted tokens).", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.SpecDrafts) }),
			g(p+draftTokName, "Speculative decoding: tokens drafted.", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.SpecDraftTokens) }),
			g(p+acceptedName, "Speculative decoding: drafted tokens the model accepted.", prometheus.CounterValue, func(st engine.SchedStats) float64 { return float64(st.SpecAccepted) }),
		)
		if p == "vllm:" {
			out = append(out, g("vllm:gpu_cache_usage_perc", "KV cache usage (older vLLM name of vllm:kv_cache_usage_perc).", prometheus.GaugeValue, usage))
		}
	}
	return out
}()

var cacheInfoDesc = prometheus.NewDesc("vllm:cache_config_info", "KV cache configuration (value 1; the labels carry it).",
	[]string{"model_name", "block_size", "num_gpu_blocks"}, nil)

// loraInfoDesc is vLLM's vllm:lora_requests_info, which the Kubernetes
// Gateway API Inference Extension reads to route by adapter: its value is
// the scrape's Unix time, its labels the adapters the model can hold
// (max_lora) and those running and waiting requests apply, by name,
// comma-separated. Only models with adapters have it.
var loraInfoDesc = prometheus.NewDesc("vllm:lora_requests_info", "LoRA adapters in use (value: the time; the labels carry them).",
	[]string{"model_name", "max_lora", "running_lora_adapters", "waiting_lora_adapters"}, nil)

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range scrapeMetrics {
		ch <- d.desc
	}
	ch <- cacheInfoDesc
	ch <- loraInfoDesc
}

// adapterNames joins the names of the adapters ids picks (an adapter's
// name: its file's base name without .gguf, as the server lists it).
func adapterNames(ad []engine.Adapter, ids []int) string {
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < len(ad) {
			names = append(names, adapterName(ad[id]))
		}
	}
	return strings.Join(names, ",")
}

// adapterName is how the server names an adapter: its file's base name
// without .gguf.
func adapterName(a engine.Adapter) string {
	return strings.TrimSuffix(filepath.Base(a.Path), ".gguf")
}

// Collect implements prometheus.Collector: scheduler state at scrape time.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, mod := range m.s.list() {
		st := mod.Engine.Stats()
		for _, d := range scrapeMetrics {
			ch <- prometheus.MustNewConstMetric(d.desc, d.kind, d.value(st), mod.Name)
		}
		ci := mod.Engine.Cache()
		ch <- prometheus.MustNewConstMetric(cacheInfoDesc, prometheus.GaugeValue, 1, mod.Name, strconv.Itoa(ci.BlockSize), strconv.Itoa(ci.Blocks))
		if ad := mod.Engine.Adapters(); len(ad) > 0 {
			ch <- prometheus.MustNewConstMetric(loraInfoDesc, prometheus.GaugeValue, float64(time.Now().Unix()), mod.Name,
				strconv.Itoa(len(ad)), adapterNames(ad, st.RunningAdapters), adapterNames(ad, st.WaitingAdapters))
		}
	}
}
