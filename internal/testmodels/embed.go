package testmodels

// Reduced-size, random-weight GGUF files for the embedding and reranking
// families (BERT, nomic-bert, Qwen3-Embedding / Qwen3-Reranker,
// EmbeddingGemma), written by the same machinery as modern.go: the same
// generators, the same per-tensor PCG streams (seeded by the tensor's name),
// so a preset, type and seed give the same bytes on every machine. The
// metadata keys, tensor names and the tensors kept F32 are what
// convert_hf_to_gguf.py (llama.cpp, 2026) writes for the real models; the
// recordings of llama.cpp's outputs are in testdata/reference-embed.

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/gguf"
)

// EmbedPresets lists the presets WriteEmbed knows, with their pooling
// (the file's pooling_type) and what each exercises.
var EmbedPresets = []struct{ Name, Arch, Pooling, Desc string }{
	{"bert-mini", "bert", "mean", "BERT (all-MiniLM / bge style): learned absolute positions (position_embd, F32), token type row 0 added (token_types, F32), embedding LayerNorm, post-LN blocks with biases everywhere, GELU (erf) FFN, non-causal attention, mean pooling; d 256, 4 layers, 4 heads of 64, FFN 1024, context 512; the real bge WordPiece vocabulary (30522)"},
	{"bert-rerank-mini", "bert", "rank", "bge-reranker style cross-encoder: bert-mini plus the classification head cls (dense 256x256 + bias, tanh) and cls.output (1 label + bias) on the first ([CLS]) token; pooling rank; rank input [CLS] query [SEP] document"},
	{"nomic-bert-mini", "nomic-bert", "mean", "nomic-embed-text-v1.5 features: fused attn_qkv without biases, NeoX RoPE base 1000 (no position table), SwiGLU FFN (ffn_gate, ffn_up, ffn_down, no biases), post-LN, token type row 0, mean pooling; d 256, 4 layers, 4 heads of 64, FFN 1024; bge WordPiece vocabulary"},
	{"qwen3-embed-mini", "qwen3", "last", "Qwen3-Embedding features: causal Qwen3 (GQA 2:1, Q/K RMS norms, SwiGLU, RoPE 1e6, tied embeddings, no output head) with last-token pooling of the final-normed hidden state, EOS <|endoftext|> appended (add_eos_token); d 256, 4 layers, 4 heads / 2 KV heads of 64, FFN 768; Qwen2 byte-level BPE (first 16384 ranks + Qwen3's 26 added tokens)"},
	{"qwen3-rerank-mini", "qwen3", "rank", "Qwen3-Reranker features: qwen3-embed-mini's body with cls.output = the yes / no rows of the (tied) token embedding, as convert_hf_to_gguf.py builds it; pooling rank = last token, softmax over (yes, no); classifier labels yes, no; tokenizer.chat_template.rerank (the converter's template, which node-llama-cpp fills in)"},
	{"gemma-embed-mini", "gemma-embedding", "mean", "EmbeddingGemma features: bidirectional Gemma 3 (sqrt(d) embedding scale, Q/K RMS norms, post-attention and post-FFN norms, GeGLU), 5 local : 1 global layers with a symmetric sliding window (window 8: a token sees positions within +-4), local RoPE base 1e4 / global 1e6, mean pooling of the final-normed states, then dense_2 (256 -> 1024) and dense_3 (1024 -> 256) after pooling; d 256, 6 layers, 4 heads / 1 KV head of 64, FFN 768; Llama 2 SentencePiece vocabulary without the space prefix, BOS and EOS added"},
	{"bert-base-shape", "bert", "mean", "BERT-base geometry for speed tests (d 768, 12 layers, 12 heads, FFN 3072, context 512, vocabulary 30522, mean pooling); random weights, not recorded"},
}

// Pooling types as llama.cpp numbers them ({arch}.pooling_type).
const (
	poolMean = 1
	poolCLS  = 2
	poolLast = 3
	poolRank = 4
)

