package hfmodel

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/safetensors"
)

// The embedding and reranking folders (embed.go): tiny folders of each
// family, their metadata and tensors checked against what
// convert_hf_to_gguf.py (2026) writes for them — the expected tables are
// read from conversion/bert.py (BertModel, NomicBertModel), qwen.py
// (Qwen3Model), gemma.py (EmbeddingGemma), base.py (TextModel.
// set_gguf_parameters, _try_set_pooling_type) and gguf-py's vocab.py
// (SpecialVocab).

// f32s makes an F32 tensor whose values are seed, seed+1, … scaled.
func f32t(name string, seed int, shape ...int64) safetensors.Tensor {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	b := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(seed)+float32(i)/1024))
	}
	return safetensors.Tensor{Name: name, DType: "F32", Shape: shape, Data: b}
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	case string:
		b = []byte(x)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeWeights(t *testing.T, path string, ts []safetensors.Tensor) {
	t.Helper()
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	writeJSONFile(t, path, buf.Bytes())
}

// metaOf opens dir and parses its metadata.
func metaOf(t *testing.T, dir string) (*Folder, *gguf.File) {
	t.Helper()
	fo, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fo.Close() })
	meta, err := fo.MetaFile()
	if err != nil {
		t.Fatal(err)
	}
	return fo, meta
}

// keysOf lists the metadata as "key=value" (arrays by length, or in full
// when short), in order, without the tokenizer's tables.
func keysOf(g *gguf.File) []string {
	var out []string
	for _, kv := range g.KVs {
		v := fmt.Sprint(kv.Value.V)
		switch kv.Key {
		case "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.scores", "general.name":
			continue
		}
		out = append(out, kv.Key+"="+v)
	}
	return out
}

func checkKeys(t *testing.T, g *gguf.File, want []string) {
	t.Helper()
	if got := keysOf(g); !slices.Equal(got, want) {
		t.Errorf("metadata\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
}

func checkTensors(t *testing.T, fo *Folder, want map[string][]uint64) {
	t.Helper()
	got := map[string][]uint64{}
	for _, x := range fo.Tensors {
		got[x.Name] = x.Dims
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tensors\n %v\nwant\n %v", got, want)
	}
}

// bgeVocab is ggml-vocab-bert-bge.gguf's vocabulary as BERT's vocab.txt
// (the converter's phantom-space form undone) and its control tokens.
func bgeVocab(t *testing.T) (toks []string, control map[int]bool, base string) {
	base = filepath.Join(testmodels.Shared(t), "models", "vocab", "ggml-vocab-bert-bge.gguf")
	g, err := gguf.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	toks, err = g.Strings("tokenizer.ggml.tokens")
	if err != nil {
		t.Fatal(err)
	}
	types, err := g.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		t.Fatal(err)
	}
	control = map[int]bool{}
	out := make([]string, len(toks))
	for i, s := range toks {
		switch {
		case types[i] == ttControl:
			control[i] = true
			out[i] = s
		case strings.HasPrefix(s, "\u2581"):
			out[i] = strings.TrimPrefix(s, "\u2581")
		case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"): // the older converter kept [unusedN] as is
			out[i] = s
		default:
			out[i] = "##" + s
		}
	}
	return out, control, base
}

// bertTokenizerJSON is a tokenizer.json as transformers writes
// bge-small-en-v1.5's.
func bertTokenizerJSON(toks []string, control map[int]bool) map[string]any {
	vocab := map[string]int{}
	for i, s := range toks {
		vocab[s] = i
	}
	var added []any
	for i := range toks {
		if control[i] {
			added = append(added, map[string]any{"id": i, "content": toks[i], "special": true, "normalized": false})
		}
	}
	sp := func(s string) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": s, "type_id": 0}}
	}
	seq := func(s string, ty int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": s, "type_id": ty}}
	}
	return map[string]any{
		"added_tokens":  added,
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single": []any{sp("[CLS]"), seq("A", 0), sp("[SEP]")},
			"pair":   []any{sp("[CLS]"), seq("A", 0), sp("[SEP]"), seq("B", 1), sp("[SEP]")}},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model":   map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
}

