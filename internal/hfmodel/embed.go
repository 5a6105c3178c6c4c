package hfmodel

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/safetensors"
	"github.com/loom-inference/loom/tokenizer"
)

// Embedding and reranking folders as the 2026 converter writes them:
//
//   - BERT (conversion/bert.py BertModel: BertModel, BertForMaskedLM,
//     BertForSequenceClassification): architecture bert, non-causal, the
//     pooling of a sentence-transformers folder (modules.json and its
//     Pooling module's config.json), a classifier's labels (id2label), the
//     WordPiece vocabulary in phantom-space form.
//   - nomic-bert (NomicBertModel): fused QKV, SwiGLU (fc11 up, fc12 gate),
//     RoPE, its context cut to the trained length.
//   - Qwen3-Embedding and Qwen3-Reranker (conversion/qwen.py Qwen3Model):
//     qwen3 with the pooling of the folder, and for a reranker pooling RANK,
//     labels yes/no, cls.output.weight made of the head's "yes" and "no"
//     rows and the rerank chat template.
//   - EmbeddingGemma (conversion/gemma.py EmbeddingGemma, Gemma3TextModel):
//     gemma-embedding, Gemma 3's keys and tensors with the sliding window
//     of config.json, the 2_Dense and 3_Dense projections (as the converter
//     writes them with --sentence-transformers-dense-modules) and pooling.
//
// The special tokens of these folders are read as gguf-py's SpecialVocab
// reads them (the post-processor's template decides add_bos/add_eos and
// may make its last token EOS), which Qwen3-Embedding's appended
// <|endoftext|> and BERT's [CLS] … [SEP] need.

// embedState is what the families here learn of a folder while its
// parameters are read.
type embedState struct {
	rerank      bool // Qwen3-Reranker
	tied        bool // its head is the embeddings
	yes, no     int  // the head rows cls.output.weight is made of
	clsLabels   bool // BERT: classifier.weight is cls.output.weight (labels kept)
	fullSpecial bool // special tokens as gguf-py's SpecialVocab reads them
	dense       []denseModule
}

type denseModule struct {
	prefix, path string
}

var (
	bertFamily = &family{arch: "bert", params: bertParams, tensor: bertNames, custom: bertClassifier,
		defaults: bertDefaults, tokModel: "bert", noLlama3Freqs: true}
	nomicBertFamily      = &family{arch: "nomic-bert", params: nomicParams, tensor: nomicNames, tokModel: "bert", noLlama3Freqs: true}
	qwen3Family          = &family{arch: "qwen3", params: scaled(qwen3Params), tensor: qwen3Names, custom: qwen3RerankHead}
	gemmaEmbeddingFamily = &family{arch: "gemma-embedding", params: gemmaEmbeddingParams, tensor: gemmaEmbeddingNames, normPlusOne: true,
		defaults: gemma3Defaults, noSpacePrefix: true, noLlama3Freqs: true, modules: denseModules}
)

// bertDefaults are transformers' BertConfig defaults, which the converter
// sees through AutoConfig.
var bertDefaults = hparams{
	"max_position_embeddings": 512.0, "type_vocab_size": 2.0, "layer_norm_eps": 1e-12, "position_embedding_type": "absolute",
}

// refusedArch names the Hugging Face architectures the converter takes
// that Loom does not, and why.
var refusedArch = map[string]string{
	"XLMRobertaModel":                     "its tokenizer is a SentencePiece Unigram (the converter's t5 vocabulary), which Loom does not run",
	"XLMRobertaForSequenceClassification": "its tokenizer is a SentencePiece Unigram (the converter's t5 vocabulary), which Loom does not run",
	"RobertaModel":                        "RoBERTa's byte-level BPE with BERT's architecture is not supported",
	"RobertaForSequenceClassification":    "RoBERTa's byte-level BPE with BERT's architecture is not supported",
	"DistilBertModel":                     "DistilBERT is not supported",
	"NomicBertForPreTraining":             "only NomicBertModel is supported",
}

func weightBias(m map[string]string, from, to string) {
	m[from+".weight"], m[from+".bias"] = to+".weight", to+".bias"
}