func isEmbedPreset(name string) bool {
	for _, p := range EmbedPresets {
		if p.Name == name {
			return true
		}
	}
	return false
}

// buildEmbed builds a preset; post (if not nil) derives tensors from others
// once all values are generated.
func buildEmbed(name, assets string) (m *mmodel, post func(*mmodel), err error) {
	switch name {
	case "bert-mini":
		m, err = bertMini(assets, "bge-small-mini", bertShape{256, 4, 4, 1024, 512}, false)
	case "bert-rerank-mini":
		m, err = bertMini(assets, "bge-reranker-mini", bertShape{256, 4, 4, 1024, 512}, true)
	case "bert-base-shape":
		m, err = bertMini(assets, "bert-base-shape", bertShape{768, 12, 12, 3072, 512}, false)
	case "nomic-bert-mini":
		m, err = nomicMini(assets)
	case "qwen3-embed-mini":
		m, _, err = qwen3EmbedMini(assets, false)
	case "qwen3-rerank-mini":
		var ids map[string]int
		m, ids, err = qwen3EmbedMini(assets, true)
		post = func(m *mmodel) { rerankHead(m, ids["yes"], ids["no"]) }
	case "gemma-embed-mini":
		m, err = gemmaEmbedMini(assets)
	default:
		var names []string
		for _, p := range EmbedPresets {
			names = append(names, p.Name)
		}
		err = fmt.Errorf("unknown model %q (have %s)", name, strings.Join(names, ", "))
	}
	return m, post, err
}

type bertShape struct{ d, layers, heads, ff, ctx int }

// vocabKVs returns the tokenizer.* metadata of one of llama.cpp's vocab
// files (shared/models/vocab/ggml-vocab-NAME.gguf), in file order, with the
// values in set replacing (or, if absent, following) the file's.
func vocabKVs(assets, name string, set map[string]any) ([]gguf.KV, int, error) {
	f, err := gguf.Open(filepath.Join(assets, "vocab", "ggml-vocab-"+name+".gguf"))
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	toks, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, 0, err
	}
	w := gguf.Writer{}
	done := map[string]bool{}
	for _, kv := range f.KVs {
		if !strings.HasPrefix(kv.Key, "tokenizer.") {
			continue
		}
		if v, ok := set[kv.Key]; ok {
			w.Set(kv.Key, v)
			done[kv.Key] = true
			continue
		}
		w.KVs = append(w.KVs, kv)
	}
	var extra []string
	for k := range set {
		if !done[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		w.Set(k, set[k])
	}
	return w.KVs, len(toks), nil
}