var bertTokenizerConfig = map[string]any{"cls_token": "[CLS]", "do_lower_case": true, "mask_token": "[MASK]", "model_max_length": 512,
	"pad_token": "[PAD]", "sep_token": "[SEP]", "strip_accents": nil, "tokenize_chinese_chars": true, "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]"}

// bertFolder writes a 2-layer BERT (hidden 8, 2 heads, FFN 16) with the
// bge vocabulary; arch and extra config keys as given.
func bertFolder(t *testing.T, arch string, over map[string]any, extra []safetensors.Tensor, vocabTxt bool) string {
	toks, control, _ := bgeVocab(t)
	dir := t.TempDir()
	cfg := map[string]any{"architectures": []string{arch}, "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_size": 8,
		"initializer_range": 0.02, "intermediate_size": 16, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
		"num_attention_heads": 2, "num_hidden_layers": 2, "pad_token_id": 0, "position_embedding_type": "absolute", "type_vocab_size": 2,
		"vocab_size": len(toks)}
	for k, v := range over {
		cfg[k] = v
	}
	writeJSONFile(t, filepath.Join(dir, "config.json"), cfg)
	p := ""
	if arch != "BertModel" {
		p = "bert."
	}
	ts := []safetensors.Tensor{
		f32t(p+"embeddings.word_embeddings.weight", 1, int64(len(toks)), 8), f32t(p+"embeddings.position_embeddings.weight", 2, 512, 8),
		f32t(p+"embeddings.token_type_embeddings.weight", 3, 2, 8), f32t(p+"embeddings.LayerNorm.weight", 4, 8), f32t(p+"embeddings.LayerNorm.bias", 5, 8),
		{Name: p + "embeddings.position_ids", DType: "I64", Shape: []int64{1, 512}, Data: make([]byte, 8*512)},
		f32t(p+"pooler.dense.weight", 6, 8, 8), f32t(p+"pooler.dense.bias", 7, 8),
	}
	for l := range 2 {
		q := fmt.Sprintf("%sencoder.layer.%d.", p, l)
		for i, n := range []string{"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"} {
			ts = append(ts, f32t(q+n+".weight", 10*l+i, 8, 8), f32t(q+n+".bias", 10*l+i, 8))
		}
		ts = append(ts, f32t(q+"attention.output.LayerNorm.weight", 1, 8), f32t(q+"attention.output.LayerNorm.bias", 2, 8),
			f32t(q+"intermediate.dense.weight", 3, 16, 8), f32t(q+"intermediate.dense.bias", 4, 16),
			f32t(q+"output.dense.weight", 5, 8, 16), f32t(q+"output.dense.bias", 6, 8),
			f32t(q+"output.LayerNorm.weight", 7, 8), f32t(q+"output.LayerNorm.bias", 8, 8))
	}
	writeWeights(t, filepath.Join(dir, "model.safetensors"), append(ts, extra...))
	if vocabTxt {
		writeJSONFile(t, filepath.Join(dir, "vocab.txt"), strings.Join(toks, "\n")+"\n")
	} else {
		writeJSONFile(t, filepath.Join(dir, "tokenizer.json"), bertTokenizerJSON(toks, control))
	}
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), bertTokenizerConfig)
	return dir
}

func bertBlockTensors(want map[string][]uint64) {
	for l := range 2 {
		b := fmt.Sprintf("blk.%d.", l)
		for _, n := range []string{"attn_q", "attn_k", "attn_v", "attn_output"} {
			want[b+n+".weight"], want[b+n+".bias"] = []uint64{8, 8}, []uint64{8}
		}
		for _, n := range []string{"attn_output_norm", "layer_output_norm"} {
			want[b+n+".weight"], want[b+n+".bias"] = []uint64{8}, []uint64{8}
		}
		want[b+"ffn_up.weight"], want[b+"ffn_up.bias"] = []uint64{8, 16}, []uint64{16}
		want[b+"ffn_down.weight"], want[b+"ffn_down.bias"] = []uint64{16, 8}, []uint64{8}
	}
}

