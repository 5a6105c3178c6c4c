package hfmodel

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loom-inference/loom/safetensors"
)

// TestNomicBertFolder: NomicBertModel's asserts, context cut 8192 → 2048,
// fused QKV and fc11 → ffn_up, fc12 → ffn_gate (tensor_mapping.py).
func TestNomicBertFolder(t *testing.T) {
	toks, control, _ := bgeVocab(t)
	dir := t.TempDir()
	cfg := map[string]any{"architectures": []string{"NomicBertModel"}, "activation_function": "swiglu", "causal": false, "n_embd": 8, "n_head": 2,
		"n_inner": 16, "n_layer": 1, "n_positions": 8192, "max_trained_positions": 2048, "layer_norm_epsilon": 1e-12, "mlp_fc1_bias": false,
		"mlp_fc2_bias": false, "qkv_proj_bias": false, "prenorm": false, "rotary_emb_base": 1000, "rotary_emb_fraction": 1.0,
		"rotary_emb_interleaved": false, "rotary_emb_scale_base": nil, "type_vocab_size": 2, "vocab_size": len(toks)}
	writeJSONFile(t, filepath.Join(dir, "config.json"), cfg)
	writeWeights(t, filepath.Join(dir, "model.safetensors"), []safetensors.Tensor{
		f32t("embeddings.word_embeddings.weight", 1, int64(len(toks)), 8), f32t("embeddings.token_type_embeddings.weight", 2, 2, 8),
		f32t("emb_ln.weight", 3, 8), f32t("emb_ln.bias", 3, 8), f32t("encoder.layers.0.attn.Wqkv.weight", 4, 24, 8),
		f32t("encoder.layers.0.attn.out_proj.weight", 5, 8, 8), f32t("encoder.layers.0.mlp.fc11.weight", 6, 16, 8),
		f32t("encoder.layers.0.mlp.fc12.weight", 7, 16, 8), f32t("encoder.layers.0.mlp.fc2.weight", 8, 8, 16),
		f32t("encoder.layers.0.norm1.weight", 9, 8), f32t("encoder.layers.0.norm1.bias", 9, 8),
		f32t("encoder.layers.0.norm2.weight", 9, 8), f32t("encoder.layers.0.norm2.bias", 9, 8)})
	writeJSONFile(t, filepath.Join(dir, "tokenizer.json"), bertTokenizerJSON(toks, control))
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), bertTokenizerConfig)
	writeJSONFile(t, filepath.Join(dir, "modules.json"), []any{map[string]any{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}})
	writeJSONFile(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{"pooling_mode_mean_tokens": true})
	fo, meta := metaOf(t, dir)
	keys := keysOf(meta)
	want := []string{"general.architecture=nomic-bert", "nomic-bert.block_count=1", "nomic-bert.context_length=2048", "nomic-bert.embedding_length=8",
		"nomic-bert.feed_forward_length=16", "nomic-bert.attention.head_count=2", "nomic-bert.rope.freq_base=1000",
		"nomic-bert.attention.layer_norm_epsilon=1e-12", "nomic-bert.attention.causal=false", "nomic-bert.pooling_type=1",
		"tokenizer.ggml.token_type_count=2", "tokenizer.ggml.model=bert"}
	if !slices.Equal(keys[:len(want)], want) {
		t.Errorf("metadata\n %v\nwant prefix\n %v", keys, want)
	}
	checkTensors(t, fo, map[string][]uint64{"token_embd.weight": {8, 30522}, "token_types.weight": {8, 2}, "token_embd_norm.weight": {8},
		"token_embd_norm.bias": {8}, "blk.0.attn_qkv.weight": {8, 24}, "blk.0.attn_output.weight": {8, 8}, "blk.0.ffn_up.weight": {8, 16},
		"blk.0.ffn_gate.weight": {8, 16}, "blk.0.ffn_down.weight": {16, 8}, "blk.0.attn_output_norm.weight": {8}, "blk.0.attn_output_norm.bias": {8},
		"blk.0.layer_output_norm.weight": {8}, "blk.0.layer_output_norm.bias": {8}})
	up, _ := fo.Tensor("blk.0.ffn_up.weight")
	if f := up.Data[:4]; f[3] != 0x40 || f[2] != 0xc0 { // fc11 holds 6.0
		t.Errorf("ffn_up is not fc11: % x", f)
	}
	cfg["prenorm"] = true
	writeJSONFile(t, filepath.Join(dir, "config.json"), cfg)
	if _, err := Open(dir); err == nil {
		t.Errorf("prenorm true accepted")
	}
}