// bertMini: BertModel (or BertForSequenceClassification, rerank) as
// convert_hf_to_gguf.py writes it: causal false, the pooling type of the
// sentence-transformers config, token_type_count 2 (type_vocab_size), the
// WordPiece vocabulary in phantom-space form. position_embd and token_types
// stay F32 in every file type, as the converter keeps them.
func bertMini(assets, title string, s bertShape, rerank bool) (*mmodel, error) {
	tok, nv, err := vocabKVs(assets, "bert-bge", nil)
	if err != nil {
		return nil, err
	}
	d, ff := s.d, s.ff
	m := &mmodel{}
	a := "bert."
	general(m, "bert", title)
	m.set(a+"block_count", uint32(s.layers))
	m.set(a+"context_length", uint32(s.ctx))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"attention.head_count", uint32(s.heads))
	m.set(a+"attention.layer_norm_epsilon", float32(1e-12))
	m.set(a+"attention.causal", false)
	if rerank {
		// BertForSequenceClassification with one label: id2label {0: LABEL_0}.
		// The converter writes no pooling type for a cross-encoder (llama.cpp
		// is told --pooling rank, node-llama-cpp's ranking context forces it);
		// the preset writes RANK so that the file says what it is.
		m.set(a+"pooling_type", uint32(poolRank))
		m.set(a+"classifier.output_labels", []string{"LABEL_0"})
	} else {
		m.set(a+"pooling_type", uint32(poolMean))
	}
	m.kvs = append(m.kvs, tok...)

	m.add("token_embd.weight", normal(0.05), false, d, nv)
	m.add("token_types.weight", normal(0.02), true, d, 2)
	m.add("position_embd.weight", normal(0.02), true, d, s.ctx)
	m.add("token_embd_norm.weight", normw(1, 0.05), true, d)
	m.add("token_embd_norm.bias", normal(0.02), true, d)
	for i := 0; i < s.layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		// Q/K of std 0.06 give attention scores (scale 1/8) a std of about
		// 0.7 on unit-variance inputs, so attention is far from uniform
		m.add(b+"attn_q.weight", normal(0.06), false, d, d)
		m.add(b+"attn_q.bias", normal(0.02), true, d)
		m.add(b+"attn_k.weight", normal(0.06), false, d, d)
		m.add(b+"attn_k.bias", normal(0.02), true, d)
		m.add(b+"attn_v.weight", normal(0.04), false, d, d)
		m.add(b+"attn_v.bias", normal(0.02), true, d)
		m.add(b+"attn_output.weight", normal(0.04), false, d, d)
		m.add(b+"attn_output.bias", normal(0.02), true, d)
		m.add(b+"attn_output_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"attn_output_norm.bias", normal(0.02), true, d)
		m.add(b+"ffn_up.weight", normal(0.05), false, d, ff)
		m.add(b+"ffn_up.bias", normal(0.02), true, ff)
		m.add(b+"ffn_down.weight", normal(0.03), false, ff, d)
		m.add(b+"ffn_down.bias", normal(0.02), true, d)
		m.add(b+"layer_output_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"layer_output_norm.bias", normal(0.02), true, d)
	}
	if rerank {
		// RobertaClassificationHead / bge-reranker: dense, tanh, out_proj
		m.add("cls.weight", normal(0.06), false, d, d)
		m.add("cls.bias", normal(0.02), true, d)
		m.add("cls.output.weight", normal(0.12), false, d, 1)
		m.add("cls.output.bias", normal(0.1), true, 1)
	}
	return m, nil
}

// nomicMini: NomicBertModel (nomic-embed-text-v1.5) as convert_hf_to_gguf.py
// writes it: arch nomic-bert, Wqkv fused into attn_qkv, no biases
// (qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias false), SwiGLU (fc11 -> ffn_up,
// fc12 -> ffn_gate), rotary base 1000, context 2048, no position table.
func nomicMini(assets string) (*mmodel, error) {
	const d, layers, heads, ff = 256, 4, 4, 1024
	tok, nv, err := vocabKVs(assets, "bert-bge", nil)
	if err != nil {
		return nil, err
	}
	m := &mmodel{}
	a := "nomic-bert."
	general(m, "nomic-bert", "nomic-embed-text-v1.5-mini")
	m.set(a+"block_count", uint32(layers))
	m.set(a+"context_length", uint32(2048))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"attention.head_count", uint32(heads))
	m.set(a+"rope.freq_base", float32(1000))
	m.set(a+"attention.layer_norm_epsilon", float32(1e-12))
	m.set(a+"attention.causal", false)
	m.set(a+"pooling_type", uint32(poolMean))
	m.kvs = append(m.kvs, tok...)

	m.add("token_embd.weight", normal(0.05), false, d, nv)
	m.add("token_types.weight", normal(0.02), true, d, 2)
	m.add("token_embd_norm.weight", normw(1, 0.05), true, d)
	m.add("token_embd_norm.bias", normal(0.02), true, d)
	// fused rows: Q (std 0.08: RoPE acts on sharp attention), K (0.08), V (0.04)
	qkv := func(r *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			sigma := 0.08
			if i/d >= 2*d {
				sigma = 0.04
			}
			v[i] = float32(sigma * gauss(r))
		}
		return v
	}
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_qkv.weight", qkv, false, d, 3*d)
		m.add(b+"attn_output.weight", normal(0.04), false, d, d)
		m.add(b+"attn_output_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"attn_output_norm.bias", normal(0.02), true, d)
		m.add(b+"ffn_up.weight", normal(0.06), false, d, ff)
		m.add(b+"ffn_gate.weight", normal(0.06), false, d, ff)
		m.add(b+"ffn_down.weight", normal(0.04), false, ff, d)
		m.add(b+"layer_output_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"layer_output_norm.bias", normal(0.02), true, d)
	}
	return m, nil
}