// bertTable: tensor_mapping.py's names for MODEL_ARCH.BERT.
var bertTable = func() map[string]string {
	m := map[string]string{
		"embeddings.word_embeddings.weight":       "token_embd.weight",
		"embeddings.token_type_embeddings.weight": "token_types.weight",
		"embeddings.position_embeddings.weight":   "position_embd.weight",
	}
	for from, to := range map[string]string{
		"embeddings.LayerNorm": "token_embd_norm", "attention.self.query": "attn_q", "attention.self.key": "attn_k",
		"attention.self.value": "attn_v", "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
		"intermediate.dense": "ffn_up", "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm",
		"classifier.dense": "cls", "classifier.out_proj": "cls.output", "classifier": "cls",
	} {
		weightBias(m, from, to)
	}
	return m
}()

// nomicTable: tensor_mapping.py's names for MODEL_ARCH.NOMIC_BERT.
var nomicTable = func() map[string]string {
	m := map[string]string{
		"embeddings.word_embeddings.weight":       "token_embd.weight",
		"embeddings.token_type_embeddings.weight": "token_types.weight",
	}
	for from, to := range map[string]string{
		"emb_ln": "token_embd_norm", "attn.Wqkv": "attn_qkv", "attn.out_proj": "attn_output", "norm1": "attn_output_norm",
		"norm2": "layer_output_norm", "mlp.fc11": "ffn_up", "mlp.fc12": "ffn_gate", "mlp.fc2": "ffn_down",
	} {
		weightBias(m, from, to)
	}
	return m
}()

// bertFiltered is BertModel.filter_tensors: "bert." dropped, LayerNorm's
// gamma/beta renamed, the pooler, position ids and MLM/NSP heads dropped
// ("" drops).
func bertFiltered(n string) string {
	n = strings.TrimPrefix(n, "bert.")
	if s, ok := strings.CutSuffix(n, ".gamma"); ok {
		n = s + ".weight"
	}
	if s, ok := strings.CutSuffix(n, ".beta"); ok {
		n = s + ".bias"
	}
	switch {
	case n == "embeddings.position_ids", n == "pooler.dense.weight", n == "pooler.dense.bias",
		strings.HasPrefix(n, "cls.predictions"), strings.HasPrefix(n, "cls.seq_relationship"):
		return ""
	}
	return n
}

func bertNames(n string) (mapped, error) {
	if n = bertFiltered(n); n == "" {
		return mapped{expert: -1}, nil
	}
	return mapName(bertTable, n)
}

// bertClassifier: with labels kept, BertModel.modify_tensors names a
// BertForSequenceClassification's classifier (one projection) as
// RoBERTa's out_proj: cls.output.
func bertClassifier(f *Folder, name string, st *safetensors.Tensor) ([]model.Tensor, bool, error) {
	n := bertFiltered(name)
	if !f.emb.clsLabels || (n != "classifier.weight" && n != "classifier.bias") {
		return nil, false, nil
	}
	if _, ok := hfTypes[st.DType]; !ok {
		return nil, false, fmt.Errorf("dtype %s (F32, F16 or BF16 expected)", st.DType)
	}
	to := "cls.output." + strings.TrimPrefix(n, "classifier.")
	return []model.Tensor{{Name: to, Type: hfTypes[st.DType], Dims: ggmlDims(st.Shape), Data: st.Data}}, true, nil
}

func nomicNames(n string) (mapped, error) {
	if strings.Contains(n, "mlp.experts.bias") {
		return mapped{expert: -1}, nil
	}
	if n = bertFiltered(n); n == "" {
		return mapped{expert: -1}, nil
	}
	return mapName(nomicTable, n)
}

// baseModelName gives a base model saved without "model." (as
// sentence-transformers saves Qwen3-Embedding and EmbeddingGemma) the
// name of the causal LM's: tensor_mapping.py maps both.
func baseModelName(n string) string {
	if n == "embed_tokens.weight" || n == "norm.weight" {
		return "model." + n
	}
	return n
}

func qwen3Names(n string) (mapped, error) { return llamaNames(baseModelName(n)) }

