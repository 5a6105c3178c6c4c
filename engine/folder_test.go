package engine_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/quantize"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestFolderReferences: the TinyStories-656K Hugging Face folder (F32
// safetensors) loaded directly agrees with llama.cpp's recordings of the
// F16 GGUF converted from it, by the recordings' own rules. "Once upon a
// time" tokenizes the same with tokenizer.json as with the GGUF's
// vocabulary; the second prompt does not (llama.cpp's converter stores
// this BPE tokenizer as a SentencePiece vocabulary with every score
// -1000, dropping its merges), so its recorded ids are evaluated as given.
func TestFolderReferences(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	n := 0
	for _, r := range testmodels.References(t) {
		if !strings.HasPrefix(r.File, "real-TinyStories-656K.f16-") {
			continue
		}
		n++
		t.Run(strings.TrimSuffix(r.File, ".jsonl"), func(t *testing.T) {
			checkModel(t, r, dir, r.Prompt == "Once upon a time")
		})
	}
	if n != 2 {
		t.Fatalf("%d TinyStories-656K F16 recordings, want 2", n)
	}
}

// TestFolderTokenizer: a folder tokenizes with its tokenizer.json (BPE
// merges by rank, as transformers does), not as the converted GGUF's
// equal-score vocabulary would; BOS and EOS per tokenizer_config.json.
func TestFolderTokenizer(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	e, err := engine.Load(dir, engine.Options{Threads: 1, CtxLen: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The GGUF's vocabulary gives 1 80 147 201 282 215 286 158 420 177 1168
	// 1662 887 610 57 4 here: "little" is 158 420 177 there, 598 by rank.
	got := e.Tokenize("Once upon a time, there was a little girl named Lily. She loved to play outside!", true, false)
	want := []int32{1, 80, 147, 201, 282, 215, 286, 598, 1662, 887, 610, 57, 4}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if e.Vocab().EOS != 2 || e.Vocab().BOS != 1 || !e.Vocab().AddBOS {
		t.Fatalf("BOS %d EOS %d add_bos %v", e.Vocab().BOS, e.Vocab().EOS, e.Vocab().AddBOS)
	}
}

// TestConvertMatchesLlamaConverter: loom convert --type F16 on the
// TinyStories-656K folder writes the tensors (bytes and types) and the
// hyperparameter and tokenizer metadata of the shared F16 GGUF, which
// llama.cpp's convert_hf_to_gguf.py made from this folder; only the
// publisher's keys (name, URLs, quantizer notes) differ.
func TestConvertMatchesLlamaConverter(t *testing.T) {
	shared := testmodels.Shared(t)
	fo, err := hfmodel.Open(filepath.Join(shared, "models", "tinystories-656k", "hf"))
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	var buf bytes.Buffer
	if err := fo.Convert(&buf, "F16", nil); err != nil {
		t.Fatal(err)
	}
	ours, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want, err := gguf.Open(filepath.Join(shared, "models", "tinystories-656k", "gguf", "TinyStories-656K.f16.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if len(ours.Tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors, the converter's file %d", len(ours.Tensors), len(want.Tensors))
	}
	for i := range want.Tensors {
		w := &want.Tensors[i]
		o, ok := ours.Tensor(w.Name)
		if !ok || o.Type != w.Type || !slices.Equal(o.Dims, w.Dims) || !bytes.Equal(ours.TensorData(o), want.TensorData(w)) {
			t.Errorf("tensor %s differs from the converter's", w.Name)
		}
	}
	checked := 0
	for _, kv := range want.KVs {
		if kv.Key == "general.name" || strings.Contains(kv.Key, "url") || strings.HasPrefix(kv.Key, "mradermacher.") {
			continue
		}
		v, ok := ours.Get(kv.Key)
		if !ok || v.Type != kv.Value.Type || v.String() != kv.Value.String() {
			t.Errorf("%s: %v, the converter's %v", kv.Key, v, kv.Value)
		}
		if kv.Value.Type == gguf.ArrayT { // String() abbreviates arrays: compare them whole
			a, b := v.V.(gguf.Array), kv.Value.V.(gguf.Array)
			if a.Elem != b.Elem || fmt.Sprint(a.Values) != fmt.Sprint(b.Values) {
				t.Errorf("%s: arrays differ", kv.Key)
			}
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("only %d keys compared", checked)
	}
}

// TestConvertLoadsInLlamaCpp: llama.cpp (b4748's refdump) loads loom
// convert's F32 GGUF of the folder, and its logits and greedy tokens agree
// with Loom's on the folder itself, by the recordings' F32 rules.
func TestConvertLoadsInLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	fo, err := hfmodel.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	tmp := t.TempDir()
	out := filepath.Join(tmp, "ts-f32.gguf")
	var buf bytes.Buffer
	if err := fo.Convert(&buf, "F32", nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tool, env := testmodels.LlamaTool(t, "refdump")
	const prompt = "Once upon a time"
	cmd := exec.Command(tool, out, prompt, "32")
	cmd.Env = env
	rec, err := cmd.Output()
	if err != nil {
		t.Fatalf("refdump on the converted file: %v", err)
	}
	path := filepath.Join(tmp, "refdump.jsonl")
	if err := os.WriteFile(path, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	r := testmodels.Ref{File: "refdump-converted-TinyStories-656K-F32.jsonl", Path: path, Prompt: prompt, NGen: 32,
		LogitTol: 0.05, LseTol: 0.02, StableGen: 32}
	checkModel(t, r, dir, true)
}

// TestFolderQuantize: quantizing while loading a folder gives the model
// that loom convert to the same mix gives: the same logits, bit for bit.
func TestFolderQuantize(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	fo, err := hfmodel.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	var buf bytes.Buffer
	if err := fo.Convert(&buf, "F32", nil); err != nil {
		t.Fatal(err)
	}
	f32, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, mix := range []string{"Q8_0", "Q4_K_M", "Q6_K"} {
		ft, _ := quantize.ParseFType(mix)
		var q bytes.Buffer
		if _, err := quantize.Run(f32, &q, ft, quantize.Options{Threads: 2}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), mix+".gguf")
		if err := os.WriteFile(path, q.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		a, err := engine.Load(dir, engine.Options{Threads: 2, CtxLen: 64, Quantize: mix})
		if err != nil {
			t.Fatal(err)
		}
		b, err := engine.Load(path, engine.Options{Threads: 2, CtxLen: 64})
		if err != nil {
			t.Fatal(err)
		}
		ids := b.Tokenize("Once upon a time, there was", true, false)
		la, err := a.Logits(t.Context(), ids)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := b.Logits(t.Context(), ids)
		if err != nil {
			t.Fatal(err)
		}
		for i := range la {
			if !slices.Equal(la[i], lb[i]) {
				t.Fatalf("%s: position %d: logits differ between --quantize on the folder and the quantized file", mix, i)
			}
		}
		a.Close()
		b.Close()
	}
}

// TestFolderSamplingDefaults: generation_config.json's sampling settings
// become the model's defaults (do_sample false: greedy).
func TestFolderSamplingDefaults(t *testing.T) {
	src := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	for _, c := range []struct {
		gen  string
		want map[string]float64
	}{
		{`{"eos_token_id": [2, 0], "do_sample": true, "temperature": 0.7, "top_p": 0.9, "top_k": 20, "repetition_penalty": 1.1}`,
			map[string]float64{"temp": 0.7, "top-p": 0.9, "top-k": 20, "repeat-penalty": 1.1}},
		{`{"do_sample": false, "temperature": 0.6}`, map[string]float64{"temp": 0}},
	} {
		dir := t.TempDir()
		for _, f := range []string{"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"} {
			if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(c.gen), 0o644); err != nil {
			t.Fatal(err)
		}
		e, err := engine.Load(dir, engine.Options{Threads: 1, CtxLen: 32})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.SamplingDefaults(); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.gen, got, c.want)
		}
		if strings.Contains(c.gen, "[2, 0]") && (e.Vocab().EOS != 2 || e.Vocab().EOT != 0) {
			t.Errorf("end tokens EOS %d EOT %d, want 2 and 0", e.Vocab().EOS, e.Vocab().EOT)
		}
		e.Close()
	}
}