// qwen3Added are Qwen3's added tokens (ids 151643-151668 in the real
// vocabulary) and whether each is special (CONTROL; the others are
// USER_DEFINED).
var qwen3Added = []struct {
	s       string
	special bool
}{
	{"<|endoftext|>", true}, {"<|im_start|>", true}, {"<|im_end|>", true},
	{"<|object_ref_start|>", true}, {"<|object_ref_end|>", true}, {"<|box_start|>", true},
	{"<|box_end|>", true}, {"<|quad_start|>", true}, {"<|quad_end|>", true},
	{"<|vision_start|>", true}, {"<|vision_end|>", true}, {"<|vision_pad|>", true},
	{"<|image_pad|>", true}, {"<|video_pad|>", true}, {"<tool_call>", false},
	{"</tool_call>", false}, {"<|fim_prefix|>", true}, {"<|fim_middle|>", true},
	{"<|fim_suffix|>", true}, {"<|fim_pad|>", true}, {"<|repo_name|>", true},
	{"<|file_sep|>", true}, {"<tool_response>", false}, {"</tool_response>", false},
	{"<think>", false}, {"</think>", false},
}

// qwen3Vocab is a Qwen3-shaped vocabulary (Qwen2Model.set_vocab: tokenizer
// model gpt2, pre qwen2): the first nBPE byte-level ranks of Qwen2's BPE
// (shared/models/tokenizers/qwen2) with the merges among them, then Qwen3's
// 26 added tokens. Qwen3-Embedding's tokenizer appends <|endoftext|>
// (TemplateProcessing "$A <|endoftext|>"), which gguf-py's SpecialVocab
// turns into eos = <|endoftext|>, eot = <|im_end|>, add_eos_token true; the
// reranker's is Qwen3's own (eos <|im_end|>, nothing appended).
func qwen3Vocab(assets string, rerank bool) (*mvocab, map[string]int, error) {
	const nBPE = 16384
	dir := filepath.Join(assets, "tokenizers", "qwen2")
	var enc map[string]int
	b, err := os.ReadFile(filepath.Join(dir, "vocab.json"))
	if err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(b, &enc); err != nil {
		return nil, nil, err
	}
	v := &mvocab{model: "gpt2", pre: "qwen2"}
	v.tokens = make([]string, nBPE, nBPE+len(qwen3Added))
	v.types = make([]int32, nBPE, nBPE+len(qwen3Added))
	kept := map[string]bool{}
	for s, id := range enc {
		if id < nBPE {
			v.tokens[id], v.types[id] = s, tokNormal
			kept[s] = true
		}
	}
	for i, s := range v.tokens {
		if s == "" {
			return nil, nil, fmt.Errorf("qwen2 vocabulary: rank %d missing from vocab.json", i)
		}
	}
	lines, err := os.ReadFile(filepath.Join(dir, "merges.txt"))
	if err != nil {
		return nil, nil, err
	}
	for i, line := range strings.Split(string(lines), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || (i == 0 && strings.HasPrefix(line, "#")) {
			continue
		}
		if kept[f[0]] && kept[f[1]] && kept[f[0]+f[1]] {
			v.merges = append(v.merges, f[0]+" "+f[1])
		}
	}
	ids := map[string]int{}
	for _, t := range qwen3Added {
		ids[t.s] = len(v.tokens)
		v.tokens = append(v.tokens, t.s)
		if t.special {
			v.types = append(v.types, tokControl)
		} else {
			v.types = append(v.types, tokUserDefined)
		}
	}
	ids["yes"], ids["no"] = enc["yes"], enc["no"]
	eot, pad := uint32(ids["<|endoftext|>"]), uint32(ids["<|endoftext|>"])
	if rerank {
		v.ids = [][2]any{{"eos_token_id", uint32(ids["<|im_end|>"])}, {"padding_token_id", pad}, {"bos_token_id", eot}}
		v.tail = [][2]any{{"add_bos_token", false}}
	} else {
		v.ids = [][2]any{{"eos_token_id", eot}, {"padding_token_id", pad}, {"bos_token_id", eot}, {"eot_token_id", uint32(ids["<|im_end|>"])}}
		v.tail = [][2]any{{"add_bos_token", false}, {"add_eos_token", true}}
	}
	return v, ids, nil
}

