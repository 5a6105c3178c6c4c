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
