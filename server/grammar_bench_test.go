package server_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"testing"
)

var (
	grammarLlama  = flag.String("grammar.llama", "", "TestGrammarSpeed: a running llama-server, e.g. http://127.0.0.1:8081")
	grammarLoom   = flag.String("grammar.loom", "", "TestGrammarSpeed: a running loom serve, e.g. http://127.0.0.1:8082")
	grammarRounds = flag.Int("grammar.rounds", 5, "TestGrammarSpeed: rounds")
	grammarTemp   = flag.Float64("grammar.temp", 0.8, "TestGrammarSpeed: temperature")
)

// benchSchema is a nested schema (objects in arrays in objects, enums,
// bounded strings, integer ranges, a date) for the decode comparison.
const benchSchema = `{"type": "object", "properties": {
  "id": {"type": "integer", "minimum": 1, "maximum": 100000},
  "name": {"type": "string", "minLength": 1, "maxLength": 40},
  "created": {"type": "string", "format": "date"},
  "status": {"enum": ["active", "paused", "closed"]},
  "owner": {"type": "object", "properties": {"email": {"type": "string", "maxLength": 30}, "admin": {"type": "boolean"}}, "required": ["email", "admin"]},
  "items": {"type": "array", "maxItems": 4, "items": {"type": "object", "properties": {
     "sku": {"type": "string", "maxLength": 12}, "qty": {"type": "integer", "minimum": 0, "maximum": 999}, "price": {"type": "number"}},
     "required": ["sku", "qty"]}}},
  "required": ["id", "name", "status", "owner", "items"]}`

// TestGrammarSpeed compares decode speed with and without a JSON Schema on
// llama.cpp's server (native /completion with json_schema) and Loom's
// (/v1/completions with response_format json_schema), one request at a
// time, alternating servers and modes, several rounds; both report
// llama.cpp's timings.predicted_per_second. Skipped unless both URLs are set.
func TestGrammarSpeed(t *testing.T) {
	if *grammarLlama == "" || *grammarLoom == "" {
		t.Skip("set -grammar.llama and -grammar.loom to compare running servers")
	}
	post := func(url string, body map[string]any) (float64, int, string) {
		b, _ := json.Marshal(body)
		resp, err := noKeepAlive.Post(url, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct {
			Content string `json:"content"`
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Timings struct {
				PredictedN  int     `json:"predicted_n"`
				PredictedPS float64 `json:"predicted_per_second"`
			} `json:"timings"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
			t.Fatalf("%s: status %d", url, resp.StatusCode)
		}
		text := out.Content
		if len(out.Choices) > 0 {
			text = out.Choices[0].Text
		}
		return out.Timings.PredictedPS, out.Timings.PredictedN, text
	}
	var schema any
	json.Unmarshal([]byte(benchSchema), &schema)
	rates := map[string][]float64{}
	for round := range *grammarRounds {
		seed := round + 1
		prompt := "Write the record as JSON:"
		for _, mode := range []string{"free", "schema"} {
			// The same sampling chain on both: llama.cpp's defaults, explicit.
			llama := map[string]any{"prompt": prompt, "temperature": *grammarTemp, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "seed": seed, "n_predict": 128, "ignore_eos": true, "cache_prompt": false}
			loom := map[string]any{"model": "", "prompt": prompt, "temperature": *grammarTemp, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "seed": seed, "max_tokens": 128, "ignore_eos": true}
			if mode == "schema" {
				llama["json_schema"], llama["n_predict"], llama["ignore_eos"] = schema, 1000, false
				loom["response_format"] = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "record", "schema": schema, "strict": true}}
				loom["max_tokens"], loom["ignore_eos"] = 1000, false
			}
			ps, n, text := post(*grammarLlama+"/completion", llama)
			rates["llama.cpp "+mode] = append(rates["llama.cpp "+mode], ps)
			if mode == "schema" && !json.Valid([]byte(text)) {
				t.Logf("llama.cpp output is not complete JSON (%d tokens)", n)
			}
			ps2, n2, text2 := post(*grammarLoom+"/v1/completions", loom)
			rates["loom "+mode] = append(rates["loom "+mode], ps2)
			if mode == "schema" && !json.Valid([]byte(text2)) {
				t.Errorf("loom output is not JSON: %q", text2)
			}
			t.Logf("round %d %s: llama.cpp %.1f tok/s (%d tokens), loom %.1f tok/s (%d tokens)", round, mode, ps, n, ps2, n2)
		}
	}
	med := func(k string) float64 { s := slices.Clone(rates[k]); slices.Sort(s); return s[len(s)/2] }
	for _, eng := range []string{"llama.cpp", "loom"} {
		t.Logf("%s: median decode %.1f tok/s free, %.1f tok/s with the schema = %.2f×", eng, med(eng+" free"), med(eng+" schema"), med(eng+" schema")/med(eng+" free"))
	}
	fmt.Printf("loom/llama.cpp with the schema: %.2f×\n", med("loom schema")/med("llama.cpp schema"))
}