func gemmaEmbeddingNames(n string) (mapped, error) { return textNames(gemma3Table)(baseModelName(n)) }

// encoderParams is TextModel.set_gguf_parameters for BERT and nomic-bert:
// textParams, whose layer-norm epsilon the converter also finds under
// layer_norm_epsilon and norm_epsilon.
func encoderParams(h hparams, kv *kvs) error {
	if err := textParams(h, kv); err != nil {
		return err
	}
	if _, ok := h.num("layer_norm_eps"); !ok {
		if v, ok := h.num("layer_norm_epsilon", "norm_epsilon"); ok {
			if !(v >= 0) || float32(v) > 3.4e38 {
				return fmt.Errorf("config.json: layer_norm_epsilon = %s (must be a small non-negative number)", numStr(v))
			}
			kv.setArch("attention.layer_norm_epsilon", float32(v))
		}
	}
	return nil
}

// bertParams is BertModel.set_gguf_parameters: TextModel's keys, causal
// attention off, the pooling and the classifier's labels.
func bertParams(h hparams, kv *kvs) error {
	if t := h["position_embedding_type"]; t != nil && t != "absolute" {
		return fmt.Errorf("config.json: position_embedding_type = %v (only absolute position embeddings are supported)", t)
	}
	if err := encoderParams(h, kv); err != nil {
		return err
	}
	kv.putArch("attention.causal", false)
	if err := setPooling(kv); err != nil {
		return err
	}
	labels, err := classifierLabels(h)
	if err != nil {
		return err
	}
	if labels != nil {
		kv.setArch("classifier.output_labels", labels)
		kv.f.emb.clsLabels = true
	}
	kv.f.emb.fullSpecial = true
	return nil
}

// classifierLabels is BertModel.__init__'s cls_out_labels: config.json's
// id2label as AutoConfig gives it (num_labels LABEL_i when absent, 2 by
// default), dropped when it is AutoConfig's two dummy labels; the values
// in key order.
func classifierLabels(h hparams) ([]string, error) {
	var keys []int
	labels := map[int]string{}
	switch m := h["id2label"].(type) {
	case nil:
		n := 2
		if v, ok := h.num("num_labels"); ok {
			n = int(v)
		}
		if n < 0 || n > 1<<16 {
			return nil, fmt.Errorf("config.json: num_labels = %d", n)
		}
		for i := range n {
			keys, labels[i] = append(keys, i), "LABEL_"+strconv.Itoa(i)
		}
	case map[string]any:
		for k, v := range m {
			i, err := strconv.Atoi(k)
			s, ok := v.(string)
			if err != nil || !ok {
				return nil, fmt.Errorf("config.json: id2label %q: %v is not an integer key with a string label", k, v)
			}
			keys, labels[i] = append(keys, i), s
		}
	default:
		return nil, fmt.Errorf("config.json: id2label is not an object")
	}
	sort.Ints(keys)
	if len(keys) == 0 || (len(keys) == 2 && labels[0] == "LABEL_0") {
		return nil, nil
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = labels[k]
	}
	return out, nil
}

// Pooling types (gguf-py's PoolingType).
const (
	poolMean, poolCLS, poolLast, poolRank = 1, 2, 3, 4
)