// TestBertFolder: a sentence-transformers bge-style folder (BertModel,
// modules.json with CLS pooling) maps as BertModel.set_gguf_parameters,
// set_vocab (phantom-space WordPiece, token_type_count) and SpecialVocab
// write it, and its tokenizer.json (and, without it, vocab.txt) gives
// llama.cpp's ids on ggml-vocab-bert-bge's test strings.
func TestBertFolder(t *testing.T) {
	_, _, base := bgeVocab(t)
	texts, want := readVectors(t, base)
	for _, vocabTxt := range []bool{false, true} {
		t.Run(fmt.Sprintf("vocab.txt=%v", vocabTxt), func(t *testing.T) {
			dir := bertFolder(t, "BertModel", nil, nil, vocabTxt)
			writeJSONFile(t, filepath.Join(dir, "modules.json"), []any{
				map[string]any{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
				map[string]any{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
				map[string]any{"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}})
			writeJSONFile(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{"word_embedding_dimension": 8,
				"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false})
			fo, meta := metaOf(t, dir)
			if fo.Arch != "bert" {
				t.Fatalf("arch %s", fo.Arch)
			}
			keys := []string{"general.architecture=bert",
				"bert.block_count=2", "bert.context_length=512", "bert.embedding_length=8", "bert.feed_forward_length=16",
				"bert.attention.head_count=2", "bert.attention.layer_norm_epsilon=1e-12", "bert.attention.causal=false", "bert.pooling_type=2",
				"tokenizer.ggml.token_type_count=2", "tokenizer.ggml.model=bert", "tokenizer.ggml.pre=jina-v2-en"}
			if vocabTxt { // no tokenizer.json: SpecialVocab finds only config.json's pad_token_id
				keys = append(keys, "tokenizer.ggml.padding_token_id=0")
			} else {
				keys = append(keys, "tokenizer.ggml.bos_token_id=101", "tokenizer.ggml.eos_token_id=102", "tokenizer.ggml.unknown_token_id=100",
					"tokenizer.ggml.seperator_token_id=102", "tokenizer.ggml.padding_token_id=0", "tokenizer.ggml.mask_token_id=103",
					"tokenizer.ggml.add_bos_token=true", "tokenizer.ggml.add_eos_token=true", "tokenizer.ggml.add_sep_token=false",
					"tokenizer.ggml.normalizer.lowercase=true")
			}
			checkKeys(t, meta, keys)
			toks, _ := meta.Strings("tokenizer.ggml.tokens")
			for id, s := range map[int]string{0: "[PAD]", 1: "\u2581[unused0]", 101: "[CLS]", 1996: "\u2581the", 2094: "d"} {
				if toks[id] != s {
					t.Errorf("token %d = %q, want %q", id, toks[id], s)
				}
			}
			wantT := map[string][]uint64{"token_embd.weight": {8, 30522}, "position_embd.weight": {8, 512}, "token_types.weight": {8, 2},
				"token_embd_norm.weight": {8}, "token_embd_norm.bias": {8}}
			bertBlockTensors(wantT)
			checkTensors(t, fo, wantT)
			v, err := fo.Tokenizer.NewVocab()
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, s := range texts {
				if got := v.Encode(s, false, false); !slices.Equal(got, want[i]) {
					if bad++; bad <= 3 {
						t.Errorf("%q:\n got %v\nwant %v", s, got, want[i])
					}
				}
			}
			if got := v.Encode("Hello world", true, false); !slices.Equal(got, []int32{101, 7592, 2088, 102}) {
				t.Errorf("with specials: %v", got)
			}
		})
	}
}

// readVectors reads llama.cpp's .inp/.out test vectors.
func readVectors(t *testing.T, base string) ([]string, [][]int32) {
	inp, err := os.ReadFile(base + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(base + ".out")
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if texts[len(texts)-1] == "" {
		texts = texts[:len(texts)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	var ids [][]int32
	for _, line := range lines {
		var row []int32
		for _, f := range strings.Fields(line) {
			var v int32
			fmt.Sscan(f, &v)
			row = append(row, v)
		}
		ids = append(ids, row)
	}
	if len(texts) != len(ids) {
		t.Fatalf("%d inputs, %d outputs", len(texts), len(ids))
	}
	return texts, ids
}

// TestBertReranker: a BertForSequenceClassification cross-encoder (one
// label) keeps its labels and its classifier as cls.output (BertModel.
// modify_tensors); the pooler is dropped, as the converter drops it.
func TestBertReranker(t *testing.T) {
	dir := bertFolder(t, "BertForSequenceClassification", map[string]any{"id2label": map[string]any{"0": "LABEL_0"}, "label2id": map[string]any{"LABEL_0": 0}},
		[]safetensors.Tensor{f32t("classifier.weight", 9, 1, 8), f32t("classifier.bias", 9, 1)}, false)
	fo, meta := metaOf(t, dir)
	if l, _ := meta.Strings("bert.classifier.output_labels"); !slices.Equal(l, []string{"LABEL_0"}) {
		t.Errorf("labels %v", l)
	}
	if _, err := meta.Uint("bert.pooling_type"); err == nil {
		t.Errorf("pooling_type written without a sentence-transformers Pooling module")
	}
	wantT := map[string][]uint64{"token_embd.weight": {8, 30522}, "position_embd.weight": {8, 512}, "token_types.weight": {8, 2},
		"token_embd_norm.weight": {8}, "token_embd_norm.bias": {8}, "cls.output.weight": {8, 1}, "cls.output.bias": {1}}
	bertBlockTensors(wantT)
	checkTensors(t, fo, wantT)

	// two dummy labels (AutoConfig's default): none kept, classifier is cls
	dir = bertFolder(t, "BertForSequenceClassification", map[string]any{"id2label": map[string]any{"0": "LABEL_0", "1": "LABEL_1"}},
		[]safetensors.Tensor{f32t("classifier.weight", 9, 2, 8), f32t("classifier.bias", 9, 2)}, false)
	fo, meta = metaOf(t, dir)
	if _, ok := fo.Tensor("cls.weight"); !ok {
		t.Errorf("classifier.weight without labels is not cls.weight")
	}
	if l, _ := meta.Strings("bert.classifier.output_labels"); l != nil {
		t.Errorf("labels %v", l)
	}
}

// TestBertRefused: what the converter or Loom's tokenizer cannot take is
// refused, naming the file and field.
func TestBertRefused(t *testing.T) {
	dir := bertFolder(t, "BertModel", map[string]any{"position_embedding_type": "relative_key"}, nil, false)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "position_embedding_type") {
		t.Errorf("relative positions: %v", err)
	}
	dir = bertFolder(t, "BertModel", nil, nil, false)
	toks, control, _ := bgeVocab(t)
	j := bertTokenizerJSON(toks, control)
	j["normalizer"].(map[string]any)["lowercase"] = false
	writeJSONFile(t, filepath.Join(dir, "tokenizer.json"), j)
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "lowercase") {
		t.Errorf("cased: %v", err)
	}
	dir = bertFolder(t, "BertModel", nil, nil, false)
	writeJSONFile(t, filepath.Join(dir, "modules.json"), []any{map[string]any{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}})
	writeJSONFile(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{"pooling_mode_max_tokens": true})
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "1_Pooling/config.json") {
		t.Errorf("max pooling: %v", err)
	}
	cfg := map[string]any{"architectures": []string{"XLMRobertaForSequenceClassification"}}
	d := t.TempDir()
	writeJSONFile(t, filepath.Join(d, "config.json"), cfg)
	if _, err := Open(d); err == nil || !strings.Contains(err.Error(), "Unigram") {
		t.Errorf("XLM-RoBERTa: %v", err)
	}
}