// qwenFolder writes a 1-layer Qwen3 base model as sentence-transformers
// saves it (no "model." prefix) with a tokenizer holding "yes" and "no".
func qwenFolder(t *testing.T, name string, tied bool) string {
	dir := filepath.Join(t.TempDir(), name)
	cfg := map[string]any{"architectures": []string{"Qwen3ForCausalLM"}, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
		"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
		"rope_theta": 1e6, "vocab_size": 16, "tie_word_embeddings": tied}
	writeJSONFile(t, filepath.Join(dir, "config.json"), cfg)
	ts := []safetensors.Tensor{f32t("embed_tokens.weight", 1, 16, 8), f32t("norm.weight", 2, 8), f32t("layers.0.input_layernorm.weight", 3, 8),
		f32t("layers.0.self_attn.q_proj.weight", 4, 8, 8), f32t("layers.0.self_attn.k_proj.weight", 5, 4, 8), f32t("layers.0.self_attn.v_proj.weight", 6, 4, 8),
		f32t("layers.0.self_attn.o_proj.weight", 7, 8, 8), f32t("layers.0.self_attn.q_norm.weight", 8, 4), f32t("layers.0.self_attn.k_norm.weight", 8, 4),
		f32t("layers.0.post_attention_layernorm.weight", 9, 8), f32t("layers.0.mlp.gate_proj.weight", 10, 16, 8),
		f32t("layers.0.mlp.up_proj.weight", 11, 16, 8), f32t("layers.0.mlp.down_proj.weight", 12, 8, 16)}
	if !tied {
		ts = append(ts, f32t("lm_head.weight", 100, 16, 8))
	}
	writeWeights(t, filepath.Join(dir, "model.safetensors"), ts)
	vocab := map[string]int{"yes": 9, "no": 4}
	for i, c := range "abcdfghijklm" {
		vocab[string(c)] = []int{0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13}[i]
	}
	sp := func(s string) map[string]any {
		return map[string]any{"SpecialToken": map[string]any{"id": s, "type_id": 0}}
	}
	seq := map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}
	writeJSONFile(t, filepath.Join(dir, "tokenizer.json"), map[string]any{
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
		"added_tokens":  []any{map[string]any{"id": 14, "content": "<|endoftext|>", "special": true}, map[string]any{"id": 15, "content": "<|im_end|>", "special": true}},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}, "decoder": map[string]any{"type": "ByteLevel"},
		"post_processor": map[string]any{"type": "TemplateProcessing", "single": []any{seq, sp("<|endoftext|>")}}})
	writeJSONFile(t, filepath.Join(dir, "tokenizer_config.json"), map[string]any{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "add_bos_token": false})
	return dir
}

// TestQwen3Embedding: Qwen3-Embedding's LAST pooling (Qwen2Model's
// _try_set_pooling_type) and its appended <|endoftext|> (SpecialVocab:
// the template's last token becomes EOS, the old EOS EOT, add_eos true).
func TestQwen3Embedding(t *testing.T) {
	dir := qwenFolder(t, "Qwen3-Embedding-0.6B", true)
	writeJSONFile(t, filepath.Join(dir, "modules.json"), []any{map[string]any{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}})
	writeJSONFile(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{"pooling_mode_lasttoken": true})
	fo, meta := metaOf(t, dir)
	if p, _ := meta.Uint("qwen3.pooling_type"); p != 3 {
		t.Errorf("pooling %d", p)
	}
	for k, v := range map[string]uint64{"tokenizer.ggml.eos_token_id": 14, "tokenizer.ggml.eot_token_id": 15, "tokenizer.ggml.padding_token_id": 14} {
		if got, err := meta.Uint(k); err != nil || got != v {
			t.Errorf("%s = %d (%v), want %d", k, got, err, v)
		}
	}
	if b, _ := meta.Bool("tokenizer.ggml.add_eos_token", false); !b {
		t.Errorf("add_eos_token not true")
	}
	if fo.Special.EOS != 14 || fo.Special.AddEOS == nil || !*fo.Special.AddEOS {
		t.Errorf("special %+v", fo.Special)
	}
	for _, n := range []string{"token_embd.weight", "output_norm.weight", "blk.0.attn_q.weight", "blk.0.ffn_gate.weight"} {
		if _, ok := fo.Tensor(n); !ok {
			t.Errorf("no %s", n)
		}
	}
}