// poolingType is the converter's _try_set_pooling_type: the first module
// of modules.json whose type ends in Pooling, its config.json's mode
// (ok false: no such module).
func poolingType(dir string) (uint32, bool, error) {
	var mods []map[string]any
	path := filepath.Join(dir, "modules.json")
	if err := readJSON(path, 1<<20, &mods); err != nil {
		if os.IsNotExist(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	for _, m := range mods {
		typ, _ := m["type"].(string)
		if !strings.HasSuffix(typ, "Pooling") {
			continue
		}
		sub, _ := m["path"].(string)
		if sub == "" || strings.Contains(sub, "..") || filepath.IsAbs(sub) {
			return 0, false, fmt.Errorf("modules.json: pooling module path %q", m["path"])
		}
		var cfg map[string]any
		cp := filepath.Join(dir, sub, "config.json")
		if err := readJSON(cp, 1<<20, &cfg); err != nil {
			return 0, false, err
		}
		switch {
		case truthy(cfg["pooling_mode_mean_tokens"]):
			return poolMean, true, nil
		case truthy(cfg["pooling_mode_cls_token"]):
			return poolCLS, true, nil
		case truthy(cfg["pooling_mode_lasttoken"]):
			return poolLast, true, nil
		}
		switch cfg["pooling_mode"] {
		case "mean":
			return poolMean, true, nil
		case "cls":
			return poolCLS, true, nil
		case "lasttoken":
			return poolLast, true, nil
		}
		return 0, false, fmt.Errorf("%s: pooling mode is none of mean, cls and lasttoken (pooling_mode_*_tokens or pooling_mode); the converter supports only those", filepath.Join(sub, "config.json"))
	}
	return 0, false, nil
}

// setPooling writes pooling_type when the folder states one.
func setPooling(kv *kvs) error {
	p, ok, err := poolingType(kv.f.Dir)
	if err != nil {
		return err
	}
	if ok {
		kv.putArch("pooling_type", p)
		kv.f.emb.fullSpecial = true
	}
	return nil
}

// truthy is Python's truth of a JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// nomicParams is NomicBertModel: its asserts (SwiGLU, no biases,
// post-norm, plain RoPE, not causal), the context cut to the trained
// length (nomic-embed-text v1/v1.5: 8192 → 2048), then BertModel's keys.
// nomic-bert-moe (moe_every_n_layers) and an XLM-RoBERTa tokenizer are
// refused.
func nomicParams(h hparams, kv *kvs) error {
	if truthy(h["moe_every_n_layers"]) {
		return fmt.Errorf("config.json: moe_every_n_layers = %v: nomic-bert-moe is not supported", h["moe_every_n_layers"])
	}
	h = maps.Clone(h)
	npos, err := h.count(-1, "n_positions")
	if err != nil {
		return err
	}
	mtp, err := h.count(2048, "max_trained_positions")
	if err != nil {
		return err
	}
	switch {
	case npos == 8192 && mtp == 2048:
		h["n_positions"] = 2048.0 // nomic-embed-text v1 and v1.5 are trained for 2048 tokens
	case npos == 2048 && mtp == 2048:
		h["n_positions"] = 512.0
	default:
		return fmt.Errorf("config.json: n_positions = %d with max_trained_positions = %d: the converter knows only 8192/2048 and 2048/2048", npos, mtp)
	}
	for _, c := range []struct {
		key  string
		want any
	}{
		{"activation_function", "swiglu"}, {"causal", false}, {"qkv_proj_bias", false}, {"mlp_fc1_bias", false}, {"mlp_fc2_bias", false},
		{"prenorm", false}, {"rotary_emb_fraction", 1.0}, {"rotary_emb_interleaved", false}, {"rotary_emb_scale_base", nil},
	} {
		v, ok := h[c.key]
		if !ok {
			return fmt.Errorf("config.json: nomic-bert needs %s (the converter asserts %v)", c.key, c.want)
		}
		if v != c.want {
			return fmt.Errorf("config.json: %s = %v, but the converter's nomic-bert asserts %v", c.key, v, c.want)
		}
	}
	if err := encoderParams(h, kv); err != nil {
		return err
	}
	kv.putArch("attention.causal", false)
	if err := setPooling(kv); err != nil {
		return err
	}
	kv.f.emb.fullSpecial = true
	return nil
}

// rerankTemplate is the chat template Qwen3Model writes for a reranker.
const rerankTemplate = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n" +
	"<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n" +
	"<|im_start|>assistant\n<think>\n\n</think>\n\n"

// isQwen3Reranker is Qwen3Model._is_qwen3_reranker: README.md's title,
// or "qwen3-reranker" in the folder's name, _name_or_path, model_type or
// architecture, or a sequence-classification architecture.
func isQwen3Reranker(dir string, h hparams, arch string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, "README.md")); err == nil {
		t := strings.ToLower(string(b))
		if strings.Contains(t, "# qwen3-reranker") || strings.Contains(t, "# qwen3-vl-reranker") {
			return true
		}
	}
	hints := []string{filepath.Base(filepath.Clean(dir)), fmt.Sprint(h["_name_or_path"]), fmt.Sprint(h["model_type"]), arch}
	for _, s := range hints {
		s = strings.ToLower(s)
		if strings.Contains(s, "qwen3-reranker") || strings.Contains(s, "qwen3-vl-reranker") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(arch), "sequenceclassification")
}

