package testmodels

// The Hugging Face folders the EmbedPresets files would have been converted
// from: WriteEmbedFolder writes, for an embedding or reranking GGUF file
// (bert, nomic-bert, qwen3 with pooling, gemma-embedding), the folder whose
// conversion by llama.cpp's convert_hf_to_gguf.py (--outtype of the file's
// type; gemma with --sentence-transformers-dense-modules) gives that file's
// tensors: config.json, model.safetensors under transformers' names and
// layouts, the sentence-transformers modules (modules.json, 1_Pooling,
// 2_Dense, 3_Dense), tokenizer.json and tokenizer_config.json of the file's
// vocabulary. It is the inverse of the converter (conversion/bert.py,
// qwen.py, gemma.py, gguf-py's tensor_mapping.py and vocab.py), stated here
// independently of internal/hfmodel, which tests read folders with.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/safetensors"
)

// EmbedFolderOptions choose among the layouts a family's folder may have.
type EmbedFolderOptions struct {
	// BertPooler writes a BERT cross-encoder (a file with cls.output) as
	// transformers' BertForSequenceClassification saves it: the file's
	// cls (dense + tanh) as bert.pooler.dense, its cls.output as
	// classifier. The converter drops the pooler (BertModel.filter_tensors),
	// so the folder converts to the file without cls.weight and cls.bias.
	// Without it, the head is written under the RoBERTa classification
	// head's names (classifier.dense, classifier.out_proj, as bge-reranker
	// has them), which the converter maps to cls and cls.output.
	BertPooler bool
}

// Token types as GGUF stores them.
const (
	ggufTokNormal, ggufTokUnknown, ggufTokControl, ggufTokUserDefined = 1, 2, 3, 4
)

// WriteEmbedFolder writes into dir (created if needed) the Hugging Face
// folder the GGUF file at path would have been converted from. Its
// tensors are stored in the file's types (F32, or F16 matrices with F32
// vectors), so that the converter, keeping each type, writes the file's
// bytes; Gemma's norm scales are stored as w − 1 (F32: exact for the
// scales in [0.5, 2] the presets have).
func WriteEmbedFolder(dir, path string, o EmbedFolderOptions) error {
	f, err := gguf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	arch, _ := f.String("general.architecture")
	w := &folderWriter{f: f, arch: arch, dir: dir, o: o}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	switch arch {
	case "bert":
		err = w.bert()
	case "nomic-bert":
		err = w.nomic()
	case "qwen3":
		err = w.qwen3()
	case "gemma-embedding":
		err = w.gemma()
	default:
		err = fmt.Errorf("%s: architecture %q has no embedding folder", path, arch)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

type folderWriter struct {
	f    *gguf.File
	arch string
	dir  string
	o    EmbedFolderOptions
	ts   []safetensors.Tensor
	err  error
}

func (w *folderWriter) u(key string) uint64 {
	v, err := w.f.Uint(w.arch + "." + key)
	if err != nil && w.err == nil {
		w.err = err
	}
	return v
}

func (w *folderWriter) fl(key string) float64 {
	v, err := w.f.Float(w.arch + "." + key)
	if err != nil && w.err == nil {
		w.err = err
	}
	return float64(float32(v))
}

// pooling is the file's pooling type (0: none stated).
func (w *folderWriter) pooling() uint64 {
	p, err := w.f.Uint(w.arch + ".pooling_type")
	if err != nil {
		return 0
	}
	return p
}

// hfShape reverses ggml dims into a row-major shape.
func hfShape(dims []uint64) []int64 {
	s := make([]int64, len(dims))
	for i, d := range dims {
		s[len(dims)-1-i] = int64(d)
	}
	return s
}

var stDType = map[gguf.Type]string{gguf.F32: "F32", gguf.F16: "F16"}

// tensor reads one of the file's tensors as a safetensors tensor named hf.
func (w *folderWriter) tensor(name, hf string) (safetensors.Tensor, bool) {
	ti, ok := w.f.Tensor(name)
	if !ok {
		return safetensors.Tensor{}, false
	}
	dt, ok := stDType[ti.Type]
	if !ok {
		if w.err == nil {
			w.err = fmt.Errorf("tensor %s: type %v (F32 or F16 expected)", name, ti.Type)
		}
		return safetensors.Tensor{}, false
	}
	return safetensors.Tensor{Name: hf, DType: dt, Shape: hfShape(ti.Dims), Data: w.f.TensorData(ti)}, true
}

// add writes the file's tensor name as hf; a missing tensor is an error.
func (w *folderWriter) add(name, hf string) {
	t, ok := w.tensor(name, hf)
	if !ok {
		if w.err == nil {
			w.err = fmt.Errorf("no tensor %s", name)
		}
		return
	}
	w.ts = append(w.ts, t)
}

// addMinusOne writes a Gemma norm scale as w − 1 (F32).
func (w *folderWriter) addMinusOne(name, hf string) {
	t, ok := w.tensor(name, hf)
	if !ok || t.DType != "F32" {
		if w.err == nil {
			w.err = fmt.Errorf("tensor %s: an F32 norm expected", name)
		}
		return
	}
	out := make([]byte, len(t.Data))
	for i := 0; i < len(out); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(t.Data[i:]))
		if x-1+1 != x && w.err == nil {
			w.err = fmt.Errorf("tensor %s: %v − 1 + 1 is not exact in float32", name, x)
		}
		binary.LittleEndian.PutUint32(out[i:], math.Float32bits(x-1))
	}
	t.Data = out
	w.ts = append(w.ts, t)
}

