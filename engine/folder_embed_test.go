package engine_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/hfmodel"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestEmbedFolderMatchesGGUF: for each embedding and reranking family, the
// Hugging Face folder a modelgen file would have been converted from
// (testmodels.WriteEmbedFolder: transformers' names and layouts, the
// sentence-transformers modules, a tokenizer.json of the file's
// vocabulary) loads in Loom as that file does. Checked for each:
//
//   - the folder's tensors, as internal/hfmodel maps them, are the file's:
//     names, types, dims and bytes; its architecture's metadata keys and
//     values are the file's;
//   - the same Pooling and EmbedDim;
//   - texts tokenize alike (EmbedTokens: the folder's tokenizer.json
//     against the GGUF vocabulary — WordPiece, Qwen2 byte-level BPE, and
//     a SentencePiece vocabulary as transformers' BPE with merges ranked
//     by score), and EmbedTexts on the folder is the file's embedding;
//   - Embed of the same ids is bit-identical;
//   - for rerankers, RerankTokens and Rerank's scores are identical.
//
// The cases: bert-mini (mean pooling, and CLS as bge-small has it);
// bert-rerank-mini as BertForSequenceClassification with bge-reranker's
// head names (classifier.dense, classifier.out_proj → cls, cls.output)
// and as transformers saves it (bert.pooler.dense + classifier: the
// converter drops the pooler, so that folder is compared with the file
// without cls.weight / cls.bias); nomic-bert-mini; qwen3-embed-mini
// (lasttoken pooling, <|endoftext|> appended by the post-processor);
// qwen3-rerank-mini (a Qwen3-Reranker folder: cls.output.weight made of
// the tied embeddings' yes/no rows, the rerank template); gemma-embed-mini
// (EmbeddingGemma with 2_Dense / 3_Dense), from the F16 file and the F32
// one.
//
// The folders hold the file's tensors in its types (F16 matrices with F32
// vectors, norms and tables; or all F32), which the converter keeps, so
// both models hold the same bytes and nothing may differ, not even in the
// last bit. Gemma's norm scales are the one value the folder stores
// otherwise (w − 1, converted back as (w − 1) + 1): exact in float32 for
// the presets' scales in [0.5, 2] (WriteEmbedFolder refuses any other),
// so they too are bit-identical.
func TestEmbedFolderMatchesGGUF(t *testing.T) {
	texts := []string{
		"Hello world",
		"The quick brown fox jumps over the lazy dog.",
		"What is the capital of France? Paris is its capital and largest city.",
		"Embeddings map text to vectors; similar texts land close together.",
		"naïve café résumé, 3.14159 and 2024-06-01",
		"  two leading spaces,\ttabs\nand a newline",
		"unbelievably tokenization-heavy hyperparameters",
	}
	query := "What is the capital of France?"
	docs := []string{"Paris is the capital and largest city of France.", "The quick brown fox jumps over the lazy dog.",
		"France's capital, Paris, lies on the Seine.", "Berlin is the capital of Germany."}
	for _, c := range []struct {
		name, preset, typ string
		pooling           string // the pooling both must have
		opts              testmodels.EmbedFolderOptions
		// drop: the file's tensors the converter would not write from this
		// folder (the pooler of transformers' BertForSequenceClassification)
		drop []string
		// set: metadata changed in the file before the folder is written
		// from it: another pooling, or the keys the converter writes from
		// the folder where the preset's differ (bertPairKVs)
		set map[string]any
		// metaSkip: arch keys the folder does not state (the converter
		// writes no pooling type for a cross-encoder; the preset writes
		// RANK, which Loom infers from the head)
		metaSkip []string
	}{
		{name: "bert-mini", preset: "bert-mini", pooling: "mean"},
		// bge-small-en-v1.5's pooling
		{name: "bert-mini+cls", preset: "bert-mini", pooling: "cls", set: map[string]any{"bert.pooling_type": uint32(2)}},
		{name: "bert-rerank-mini", preset: "bert-rerank-mini", pooling: "rank", set: bertPairKVs, metaSkip: []string{"bert.pooling_type"}},
		{name: "bert-rerank-mini+pooler", preset: "bert-rerank-mini", pooling: "rank", opts: testmodels.EmbedFolderOptions{BertPooler: true},
			drop: []string{"cls.weight", "cls.bias"}, set: bertPairKVs, metaSkip: []string{"bert.pooling_type"}},
		{name: "nomic-bert-mini", preset: "nomic-bert-mini", pooling: "mean"},
		{name: "qwen3-embed-mini", preset: "qwen3-embed-mini", pooling: "last"},
		{name: "qwen3-rerank-mini", preset: "qwen3-rerank-mini", pooling: "rank"},
		{name: "gemma-embed-mini", preset: "gemma-embed-mini", pooling: "mean"},
		// all F32, as EmbeddingGemma's checkpoint is
		{name: "gemma-embed-mini-F32", preset: "gemma-embed-mini", typ: "F32", pooling: "mean"},
	} {
		t.Run(c.name, func(t *testing.T) {
			typ := cmp.Or(c.typ, "F16")
			file := testmodels.EmbedModel(t, "modelgen -model "+c.preset+" -type "+typ+" -seed 1")
			if c.set != nil {
				file = rewriteGGUF(t, file, nil, c.set)
			}
			dir := filepath.Join(t.TempDir(), c.preset)
			if err := testmodels.WriteEmbedFolder(dir, file, c.opts); err != nil {
				t.Fatal(err)
			}
			if c.drop != nil {
				file = rewriteGGUF(t, file, c.drop, nil)
			}
			sameTensors(t, dir, file, c.metaSkip)

			opts := engine.Options{Threads: 2, CtxLen: 512}
			eg, err := engine.Load(file, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer eg.Close()
			ef, err := engine.Load(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer ef.Close()
			if eg.Pooling() != c.pooling || ef.Pooling() != eg.Pooling() || ef.EmbedDim() != eg.EmbedDim() {
				t.Fatalf("folder: pooling %q, width %d; file: pooling %q, width %d", ef.Pooling(), ef.EmbedDim(), eg.Pooling(), eg.EmbedDim())
			}
			ctx := context.Background()
			if eg.Pooling() == engine.PoolingRank {
				for _, d := range docs {
					if a, b := ef.RerankTokens(query, d), eg.RerankTokens(query, d); !slices.Equal(a, b) {
						t.Errorf("%q / %q: folder's pair %v, file's %v", query, d, a, b)
					}
				}
				a, err := ef.Rerank(ctx, query, docs, engine.RerankOptions{})
				if err != nil {
					t.Fatal(err)
				}
				b, err := eg.Rerank(ctx, query, docs, engine.RerankOptions{})
				if err != nil {
					t.Fatal(err)
				}
				distinct := map[float32]bool{}
				for i := range a {
					distinct[b[i].Score] = true
					if a[i] != b[i] {
						t.Errorf("document %d: folder %+v, file %+v", i, a[i], b[i])
					}
				}
				if len(distinct) < 2 {
					t.Errorf("the scores %v do not depend on the document", b)
				}
				t.Logf("scores %v", b)
			}
			var inputs [][]int32
			for _, s := range texts {
				a, b := ef.EmbedTokens(s), eg.EmbedTokens(s)
				if !slices.Equal(a, b) {
					t.Errorf("%q: folder's tokens %v, file's %v", s, a, b)
				}
				inputs = append(inputs, b)
			}
			a, err := ef.Embed(ctx, inputs, engine.EmbedOptions{Norm: engine.NormNone})
			if err != nil {
				t.Fatal(err)
			}
			b, err := eg.Embed(ctx, inputs, engine.EmbedOptions{Norm: engine.NormNone})
			if err != nil {
				t.Fatal(err)
			}
			for i := range inputs {
				if !slices.Equal(a[i].Vector, b[i].Vector) {
					d, cos := compare(a[i].Vector, b[i].Vector)
					t.Errorf("%q: the folder's embedding differs from the file's (max |diff| %g, cosine %.9f)", texts[i], d, cos)
				}
				if _, cos := compare(b[i].Vector, b[0].Vector); i > 0 && eg.Pooling() != engine.PoolingRank && cos > 0.9999 {
					t.Errorf("%q and %q: embeddings at cosine %.6f (degenerate)", texts[i], texts[0], cos)
				}
			}
			// EmbedTexts tokenizes with the folder's own tokenizer.json
			got, err := ef.EmbedTexts(ctx, texts[:2], engine.EmbedOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for i, g := range got {
				var n float64
				for _, x := range b[i].Vector {
					n += float64(x) * float64(x)
				}
				want := make([]float32, len(b[i].Vector))
				for j, x := range b[i].Vector {
					want[j] = float32(float64(x) / math.Sqrt(n))
				}
				if d, _ := compare(g.Vector, want); d > 1e-6 || g.Tokens != len(inputs[i]) {
					t.Errorf("EmbedTexts %q: %d tokens, max |diff| %g from the file's (L2-normalized)", texts[i], g.Tokens, d)
				}
			}
		})
	}
}

// sameTensors checks the folder as Loom reads it (internal/hfmodel) against
// the GGUF file: the same tensors (names, types, dims, bytes) and the same
// metadata of the architecture (keys in skip aside).
func sameTensors(t *testing.T, dir, file string, skip []string) {
	t.Helper()
	fo, err := hfmodel.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	f, err := gguf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	arch, _ := f.String("general.architecture")
	if fo.Arch != arch {
		t.Fatalf("folder's architecture %s, file's %s", fo.Arch, arch)
	}
	for i := range f.Tensors {
		w := &f.Tensors[i]
		g, ok := fo.Tensor(w.Name)
		switch {
		case !ok:
			t.Errorf("%s: not in the folder", w.Name)
		case g.Type.String() != w.Type.String() || !slices.Equal(g.Dims, w.Dims):
			t.Errorf("%s: folder %s %v, file %s %v", w.Name, g.Type, g.Dims, w.Type, w.Dims)
		case !bytes.Equal(g.Data, f.TensorData(w)):
			t.Errorf("%s: the folder's values differ from the file's", w.Name)
		}
	}
	if len(fo.Tensors) != len(f.Tensors) {
		t.Errorf("%d tensors from the folder, %d in the file", len(fo.Tensors), len(f.Tensors))
	}
	meta, err := fo.MetaFile()
	if err != nil {
		t.Fatal(err)
	}
	archKVs := func(g *gguf.File) map[string]string {
		m := map[string]string{}
		for _, kv := range g.KVs {
			if strings.HasPrefix(kv.Key, arch+".") && !slices.Contains(skip, kv.Key) {
				m[kv.Key] = fmt.Sprintf("%v %v", kv.Value.Type, kv.Value.V)
			}
		}
		return m
	}
	a, b := archKVs(meta), archKVs(f)
	for k, v := range b {
		if a[k] != v {
			t.Errorf("%s: folder %q, file %q", k, a[k], v)
		}
	}
	for k, v := range a {
		if _, ok := b[k]; !ok {
			t.Errorf("%s: folder %q, not in the file", k, v)
		}
	}
}

// bertPairKVs are the special-token keys the 2026 converter writes for a
// BERT folder (gguf-py's SpecialVocab: the tokenizer_config.json's
// cls/sep become BOS/EOS, and the post-processor's template [CLS] $A
// [SEP] adds both, no separator between a pair's texts beyond that EOS;
// internal/hfmodel's TestBertFolder checks the folder gives them). The
// bert presets carry the older keys of llama.cpp's ggml-vocab-bert-bge.gguf
// (cls_token_id, seperator_token_id, no add_* keys), with which llama.cpp
// (and Loom) format a rerank pair [CLS] query [SEP] document — without
// the final [SEP] that a converted file, like transformers, adds. A
// single text is [CLS] text [SEP] either way.
var bertPairKVs = map[string]any{"tokenizer.ggml.bos_token_id": uint32(101), "tokenizer.ggml.eos_token_id": uint32(102),
	"tokenizer.ggml.add_bos_token": true, "tokenizer.ggml.add_eos_token": true, "tokenizer.ggml.add_sep_token": false}

// rewriteGGUF writes a copy of the GGUF file without the tensors drop
// names and with the metadata set gives (replaced in place, or appended).
func rewriteGGUF(t *testing.T, file string, drop []string, set map[string]any) string {
	t.Helper()
	f, err := gguf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriter()
	w.KVs = slices.Clone(f.KVs)
	var keys []string
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		one := gguf.Writer{}
		one.Set(k, set[k])
		if i := slices.IndexFunc(w.KVs, func(kv gguf.KV) bool { return kv.Key == k }); i >= 0 {
			w.KVs[i] = one.KVs[0]
		} else {
			w.KVs = append(w.KVs, one.KVs[0])
		}
	}
	for i := range f.Tensors {
		ti := &f.Tensors[i]
		if slices.Contains(drop, ti.Name) {
			continue
		}
		if err := w.AddTensor(ti.Name, ti.Type, ti.Dims, f.TensorData(ti)); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), filepath.Base(file))
	fh, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteTo(fh); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}