// qwen3Params is Qwen3Model.set_gguf_parameters: Qwen 3's keys, the
// folder's pooling (Qwen2Model), and for a reranker pooling RANK, labels
// yes/no and the rerank chat template.
func qwen3Params(h hparams, kv *kvs) error {
	if err := withHeadDim(h, kv); err != nil {
		return err
	}
	if err := setPooling(kv); err != nil {
		return err
	}
	f := kv.f
	if !isQwen3Reranker(f.Dir, h, f.HFArch) {
		return nil
	}
	tj, err := tokenizer.ReadHFFile(filepath.Join(f.Dir, "tokenizer.json"))
	if err != nil {
		return err
	}
	yes, okY := tj.Vocab["yes"]
	no, okN := tj.Vocab["no"]
	if !okY || !okN {
		return fmt.Errorf("%s: a Qwen3 reranker needs the tokens \"yes\" and \"no\"", tj.Path)
	}
	tied, _ := h["tie_word_embeddings"].(bool)
	f.emb = embedState{rerank: true, tied: tied, yes: yes, no: no, fullSpecial: true, dense: f.emb.dense}
	kv.putArch("pooling_type", uint32(poolRank))
	kv.setArch("classifier.output_labels", []string{"yes", "no"})
	kv.set("tokenizer.chat_template.rerank", rerankTemplate)
	kv.set("tokenizer.chat_templates", []string{"rerank"})
	return nil
}

// qwen3RerankHead is Qwen3Model.modify_tensors for a reranker: the head
// (lm_head, or the embeddings when tied, which are kept too) gives
// cls.output.weight, its "yes" row then its "no" row.
func qwen3RerankHead(f *Folder, name string, st *safetensors.Tensor) ([]model.Tensor, bool, error) {
	e := &f.emb
	if !e.rerank {
		return nil, false, nil
	}
	tiedHead := e.tied && strings.Contains(name, "embed_tokens")
	realHead := !e.tied && strings.Contains(name, "lm_head")
	if !tiedHead && !realHead {
		return nil, false, nil
	}
	if _, ok := hfTypes[st.DType]; !ok {
		return nil, false, fmt.Errorf("dtype %s (F32, F16 or BF16 expected)", st.DType)
	}
	if len(st.Shape) != 2 || st.Shape[0] <= int64(max(e.yes, e.no)) {
		return nil, false, fmt.Errorf("shape %v has no rows %d (\"yes\") and %d (\"no\")", st.Shape, e.yes, e.no)
	}
	row := len(st.Data) / int(st.Shape[0])
	data := slices.Concat(st.Data[e.yes*row:(e.yes+1)*row], st.Data[e.no*row:(e.no+1)*row])
	t := model.Tensor{Name: "cls.output.weight", Type: hfTypes[st.DType], Dims: []uint64{uint64(st.Shape[1]), 2}, Data: data}
	return []model.Tensor{t}, realHead, nil
}