// qwen3RerankTemplate is the template Qwen3Model.set_gguf_parameters writes
// for Qwen3-Reranker as tokenizer.chat_template.rerank.
const qwen3RerankTemplate = "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n" +
	"<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n" +
	"<|im_start|>assistant\n<think>\n\n</think>\n\n"

// qwen3EmbedMini: Qwen3-Embedding-0.6B (rerank=false) or Qwen3-Reranker-0.6B
// (rerank=true) as convert_hf_to_gguf.py writes them: both tied (no
// output.weight); the reranker's cls.output.weight is the stack of the
// embedding rows of "yes" and "no" (Qwen3Model._get_cls_out_tensor).
func qwen3EmbedMini(assets string, rerank bool) (*mmodel, map[string]int, error) {
	const d, layers, heads, kvHeads, hd, ff = 256, 4, 4, 2, 64, 768
	tok, ids, err := qwen3Vocab(assets, rerank)
	if err != nil {
		return nil, nil, err
	}
	nv := len(tok.tokens)
	m := &mmodel{}
	a := "qwen3."
	title := "Qwen3-Embedding-mini"
	if rerank {
		title = "Qwen3-Reranker-mini"
	}
	general(m, "qwen3", title)
	m.set(a+"block_count", uint32(layers))
	m.set(a+"context_length", uint32(32768))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"attention.head_count", uint32(heads))
	m.set(a+"attention.head_count_kv", uint32(kvHeads))
	m.set(a+"rope.freq_base", float32(1e6))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-6))
	m.set(a+"attention.key_length", uint32(hd))
	m.set(a+"attention.value_length", uint32(hd))
	if rerank {
		m.set(a+"pooling_type", uint32(poolRank))
		m.set(a+"classifier.output_labels", []string{"yes", "no"})
		m.set("tokenizer.chat_template.rerank", qwen3RerankTemplate)
		m.set("tokenizer.chat_templates", []string{"rerank"})
	} else {
		m.set(a+"pooling_type", uint32(poolLast))
	}
	tok.kvs(m)

	emb := normal(0.03)
	m.add("token_embd.weight", emb, false, d, nv)
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"attn_q.weight", normal(0.04), false, d, heads*hd)
		m.add(b+"attn_k.weight", normal(0.04), false, d, kvHeads*hd)
		m.add(b+"attn_v.weight", normal(0.04), false, d, kvHeads*hd)
		m.add(b+"attn_output.weight", normal(0.04), false, heads*hd, d)
		// Q/K norm weights of 1.5: attention scores of std about 2 after the
		// RMS norm, so that positions (RoPE) and causality matter
		m.add(b+"attn_q_norm.weight", normw(1.5, 0.1), true, hd)
		m.add(b+"attn_k_norm.weight", normw(1.5, 0.1), true, hd)
		m.add(b+"ffn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_gate.weight", normal(0.05), false, d, ff)
		m.add(b+"ffn_up.weight", normal(0.05), false, d, ff)
		m.add(b+"ffn_down.weight", normal(0.04), false, ff, d)
	}
	// output_norm of 3: the yes/no logits (rows of std 0.03 against a
	// state of RMS 3) differ by about 1.5, so the softmax is not saturated
	m.add("output_norm.weight", normw(3, 0.05), true, d)
	if rerank {
		// filled by rerankHead from token_embd once the values exist
		m.add("cls.output.weight", func(_ *rand.Rand, n int) []float32 { return make([]float32, n) }, false, d, 2)
	}
	return m, ids, nil
}

