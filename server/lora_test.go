package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/server"
)

// TestLoRAServe: a model served with an adapter applies it by default; a
// request's "lora" list (llama.cpp's) picks adapters by id, [] none; a bad
// list is a 400; GET /lora-adapters lists the adapters and /metrics has
// vLLM's lora_requests_info for the model.
func TestLoRAServe(t *testing.T) {
	base := testmodels.SynthArgs(t, "synthgguf -model smollm2-135m -type Q8_0 -seed 1")
	a1 := testmodels.LoRAModel(t, base, `loragen -rank 8 -alpha 16 -seed 1 -type F32 -targets attn_(q|v)\.weight|ffn_(up|down)\.weight`)
	srv := server.New(server.Config{APIKey: testKey, Parallel: 2})
	t.Cleanup(srv.Close)
	if _, err := srv.Load("smol", base, engine.Options{Threads: 2, CtxLen: 128, LoRA: []engine.LoRAFile{{Path: a1, Scale: 1}}}, ""); err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	f := startHTTP(t, srv)
	complete := func(lora string) (int, string) {
		t.Helper()
		body := `{"model":"smol","prompt":"The capital of France is","max_tokens":6,"temperature":0` + lora + `}`
		resp, out := post(t, f.ts.URL+"/v1/completions", testKey, body)
		if resp.StatusCode != 200 {
			msg, _ := json.Marshal(out)
			return resp.StatusCode, string(msg)
		}
		return 200, out["choices"].([]any)[0].(map[string]any)["text"].(string)
	}
	_, def := complete("")
	_, one := complete(`,"lora":[{"id":0,"scale":1}]`)
	_, none := complete(`,"lora":[]`)
	_, half := complete(`,"lora":[{"id":0,"scale":0.5}]`)
	if def != one || def == none || half == def || half == none {
		t.Errorf("default %q, id 0 at 1 %q, none %q, at 0.5 %q", def, one, none, half)
	}
	// The adapter served as a model: BASE:ADAPTER applies it alone.
	name := "smol:" + strings.TrimSuffix(filepath.Base(a1), ".gguf")
	resp0, out0 := post(t, f.ts.URL+"/v1/completions", testKey, `{"model":"`+name+`","prompt":"The capital of France is","max_tokens":6,"temperature":0}`)
	if resp0.StatusCode != 200 || out0["choices"].([]any)[0].(map[string]any)["text"] != one {
		t.Errorf("model %s: %d %v, want %q", name, resp0.StatusCode, out0, one)
	}
	if resp, out := post(t, f.ts.URL+"/v1/completions", testKey, `{"model":"smol:nope","prompt":"x","max_tokens":1}`); resp.StatusCode != 404 {
		t.Errorf("an unknown adapter: %d %v", resp.StatusCode, out)
	}
	lreq, _ := http.NewRequest("GET", f.ts.URL+"/v1/models", nil)
	lreq.Header.Set("Authorization", "Bearer "+testKey)
	lresp, err := http.DefaultClient.Do(lreq)
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct{ ID, Parent string }
	}
	json.NewDecoder(lresp.Body).Decode(&models)
	lresp.Body.Close()
	if len(models.Data) != 2 || models.Data[1].ID != name || models.Data[1].Parent != "smol" {
		t.Errorf("/v1/models: %+v", models)
	}
	for _, bad := range []string{`,"lora":[{"id":1,"scale":1}]`, `,"lora":[{"id":0}]`, `,"lora":{"id":0}`, `,"lora":[{"id":0,"scale":1},{"id":0,"scale":2}]`} {
		if code, msg := complete(bad); code != 400 || !strings.Contains(msg, "lora") {
			t.Errorf("%s: %d %s", bad, code, msg)
		}
	}
	req, _ := http.NewRequest("GET", f.ts.URL+"/lora-adapters", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		ID    int     `json:"id"`
		Path  string  `json:"path"`
		Scale float32 `json:"scale"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list) != 1 || list[0].ID != 0 || list[0].Path != a1 || list[0].Scale != 1 {
		t.Errorf("/lora-adapters: %+v", list)
	}
	resp, err = http.Get(f.ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `vllm:lora_requests_info{max_lora="1",model_name="smol",running_lora_adapters="",waiting_lora_adapters=""}`) {
		t.Errorf("metrics lack vllm:lora_requests_info:\n%s", grepLines(string(b), "lora"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestLoRASetAdapters: POST /lora-adapters (llama.cpp's) sets the default
// adapter scales, the adapters not listed at 0; GET /lora-adapters shows
// them; a request without "lora" applies them and one with its own list
// still overrides them; bad lists are 400s that change nothing.
func TestLoRASetAdapters(t *testing.T) {
	base := testmodels.SynthArgs(t, "synthgguf -model smollm2-135m -type Q8_0 -seed 1")
	a1 := testmodels.LoRAModel(t, base, `loragen -rank 8 -alpha 16 -seed 1 -type F32 -targets attn_(q|v)\.weight|ffn_(up|down)\.weight`)
	a2 := testmodels.LoRAModel(t, base, `loragen -rank 16 -alpha 8 -seed 2 -type F16 -targets attn_(k|output)\.weight|ffn_gate\.weight`)
	srv := server.New(server.Config{APIKey: testKey, Parallel: 2})
	t.Cleanup(srv.Close)
	if _, err := srv.Load("smol", base, engine.Options{Threads: 2, CtxLen: 128,
		LoRA: []engine.LoRAFile{{Path: a1, Scale: 1}, {Path: a2, Scale: 0}}}, ""); err != nil {
		t.Fatal(err)
	}
	srv.Ready()
	f := startHTTP(t, srv)
	complete := func(lora string) string {
		t.Helper()
		resp, out := post(t, f.ts.URL+"/v1/completions", testKey, `{"model":"smol","prompt":"The capital of France is","max_tokens":6,"temperature":0`+lora+`}`)
		if resp.StatusCode != 200 {
			t.Fatalf("completion %s: %d %v", lora, resp.StatusCode, out)
		}
		return out["choices"].([]any)[0].(map[string]any)["text"].(string)
	}
	setScales := func(body, key string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", f.ts.URL+"/lora-adapters", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	scales := func() string {
		t.Helper()
		req, _ := http.NewRequest("GET", f.ts.URL+"/lora-adapters", nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list []struct {
			ID    int     `json:"id"`
			Scale float32 `json:"scale"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(list)
		return string(b)
	}
	a1Default, half, both, none := complete(""), complete(`,"lora":[{"id":0,"scale":0.5}]`), complete(`,"lora":[{"id":0,"scale":0.5},{"id":1,"scale":1.5}]`), complete(`,"lora":[]`)
	if a1Default == half || half == both || both == none || a1Default == none {
		t.Fatalf("the adapters change nothing: %q %q %q %q", a1Default, half, both, none)
	}
	if got := scales(); got != `[{"id":0,"scale":1},{"id":1,"scale":0}]` {
		t.Errorf("loaded scales %s", got)
	}

	// Both listed, then only a1 (a2 goes back to 0), then none.
	if code, body := setScales(`[{"id":1,"scale":1.5},{"id":0,"scale":0.5}]`, testKey); code != 200 || strings.TrimSpace(body) != `{"success":true}` {
		t.Fatalf("POST /lora-adapters: %d %s", code, body)
	}
	if got := scales(); got != `[{"id":0,"scale":0.5},{"id":1,"scale":1.5}]` {
		t.Errorf("scales after the POST: %s", got)
	}
	if got := complete(""); got != both {
		t.Errorf("the new defaults: %q, want %q", got, both)
	}
	if got := complete(`,"lora":[{"id":0,"scale":1}]`); got != a1Default {
		t.Errorf("a request's lora over the new defaults: %q, want %q", got, a1Default)
	}
	if code, body := setScales(`[{"id":0,"scale":0.5}]`, testKey); code != 200 {
		t.Fatalf("POST: %d %s", code, body)
	}
	if got := scales(); got != `[{"id":0,"scale":0.5},{"id":1,"scale":0}]` {
		t.Errorf("an adapter not listed is off: %s", got)
	}
	if got := complete(""); got != half {
		t.Errorf("a1 at 0.5 by default: %q, want %q", got, half)
	}
	if code, body := setScales(`[]`, testKey); code != 200 {
		t.Fatalf("POST []: %d %s", code, body)
	}
	if got := complete(""); got != none {
		t.Errorf("every adapter off: %q, want the base model's %q", got, none)
	}

	// Bad lists are 400s naming the culprit, and change nothing.
	for _, c := range []struct{ body, want string }{
		{`[{"id":2,"scale":1}]`, "adapter id 2"},
		{`[{"id":-1,"scale":1}]`, "adapter id -1"},
		{`[{"id":0}]`, "needs an id and a scale"},
		{`[{"scale":1}]`, "needs an id and a scale"},
		{`[{"id":0,"scale":1},{"id":0,"scale":2}]`, "given twice"},
		{`[{"id":0,"scale":20000}]`, "out of range"},
		{`[{"id":0,"scale":1e999}]`, "1e999"},
		{`[{"id":0,"scale":"NaN"}]`, "scale"},
		{`[{"id":0,"scale":null}]`, "needs an id and a scale"},
		{`{"id":0,"scale":1}`, "must be a list"},
		{`null`, "must be a list"},
		{``, "JSON"},
	} {
		code, body := setScales(c.body, testKey)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("POST %s: %d %s, want 400 with %q", c.body, code, body, c.want)
		}
	}
	if code, _ := setScales(`[{"id":0,"scale":1}]`, ""); code != 401 {
		t.Errorf("POST without the key: %d, want 401", code)
	}
	if code, body := setScales(`[{"id":0,"scale":1}]`, testKey+"x"); code != 401 {
		t.Errorf("POST with a wrong key: %d %s", code, body)
	}
	if got := scales(); got != `[{"id":0,"scale":0},{"id":1,"scale":0}]` {
		t.Errorf("refused lists changed the scales: %s", got)
	}
}