// gemmaEmbeddingParams is EmbeddingGemma.set_gguf_parameters: Gemma 3's
// keys, the sliding window as config.json states it (AutoConfig changes
// it for bidirectional attention; the converter writes the original), the
// Dense modules' widths and the pooling.
func gemmaEmbeddingParams(h hparams, kv *kvs) error {
	if err := gemma3Params(h, kv); err != nil {
		return err
	}
	if h["sliding_window"] == nil {
		return fmt.Errorf("config.json: sliding_window is missing (the converter requires it for EmbeddingGemma)")
	}
	w, err := h.count(-1, "sliding_window")
	if err != nil {
		return err
	}
	kv.putArch("attention.sliding_window", w)
	f := kv.f
	var mods []map[string]any
	if err := readJSON(filepath.Join(f.Dir, "modules.json"), 1<<20, &mods); err != nil && !os.IsNotExist(err) {
		return err
	}
	type dims struct{ in, out uint32 }
	var order []string
	widths := map[string]dims{}
	for _, m := range mods {
		typ, _ := m["type"].(string)
		sub, _ := m["path"].(string)
		if !strings.HasSuffix(typ, "Dense") {
			continue
		}
		if sub == "" || strings.Contains(sub, "..") || filepath.IsAbs(sub) {
			return fmt.Errorf("modules.json: Dense module path %q", m["path"])
		}
		if _, err := os.Stat(filepath.Join(f.Dir, sub, "model.safetensors")); err != nil {
			continue
		}
		prefix := "dense_3"
		if sub == "2_Dense" {
			prefix = "dense_2"
		}
		f.emb.dense = append(f.emb.dense, denseModule{prefix, sub})
		var cfg hparams
		cp := filepath.Join(f.Dir, sub, "config.json")
		if err := readJSON(cp, 1<<20, &cfg); err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return err
		}
		if cfg["in_features"] == nil || cfg["out_features"] == nil {
			continue
		}
		in, err := cfg.positive("in_features")
		if err != nil {
			return fmt.Errorf("%s: %w", cp, err)
		}
		out, err := cfg.positive("out_features")
		if err != nil {
			return fmt.Errorf("%s: %w", cp, err)
		}
		if _, seen := widths[prefix]; !seen {
			order = append(order, prefix)
		}
		widths[prefix] = dims{in, out}
	}
	for _, p := range order {
		kv.setArch(p+"_feat_in", widths[p].in)
		kv.setArch(p+"_feat_out", widths[p].out)
	}
	f.emb.fullSpecial = true
	return setPooling(kv)
}

// denseModules is EmbeddingGemma.generate_extra_tensors: each Dense
// module's weights ("linear.weight" becomes dense_2.weight or
// dense_3.weight; biases are not written).
func denseModules(f *Folder) ([]model.Tensor, error) {
	var out []model.Tensor
	for _, d := range f.emb.dense {
		set, err := safetensors.OpenDir(filepath.Join(f.Dir, d.path))
		if err != nil {
			return nil, err
		}
		f.extra = append(f.extra, set)
		for _, name := range set.Names() {
			if !strings.HasSuffix(name, ".weight") {
				continue
			}
			to := strings.ReplaceAll(name, "linear", d.prefix)
			if to != d.prefix+".weight" {
				return nil, fmt.Errorf("%s: tensor %q has no GGUF name", d.path, name)
			}
			st, _ := set.Tensor(name)
			if _, ok := hfTypes[st.DType]; !ok {
				return nil, fmt.Errorf("%s: tensor %q: dtype %s (F32, F16 or BF16 expected)", d.path, name, st.DType)
			}
			if len(st.Shape) != 2 {
				return nil, fmt.Errorf("%s: tensor %q has shape %v (a matrix expected)", d.path, name, st.Shape)
			}
			out = append(out, model.Tensor{Name: to, Type: hfTypes[st.DType], Dims: ggmlDims(st.Shape), Data: st.Data})
		}
	}
	return out, nil
}

// chkTxt is the converter's get_vocab_base_pre text: its tokens' hash
// names the pre-tokenizer.
const chkTxt = "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL"

// wpmPre is get_vocab_base_pre for a WordPiece vocabulary: the hashes of
// the WordPiece models the converter knows (bge-small's and
// jina-v2-en's are the same; the later check wins). An unknown one, which
// the converter refuses, is "default" here: llama.cpp reads no
// pre-tokenizer for bert.
func wpmPre(v *tokenizer.Vocab) string {
	ids := v.Encode(chkTxt, true, false)
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	sum := sha256.Sum256([]byte("[" + strings.Join(s, ", ") + "]"))
	switch hex.EncodeToString(sum[:]) {
	case "0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f":
		return "jina-v2-en"
	case "8e62295832751ca1e8f92f2226f403dea30dc5165e448b5bfa05af5340c64ec7":
		return "bert-bge-large"
	}
	return "default"
}