func (w *folderWriter) writeJSON(name string, v any) {
	if w.err != nil {
		return
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = os.MkdirAll(filepath.Dir(filepath.Join(w.dir, name)), 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(w.dir, name), b, 0o644)
	}
	if err != nil {
		w.err = err
	}
}

func (w *folderWriter) writeTensors(name string, ts []safetensors.Tensor) {
	if w.err != nil {
		return
	}
	var buf bytes.Buffer
	err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"})
	if err == nil {
		err = os.MkdirAll(filepath.Dir(filepath.Join(w.dir, name)), 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(w.dir, name), buf.Bytes(), 0o644)
	}
	if err != nil {
		w.err = err
	}
}

// sentenceTransformers writes modules.json and the Pooling module's
// config.json for the file's pooling (mean, cls or last), with the Dense
// modules given (path → [in, out]) after it and a Normalize module last.
func (w *folderWriter) sentenceTransformers(dim uint64, dense []string) {
	mode := map[uint64]string{1: "pooling_mode_mean_tokens", 2: "pooling_mode_cls_token", 3: "pooling_mode_lasttoken"}[w.pooling()]
	if mode == "" {
		w.err = fmt.Errorf("pooling type %d has no sentence-transformers Pooling mode", w.pooling())
		return
	}
	mods := []any{
		map[string]any{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
		map[string]any{"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
	}
	for _, d := range dense {
		i := len(mods)
		mods = append(mods, map[string]any{"idx": i, "name": fmt.Sprint(i), "path": d, "type": "sentence_transformers.models.Dense"})
	}
	i := len(mods)
	mods = append(mods, map[string]any{"idx": i, "name": fmt.Sprint(i), "path": fmt.Sprintf("%d_Normalize", i), "type": "sentence_transformers.models.Normalize"})
	w.writeJSON("modules.json", mods)
	pool := map[string]any{"word_embedding_dimension": dim, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": false,
		"pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false, "pooling_mode_weightedmean_tokens": false,
		"pooling_mode_lasttoken": false, "include_prompt": true}
	pool[mode] = true
	w.writeJSON("1_Pooling/config.json", pool)
	w.writeJSON("sentence_bert_config.json", map[string]any{"max_seq_length": 512, "do_lower_case": false})
}

// ---------------------------------------------------------------------------
// BERT and nomic-bert

// bert writes BertModel (a sentence-transformers folder with the file's
// pooling) or, for a file with cls.output, BertForSequenceClassification
// with one label.
func (w *folderWriter) bert() error {
	_, rerank := w.f.Tensor("cls.output.weight")
	d := w.u("embedding_length")
	emb, _ := w.f.Tensor("token_embd.weight")
	arch, p := "BertModel", ""
	if rerank {
		arch, p = "BertForSequenceClassification", "bert."
	}
	cfg := map[string]any{"architectures": []string{arch}, "model_type": "bert", "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
		"hidden_dropout_prob": 0.1, "hidden_size": d, "initializer_range": 0.02, "intermediate_size": w.u("feed_forward_length"),
		"layer_norm_eps": w.fl("attention.layer_norm_epsilon"), "max_position_embeddings": w.u("context_length"),
		"num_attention_heads": w.u("attention.head_count"), "num_hidden_layers": w.u("block_count"), "pad_token_id": 0,
		"position_embedding_type": "absolute", "type_vocab_size": 2, "use_cache": true, "vocab_size": emb.Dims[1]}
	if tt, ok := w.f.Tensor("token_types.weight"); ok {
		cfg["type_vocab_size"] = tt.Dims[1]
	}
	if rerank {
		labels, err := w.f.Strings(w.arch + ".classifier.output_labels")
		if err != nil {
			return err
		}
		id2label, label2id := map[string]any{}, map[string]any{}
		for i, l := range labels {
			id2label[fmt.Sprint(i)], label2id[l] = l, i
		}
		cfg["id2label"], cfg["label2id"] = id2label, label2id
	}
	w.writeJSON("config.json", cfg)

	w.add("token_embd.weight", p+"embeddings.word_embeddings.weight")
	w.add("position_embd.weight", p+"embeddings.position_embeddings.weight")
	w.add("token_types.weight", p+"embeddings.token_type_embeddings.weight")
	w.add("token_embd_norm.weight", p+"embeddings.LayerNorm.weight")
	w.add("token_embd_norm.bias", p+"embeddings.LayerNorm.bias")
	// the position ids buffer older checkpoints carry (the converter drops it)
	ctx := int(w.u("context_length"))
	ids := make([]byte, 8*ctx)
	for i := range ctx {
		binary.LittleEndian.PutUint64(ids[8*i:], uint64(i))
	}
	w.ts = append(w.ts, safetensors.Tensor{Name: p + "embeddings.position_ids", DType: "I64", Shape: []int64{1, int64(ctx)}, Data: ids})
	for l := range int(w.u("block_count")) {
		b, h := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("%sencoder.layer.%d.", p, l)
		for _, m := range [][2]string{{"attn_q", "attention.self.query"}, {"attn_k", "attention.self.key"}, {"attn_v", "attention.self.value"},
			{"attn_output", "attention.output.dense"}, {"attn_output_norm", "attention.output.LayerNorm"}, {"ffn_up", "intermediate.dense"},
			{"ffn_down", "output.dense"}, {"layer_output_norm", "output.LayerNorm"}} {
			w.add(b+m[0]+".weight", h+m[1]+".weight")
			w.add(b+m[0]+".bias", h+m[1]+".bias")
		}
	}
	switch {
	case rerank && w.o.BertPooler:
		w.add("cls.weight", "bert.pooler.dense.weight")
		w.add("cls.bias", "bert.pooler.dense.bias")
		w.add("cls.output.weight", "classifier.weight")
		w.add("cls.output.bias", "classifier.bias")
	case rerank:
		w.add("cls.weight", "classifier.dense.weight")
		w.add("cls.bias", "classifier.dense.bias")
		w.add("cls.output.weight", "classifier.out_proj.weight")
		w.add("cls.output.bias", "classifier.out_proj.bias")
	default:
		// bge's checkpoints keep BertModel's pooler, which the converter
		// drops: any values do (these are the first layer's query)
		w.add("blk.0.attn_q.weight", "pooler.dense.weight")
		w.add("blk.0.attn_q.bias", "pooler.dense.bias")
		w.sentenceTransformers(d, nil)
	}
	w.writeTensors("model.safetensors", w.ts)
	w.wordPiece()
	return w.err
}

// nomic writes NomicBertModel (nomic-embed-text-v1.5's config and names:
// Wqkv fused, fc11 the up projection, fc12 the gate).
func (w *folderWriter) nomic() error {
	d := w.u("embedding_length")
	emb, _ := w.f.Tensor("token_embd.weight")
	ctx := w.u("context_length")
	if ctx != 2048 {
		return fmt.Errorf("context %d: nomic-bert folders state 8192 positions trained on 2048", ctx)
	}
	cfg := map[string]any{"architectures": []string{"NomicBertModel"}, "model_type": "nomic_bert", "activation_function": "swiglu",
		"bos_token_id": nil, "eos_token_id": nil, "causal": false, "embd_pdrop": 0.0, "fused_bias_fc": true, "fused_dropout_add_ln": true,
		"initializer_range": 0.02, "layer_norm_epsilon": w.fl("attention.layer_norm_epsilon"), "max_trained_positions": 2048,
		"mlp_fc1_bias": false, "mlp_fc2_bias": false, "n_embd": d, "n_head": w.u("attention.head_count"), "n_inner": w.u("feed_forward_length"),
		"n_layer": w.u("block_count"), "n_positions": 8192, "pad_vocab_size_multiple": 64, "parallel_block": false, "prenorm": false,
		"qkv_proj_bias": false, "rotary_emb_base": w.fl("rope.freq_base"), "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": false,
		"rotary_emb_scale_base": nil, "rotary_scaling_factor": nil, "type_vocab_size": 2, "use_flash_attn": true, "vocab_size": emb.Dims[1]}
	w.writeJSON("config.json", cfg)
	w.add("token_embd.weight", "embeddings.word_embeddings.weight")
	w.add("token_types.weight", "embeddings.token_type_embeddings.weight")
	w.add("token_embd_norm.weight", "emb_ln.weight")
	w.add("token_embd_norm.bias", "emb_ln.bias")
	for l := range int(w.u("block_count")) {
		b, h := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("encoder.layers.%d.", l)
		for _, m := range [][2]string{{"attn_qkv.weight", "attn.Wqkv.weight"}, {"attn_output.weight", "attn.out_proj.weight"},
			{"attn_output_norm.weight", "norm1.weight"}, {"attn_output_norm.bias", "norm1.bias"}, {"ffn_up.weight", "mlp.fc11.weight"},
			{"ffn_gate.weight", "mlp.fc12.weight"}, {"ffn_down.weight", "mlp.fc2.weight"}, {"layer_output_norm.weight", "norm2.weight"},
			{"layer_output_norm.bias", "norm2.bias"}} {
			w.add(b+m[0], h+m[1])
		}
	}
	w.sentenceTransformers(d, nil)
	w.writeTensors("model.safetensors", w.ts)
	w.wordPiece()
	return w.err
}

// wordPiece writes the BERT tokenizer of the file's vocabulary (the
// converter's phantom-space form undone: "▁x" is the word x, a control
// token itself, any other piece "##x"), as bge-small-en-v1.5's
// tokenizer.json and tokenizer_config.json have it.
func (w *folderWriter) wordPiece() {
	if w.err != nil {
		return
	}
	toks, err := w.f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		w.err = err
		return
	}
	types, err := w.f.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		w.err = err
		return
	}
	vocab := map[string]int{}
	var added []any
	for i, s := range toks {
		switch {
		case types[i] == ggufTokControl || types[i] == ggufTokUnknown:
			added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false, "rstrip": false,
				"normalized": false, "special": true})
		case strings.HasPrefix(s, "\u2581"):
			s = strings.TrimPrefix(s, "\u2581")
		case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"): // the older converter kept [unusedN] as is
		default:
			s = "##" + s
		}
		if _, dup := vocab[s]; dup {
			w.err = fmt.Errorf("vocabulary: %q twice", s)
			return
		}
		vocab[s] = i
	}
	name := func(key, def string) string {
		id, err := w.f.Uint("tokenizer.ggml." + key)
		if err != nil || id >= uint64(len(toks)) {
			return def
		}
		return toks[id]
	}
	cls, sep := name("cls_token_id", "[CLS]"), name("seperator_token_id", "[SEP]")
	sp := func(s string) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": s, "type_id": 0}}
	}
	seq := func(s string, ty int) map[string]any {
		return map[string]any{"Sequence": map[string]any{"id": s, "type_id": ty}}
	}
	special := map[string]any{}
	for _, s := range []string{cls, sep} {
		special[s] = map[string]any{"id": s, "ids": []int{vocab[s]}, "tokens": []string{s}}
	}
	lower, err := w.f.Bool("tokenizer.ggml.normalizer.lowercase", true)
	if err != nil {
		w.err = err
		return
	}
	j := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil,
		"added_tokens":  added,
		"normalizer":    map[string]any{"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": lower},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{sp(cls), seq("A", 0), sp(sep)},
			"pair":           []any{sp(cls), seq("A", 0), sp(sep), seq("B", 1), sp(sep)},
			"special_tokens": special},
		"decoder": map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model":   map[string]any{"type": "WordPiece", "unk_token": name("unknown_token_id", "[UNK]"), "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
	w.writeJSON("tokenizer.json", j)
	w.writeJSON("tokenizer_config.json", map[string]any{"clean_up_tokenization_spaces": true, "cls_token": cls, "do_basic_tokenize": true,
		"do_lower_case": lower, "mask_token": name("mask_token_id", "[MASK]"), "model_max_length": 512, "never_split": nil,
		"pad_token": name("padding_token_id", "[PAD]"), "sep_token": sep, "strip_accents": nil, "tokenize_chinese_chars": true,
		"tokenizer_class": "BertTokenizer", "unk_token": name("unknown_token_id", "[UNK]")})
}