// rerankHead sets qwen3-rerank-mini's cls.output.weight to the token_embd
// rows of "yes" and "no", in that order (Qwen3Model._get_cls_out_tensor
// stacks [true_row, false_row]).
func rerankHead(m *mmodel, yes, no int) {
	var emb, cls *mtensor
	for _, t := range m.tensors {
		switch t.name {
		case "token_embd.weight":
			emb = t
		case "cls.output.weight":
			cls = t
		}
	}
	if emb == nil || cls == nil {
		return
	}
	d := int(emb.dims[0])
	copy(cls.vals[:d], emb.vals[yes*d:(yes+1)*d])
	copy(cls.vals[d:], emb.vals[no*d:(no+1)*d])
}

// gemmaEmbedMini: EmbeddingGemma (Gemma3TextModel) as convert_hf_to_gguf.py
// writes it with --sentence-transformers-dense-modules: arch gemma-embedding,
// the Gemma3Model keys (norm weights stored as 1 + w), the original
// sliding_window, dense_2 / dense_3 and their feat_in / feat_out, pooling
// mean. llama.cpp's pattern is its constant 6 (layers 0-4 local, 5 global).
func gemmaEmbedMini(assets string) (*mmodel, error) {
	const d, layers, heads, kvHeads, hd, ff, window, dense = 256, 6, 4, 1, 64, 768, 8, 1024
	tok, nv, err := vocabKVs(assets, "llama-spm", map[string]any{
		"tokenizer.ggml.add_eos_token":    true,
		"tokenizer.ggml.add_space_prefix": false,
	})
	if err != nil {
		return nil, err
	}
	m := &mmodel{}
	a := "gemma-embedding."
	general(m, "gemma-embedding", "embeddinggemma-300m-mini")
	m.set(a+"block_count", uint32(layers))
	m.set(a+"context_length", uint32(2048))
	m.set(a+"embedding_length", uint32(d))
	m.set(a+"feed_forward_length", uint32(ff))
	m.set(a+"attention.head_count", uint32(heads))
	m.set(a+"attention.head_count_kv", uint32(kvHeads))
	m.set(a+"rope.freq_base", float32(1e6))
	m.set(a+"rope.freq_base_swa", float32(1e4))
	m.set(a+"attention.layer_norm_rms_epsilon", float32(1e-6))
	m.set(a+"attention.key_length", uint32(hd))
	m.set(a+"attention.value_length", uint32(hd))
	m.set(a+"attention.sliding_window", uint32(window))
	m.set(a+"dense_2_feat_in", uint32(d))
	m.set(a+"dense_2_feat_out", uint32(dense))
	m.set(a+"dense_3_feat_in", uint32(dense))
	m.set(a+"dense_3_feat_out", uint32(d))
	m.set(a+"pooling_type", uint32(poolMean))
	m.kvs = append(m.kvs, tok...)

	m.add("token_embd.weight", normal(0.03), false, d, nv)
	for i := 0; i < layers; i++ {
		b := fmt.Sprintf("blk.%d.", i)
		m.add(b+"attn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"attn_q.weight", normal(0.05), false, d, heads*hd)
		m.add(b+"attn_k.weight", normal(0.05), false, d, kvHeads*hd)
		m.add(b+"attn_v.weight", normal(0.05), false, d, kvHeads*hd)
		m.add(b+"attn_output.weight", normal(0.05), false, heads*hd, d)
		// Q/K norm weights of 1.5: scores (scale 1/8 over RMS-normed
		// heads) of std about 2, so the window and RoPE matter
		m.add(b+"attn_q_norm.weight", normw(1.5, 0.1), true, hd)
		m.add(b+"attn_k_norm.weight", normw(1.5, 0.1), true, hd)
		m.add(b+"post_attention_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_norm.weight", normw(1, 0.05), true, d)
		m.add(b+"ffn_gate.weight", normal(0.06), false, d, ff)
		m.add(b+"ffn_up.weight", normal(0.06), false, d, ff)
		m.add(b+"ffn_down.weight", normal(0.05), false, ff, d)
		m.add(b+"post_ffw_norm.weight", normw(1, 0.05), true, d)
	}
	m.add("output_norm.weight", normw(1, 0.05), true, d)
	m.add("dense_2.weight", normal(0.06), false, d, dense)
	m.add("dense_3.weight", normal(0.03), false, dense, d)
	return m, nil
}

// ---------------------------------------------------------------------------
// writing

// WriteEmbed writes the EmbedPresets preset o.Model as a GGUF file to out
// (Set and Fill as for WriteModern).
func WriteEmbed(out io.Writer, o ModernOptions) error {
	assets := o.Assets
	if assets == "" {
		shared, err := SharedDir()
		if err != nil {
			return err
		}
		assets = filepath.Join(shared, "models")
	}
	m, post, err := buildEmbed(o.Model, assets)
	if err != nil {
		return err
	}
	return writeMModel(out, m, post, o)
}

// WriteModelgen writes any modelgen preset: a ModernPresets one with
// WriteModern, an EmbedPresets one with WriteEmbed.
func WriteModelgen(out io.Writer, o ModernOptions) error {
	if isEmbedPreset(o.Model) {
		return WriteEmbed(out, o)
	}
	return WriteModern(out, o)
}

// writeMModel types, fills and writes a built preset (what WriteModern does
// after building one).
func writeMModel(out io.Writer, m *mmodel, post func(*mmodel), o ModernOptions) error {
	var wt gguf.Type
	var ftype uint32
	switch o.Type {
	case "F32":
		wt, ftype = gguf.F32, 0
	case "F16":
		wt, ftype = gguf.F16, 1
	case "Q8_0":
		wt, ftype = gguf.Q8_0, 7
	default:
		return fmt.Errorf("type %q: want F32, F16 or Q8_0", o.Type)
	}
	head := append([]gguf.KV(nil), m.kvs[:3]...)
	w := gguf.Writer{}
	w.Set("general.file_type", ftype)
	w.Set("general.quantization_version", uint32(2))
	m.kvs = append(append(head, w.KVs...), m.kvs[3:]...)
	for _, s := range o.Set {
		if err := m.override(s); err != nil {
			return err
		}
	}
	for _, t := range m.tensors {
		r := rand.New(rand.NewPCG(o.Seed, nameHash(t.name)))
		n := 1
		for _, x := range t.dims {
			n *= int(x)
		}
		t.vals = t.gen(r, n)
	}
	if post != nil {
		post(m)
	}
	for _, s := range o.Fill {
		pat, val, ok := strings.Cut(s, "=")
		c, err := strconv.ParseFloat(val, 32)
		if !ok || err != nil {
			return fmt.Errorf("fill %q: want PATTERN=VALUE", s)
		}
		hit := false
		for _, t := range m.tensors {
			if ok, _ := filepath.Match(pat, t.name); ok {
				hit = true
				for i := range t.vals {
					t.vals[i] = float32(c)
				}
			}
		}
		if !hit {
			return fmt.Errorf("fill %q: no tensor matches", s)
		}
	}
	gw := gguf.NewWriter()
	gw.KVs = m.kvs
	for _, t := range m.tensors {
		typ := wt
		if t.float || len(t.dims) == 1 {
			typ = gguf.F32
		}
		if err := gw.AddTensor(t.name, typ, t.dims, encode(typ, t.vals)); err != nil {
			return err
		}
	}
	_, err := gw.WriteTo(out)
	return err
}