// TestQwen3Reranker: a folder named Qwen3-Reranker is a reranker
// (_is_qwen3_reranker): pooling RANK, labels yes/no, the rerank template,
// cls.output.weight = the head's rows of "yes" then "no" (tied: the
// embeddings', which stay; untied: lm_head's, with no output.weight).
func TestQwen3Reranker(t *testing.T) {
	for _, tied := range []bool{true, false} {
		t.Run(fmt.Sprint("tied=", tied), func(t *testing.T) {
			fo, meta := metaOf(t, qwenFolder(t, "Qwen3-Reranker-0.6B", tied))
			if p, _ := meta.Uint("qwen3.pooling_type"); p != 4 {
				t.Errorf("pooling %d", p)
			}
			if l, _ := meta.Strings("qwen3.classifier.output_labels"); !slices.Equal(l, []string{"yes", "no"}) {
				t.Errorf("labels %v", l)
			}
			if s, _ := meta.String("tokenizer.chat_template.rerank"); s != rerankTemplate {
				t.Errorf("template %q", s)
			}
			c, ok := fo.Tensor("cls.output.weight")
			if !ok || !slices.Equal(c.Dims, []uint64{8, 2}) {
				t.Fatalf("cls.output.weight %v %v", ok, c.Dims)
			}
			seed := 1
			if !tied {
				seed = 100
			}
			head := f32t("h", seed, 16, 8).Data
			if !slices.Equal(c.Data[:32], head[9*32:10*32]) || !slices.Equal(c.Data[32:], head[4*32:5*32]) {
				t.Errorf("cls.output.weight is not the head's yes and no rows")
			}
			_, hasEmb := fo.Tensor("token_embd.weight")
			_, hasOut := fo.Tensor("output.weight")
			if !hasEmb || hasOut {
				t.Errorf("token_embd %v output %v", hasEmb, hasOut)
			}
		})
	}
}

// TestEmbeddingGemma: Gemma3TextModel → gemma-embedding with Gemma 3's
// keys, config.json's sliding window, the Dense modules' widths and
// weights (dense_2.weight, dense_3.weight) and MEAN pooling.
func TestEmbeddingGemma(t *testing.T) {
	dir := tinyModern(t, "Gemma3ForCausalLM", map[string]any{"architectures": []string{"Gemma3TextModel"}, "use_bidirectional_attention": true}, func(ts []safetensors.Tensor) []safetensors.Tensor {
		for i := range ts { // saved as the base model
			if n, ok := cutModel(ts[i].Name); ok {
				ts[i].Name = n
			}
		}
		return ts
	})
	writeJSONFile(t, filepath.Join(dir, "modules.json"), []any{
		map[string]any{"path": "", "type": "sentence_transformers.models.Transformer"},
		map[string]any{"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
		map[string]any{"path": "2_Dense", "type": "sentence_transformers.models.Dense"},
		map[string]any{"path": "3_Dense", "type": "sentence_transformers.models.Dense"},
		map[string]any{"path": "4_Normalize", "type": "sentence_transformers.models.Normalize"}})
	writeJSONFile(t, filepath.Join(dir, "1_Pooling", "config.json"), map[string]any{"pooling_mode_mean_tokens": true})
	writeJSONFile(t, filepath.Join(dir, "2_Dense", "config.json"), map[string]any{"in_features": 8, "out_features": 32, "bias": false})
	writeWeights(t, filepath.Join(dir, "2_Dense", "model.safetensors"), []safetensors.Tensor{f32t("linear.weight", 1, 32, 8)})
	writeJSONFile(t, filepath.Join(dir, "3_Dense", "config.json"), map[string]any{"in_features": 32, "out_features": 8, "bias": false})
	writeWeights(t, filepath.Join(dir, "3_Dense", "model.safetensors"), []safetensors.Tensor{f32t("linear.weight", 2, 8, 32)})
	fo, meta := metaOf(t, dir)
	if fo.Arch != "gemma-embedding" {
		t.Fatalf("arch %s", fo.Arch)
	}
	for k, v := range map[string]uint64{"gemma-embedding.attention.sliding_window": 4, "gemma-embedding.dense_2_feat_in": 8, "gemma-embedding.dense_2_feat_out": 32,
		"gemma-embedding.dense_3_feat_in": 32, "gemma-embedding.dense_3_feat_out": 8, "gemma-embedding.pooling_type": 1} {
		if got, err := meta.Uint(k); err != nil || got != v {
			t.Errorf("%s = %d (%v), want %d", k, got, err, v)
		}
	}
	for n, d := range map[string][]uint64{"dense_2.weight": {8, 32}, "dense_3.weight": {32, 8}, "token_embd.weight": {8, 16}, "output_norm.weight": {8}, "blk.1.post_ffw_norm.weight": {8}} {
		if x, ok := fo.Tensor(n); !ok || !slices.Equal(x.Dims, d) {
			t.Errorf("%s: %v %v, want %v", n, ok, x.Dims, d)
		}
	}
}

func cutModel(n string) (string, bool) {
	if len(n) > 6 && n[:6] == "model." {
		return n[6:], true
	}
	return n, false
}