// ---------------------------------------------------------------------------
// Qwen3-Embedding, Qwen3-Reranker

// qwen3 writes Qwen3-Embedding (pooling last: the base model as
// sentence-transformers saves it, without "model.", and a Pooling module
// with lasttoken) or, for pooling rank, Qwen3-Reranker (Qwen3ForCausalLM
// as released: "model." names, tied, README.md titled Qwen3-Reranker,
// which the converter recognizes it by; its cls.output.weight is the
// embeddings' yes and no rows, not a tensor of the folder).
func (w *folderWriter) qwen3() error {
	rerank := w.pooling() == 4
	emb, _ := w.f.Tensor("token_embd.weight")
	if _, ok := w.f.Tensor("output.weight"); ok {
		return fmt.Errorf("an untied head: the presets are tied")
	}
	toks, err := w.f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return err
	}
	tokID := func(key string) any {
		id, err := w.f.Uint("tokenizer.ggml." + key)
		if err != nil {
			return nil
		}
		return id
	}
	cfg := map[string]any{"architectures": []string{"Qwen3ForCausalLM"}, "model_type": "qwen3", "attention_bias": false, "attention_dropout": 0.0,
		"head_dim": w.u("attention.key_length"), "hidden_act": "silu", "hidden_size": w.u("embedding_length"), "initializer_range": 0.02,
		"intermediate_size": w.u("feed_forward_length"), "max_position_embeddings": w.u("context_length"), "max_window_layers": w.u("block_count"),
		"num_attention_heads": w.u("attention.head_count"), "num_hidden_layers": w.u("block_count"), "num_key_value_heads": w.u("attention.head_count_kv"),
		"rms_norm_eps": w.fl("attention.layer_norm_rms_epsilon"), "rope_scaling": nil, "rope_theta": w.fl("rope.freq_base"), "sliding_window": nil,
		"tie_word_embeddings": true, "use_cache": true, "use_sliding_window": false, "vocab_size": emb.Dims[1],
		"bos_token_id": tokID("bos_token_id"), "eos_token_id": tokID("eos_token_id")}
	w.writeJSON("config.json", cfg)
	p := ""
	if rerank {
		p = "model."
		if err := os.WriteFile(filepath.Join(w.dir, "README.md"), []byte("# Qwen3-Reranker-mini\n\nA reduced Qwen3-Reranker with random weights.\n"), 0o644); err != nil {
			return err
		}
	}
	w.add("token_embd.weight", p+"embed_tokens.weight")
	for l := range int(w.u("block_count")) {
		b, h := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("%slayers.%d.", p, l)
		for _, m := range [][2]string{{"attn_norm", "input_layernorm"}, {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"},
			{"attn_v", "self_attn.v_proj"}, {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
			{"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"}, {"ffn_gate", "mlp.gate_proj"},
			{"ffn_up", "mlp.up_proj"}, {"ffn_down", "mlp.down_proj"}} {
			w.add(b+m[0]+".weight", h+m[1]+".weight")
		}
	}
	w.add("output_norm.weight", p+"norm.weight")
	if !rerank {
		w.sentenceTransformers(w.u("embedding_length"), nil)
	}
	w.writeTensors("model.safetensors", w.ts)

	// tokenizer.json: byte-level BPE with Qwen2's split, the file's merges
	// and its added tokens; an appended EOS (add_eos_token) is the
	// post-processor's template, whose last token SpecialVocab makes EOS
	// (the file's eos), moving tokenizer_config.json's eos_token to EOT.
	types, err := w.f.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		return err
	}
	merges, err := w.f.Strings("tokenizer.ggml.merges")
	if err != nil {
		return err
	}
	vocab := map[string]int{}
	var added []any
	for i, s := range toks {
		switch types[i] {
		case ggufTokNormal:
			vocab[s] = i
		case ggufTokControl, ggufTokUserDefined:
			added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false, "rstrip": false,
				"normalized": false, "special": types[i] == ggufTokControl})
		default:
			return fmt.Errorf("token %d %q: type %d", i, s, types[i])
		}
	}
	name := func(key string) any {
		if id, ok := tokID(key).(uint64); ok && id < uint64(len(toks)) {
			return toks[id]
		}
		return nil
	}
	addEOS, _ := w.f.Bool("tokenizer.ggml.add_eos_token", false)
	addBOS, _ := w.f.Bool("tokenizer.ggml.add_bos_token", false)
	eosToken := name("eos_token_id")
	j := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`},
				"behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}}},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab, "merges": merges},
	}
	if addEOS {
		e := eosToken.(string)
		a := map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}
		b := map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}
		end := map[string]any{"SpecialToken": map[string]any{"id": e, "type_id": 0}}
		j["post_processor"] = map[string]any{"type": "TemplateProcessing", "single": []any{a, end}, "pair": []any{a, end, b, end},
			"special_tokens": map[string]any{e: map[string]any{"id": e, "ids": []any{tokID("eos_token_id")}, "tokens": []any{e}}}}
		eosToken = name("eot_token_id")
	}
	w.writeJSON("tokenizer.json", j)
	w.writeJSON("tokenizer_config.json", map[string]any{"add_bos_token": addBOS, "add_prefix_space": false, "bos_token": nil,
		"clean_up_tokenization_spaces": false, "eos_token": eosToken, "errors": "replace", "model_max_length": 131072,
		"pad_token": name("padding_token_id"), "split_special_tokens": false, "tokenizer_class": "Qwen2Tokenizer", "unk_token": nil})
	return w.err
}

// ---------------------------------------------------------------------------
// EmbeddingGemma

// gemma writes EmbeddingGemma: Gemma3TextModel as sentence-transformers
// saves it (no "model."), norm scales as w − 1, the Pooling module, and
// dense_2 / dense_3 as the 2_Dense and 3_Dense modules' linear.weight.
func (w *folderWriter) gemma() error {
	emb, _ := w.f.Tensor("token_embd.weight")
	n := int(w.u("block_count"))
	hd := w.u("attention.key_length")
	layerTypes := make([]string, n)
	for i := range layerTypes {
		layerTypes[i] = "sliding_attention"
		if (i+1)%6 == 0 {
			layerTypes[i] = "full_attention"
		}
	}
	tokID := func(key string) any {
		id, err := w.f.Uint("tokenizer.ggml." + key)
		if err != nil {
			return nil
		}
		return id
	}
	cfg := map[string]any{"architectures": []string{"Gemma3TextModel"}, "model_type": "gemma3_text", "attention_bias": false,
		"attention_dropout": 0.0, "attn_logit_softcapping": nil, "final_logit_softcapping": nil, "head_dim": hd,
		"hidden_activation": "gelu_pytorch_tanh", "hidden_size": w.u("embedding_length"), "initializer_range": 0.02,
		"intermediate_size": w.u("feed_forward_length"), "layer_types": layerTypes, "max_position_embeddings": w.u("context_length"),
		"num_attention_heads": w.u("attention.head_count"), "num_hidden_layers": n, "num_key_value_heads": w.u("attention.head_count_kv"),
		"query_pre_attn_scalar": hd, "rms_norm_eps": w.fl("attention.layer_norm_rms_epsilon"), "rope_local_base_freq": w.fl("rope.freq_base_swa"),
		"rope_scaling": nil, "rope_theta": w.fl("rope.freq_base"), "sliding_window": w.u("attention.sliding_window"),
		"use_bidirectional_attention": true, "use_cache": true, "vocab_size": emb.Dims[1],
		"bos_token_id": tokID("bos_token_id"), "eos_token_id": tokID("eos_token_id"), "pad_token_id": tokID("padding_token_id")}
	w.writeJSON("config.json", cfg)
	w.add("token_embd.weight", "embed_tokens.weight")
	for l := range n {
		b, h := fmt.Sprintf("blk.%d.", l), fmt.Sprintf("layers.%d.", l)
		for _, m := range [][2]string{{"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"}, {"attn_v", "self_attn.v_proj"},
			{"attn_output", "self_attn.o_proj"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_up", "mlp.up_proj"}, {"ffn_down", "mlp.down_proj"}} {
			w.add(b+m[0]+".weight", h+m[1]+".weight")
		}
		for _, m := range [][2]string{{"attn_norm", "input_layernorm"}, {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"},
			{"post_attention_norm", "post_attention_layernorm"}, {"ffn_norm", "pre_feedforward_layernorm"}, {"post_ffw_norm", "post_feedforward_layernorm"}} {
			w.addMinusOne(b+m[0]+".weight", h+m[1]+".weight")
		}
	}
	w.addMinusOne("output_norm.weight", "norm.weight")
	w.writeTensors("model.safetensors", w.ts)
	var dense []string
	for _, m := range []struct{ name, dir string }{{"dense_2", "2_Dense"}, {"dense_3", "3_Dense"}} {
		t, ok := w.tensor(m.name+".weight", "linear.weight")
		if !ok {
			continue
		}
		dense = append(dense, m.dir)
		w.writeJSON(m.dir+"/config.json", map[string]any{"in_features": w.u(m.name + "_feat_in"), "out_features": w.u(m.name + "_feat_out"),
			"bias": false, "activation_function": "torch.nn.modules.linear.Identity"})
		w.writeTensors(m.dir+"/model.safetensors", []safetensors.Tensor{t})
	}
	w.sentenceTransformers(w.u("embedding_length"), dense)
	w.sentencePiece()
	return w.err
}

// sentencePiece writes a SentencePiece vocabulary (tokenizer model llama)
// as transformers converts one to tokenizer.json: BPE with byte fallback,
// merges ranked by the score of the piece they make, spaces as '▁' (with
// no '▁' prepended when add_space_prefix is false, as Gemma's), BOS / EOS
// added by the post-processor's template as add_bos_token /
// add_eos_token say.
func (w *folderWriter) sentencePiece() {
	if w.err != nil {
		return
	}
	toks, err := w.f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		w.err = err
		return
	}
	types, err := w.f.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		w.err = err
		return
	}
	scores, err := w.f.Float32s("tokenizer.ggml.scores")
	if err != nil {
		w.err = err
		return
	}
	vocab := map[string]int{}
	var added []any
	for i, s := range toks {
		if _, dup := vocab[s]; dup {
			w.err = fmt.Errorf("vocabulary: %q twice", s)
			return
		}
		vocab[s] = i
		if types[i] == ggufTokControl || types[i] == ggufTokUnknown || types[i] == ggufTokUserDefined {
			added = append(added, map[string]any{"id": i, "content": s, "single_word": false, "lstrip": false, "rstrip": false,
				"normalized": false, "special": types[i] != ggufTokUserDefined})
		}
	}
	name := func(key string) string {
		id, err := w.f.Uint("tokenizer.ggml." + key)
		if err != nil || id >= uint64(len(toks)) {
			return ""
		}
		return toks[id]
	}
	bos, eos, unk := name("bos_token_id"), name("eos_token_id"), name("unknown_token_id")
	addBOS, _ := w.f.Bool("tokenizer.ggml.add_bos_token", true)
	addEOS, _ := w.f.Bool("tokenizer.ggml.add_eos_token", false)
	prefix, _ := w.f.Bool("tokenizer.ggml.add_space_prefix", true)
	norm := []any{map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "\u2581"}}
	if prefix {
		norm = append([]any{map[string]any{"type": "Prepend", "prepend": "\u2581"}}, norm...)
	}
	a := map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}
	b := map[string]any{"Sequence": map[string]any{"id": "B", "type_id": 1}}
	var single, pair []any
	specials := map[string]any{}
	if addBOS && bos != "" {
		t := map[string]any{"SpecialToken": map[string]any{"id": bos, "type_id": 0}}
		single, pair = append(single, t), append(pair, t)
		specials[bos] = map[string]any{"id": bos, "ids": []int{vocab[bos]}, "tokens": []string{bos}}
	}
	single, pair = append(single, a), append(pair, a)
	if addEOS && eos != "" {
		pair = append(pair, map[string]any{"SpecialToken": map[string]any{"id": eos, "type_id": 0}})
	}
	if addBOS && bos != "" {
		pair = append(pair, map[string]any{"SpecialToken": map[string]any{"id": bos, "type_id": 1}})
	}
	pair = append(pair, b)
	if addEOS && eos != "" {
		t := map[string]any{"SpecialToken": map[string]any{"id": eos, "type_id": 0}}
		single, pair = append(single, t), append(pair, map[string]any{"SpecialToken": map[string]any{"id": eos, "type_id": 1}})
		specials[eos] = map[string]any{"id": eos, "ids": []int{vocab[eos]}, "tokens": []string{eos}}
	}
	j := map[string]any{
		"version": "1.0", "truncation": nil, "padding": nil, "added_tokens": added,
		"normalizer":     map[string]any{"type": "Sequence", "normalizers": norm},
		"pre_tokenizer":  nil,
		"post_processor": map[string]any{"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": specials},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "\u2581"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"}}},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": unk, "continuing_subword_prefix": nil, "end_of_word_suffix": nil,
			"fuse_unk": true, "byte_fallback": true, "ignore_merges": false, "vocab": vocab, "merges": spmMerges(toks, scores, types, vocab)},
	}
	w.writeJSON("tokenizer.json", j)
	tc := map[string]any{"add_bos_token": addBOS, "add_eos_token": addEOS, "clean_up_tokenization_spaces": false,
		"model_max_length": 2048, "padding_side": "right", "spaces_between_special_tokens": false, "tokenizer_class": "GemmaTokenizer"}
	for k, v := range map[string]string{"bos_token": bos, "eos_token": eos, "unk_token": unk, "pad_token": name("padding_token_id")} {
		if v != "" {
			tc[k] = v
		}
	}
	w.writeJSON("tokenizer_config.json", tc)
}

// spmMerges ranks every split of each normal piece into two pieces of the
// vocabulary by the piece's score (highest first), then by the pieces'
// ids, as transformers' SentencePieceExtractor does.
func spmMerges(toks []string, scores []float32, types []int32, vocab map[string]int) []string {
	type merge struct {
		l, r       string
		score      float32
		id, li, ri int
	}
	var ms []merge
	for id, s := range toks {
		if types[id] != ggufTokNormal {
			continue
		}
		for i := 1; i < len(s); i++ {
			l, r := s[:i], s[i:]
			li, okl := vocab[l]
			ri, okr := vocab[r]
			if okl && okr {
				ms = append(ms, merge{l, r, scores[id], id, li, ri})
			}
		}
	}
	sort.SliceStable(ms, func(a, b int) bool {
		x, y := ms[a], ms[b]
		if x.score != y.score {
			return x.score > y.score
		}
		if x.id != y.id {
			return x.id < y.id
		}
		if x.li != y.li {
			return x.li < y.li
		}
		return x.ri < y.ri
	})
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.l + " " + m.r
	}
	return out
}
