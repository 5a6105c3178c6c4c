package testmodels

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/gguf"
)

// TestEmbedFilesUnchanged regenerates every model of
// testdata/reference-embed/index.tsv, checks its sha256 (a change to the
// writer, the presets or the vocabularies would silently make the
// recordings describe other files) and reads its recording.
func TestEmbedFilesUnchanged(t *testing.T) {
	assets := filepath.Join(Shared(t), "models")
	recs, err := EmbedRecordings()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no rows in testdata/reference-embed/index.tsv")
	}
	for _, r := range recs {
		o, err := ParseModernSource(r.Source)
		if err != nil {
			t.Fatal(err)
		}
		o.Assets = assets
		h := sha256.New()
		if err := WriteModelgen(h, o); err != nil {
			t.Fatalf("%s: %v", r.Source, err)
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != r.SHA256 {
			t.Errorf("%s: sha256 %s, index.tsv has %s", r.Source, got, r.SHA256)
		}
		ref, err := r.Load()
		if err != nil {
			t.Fatal(err)
		}
		m := ref.Meta
		if m.Source != r.Source || m.Pooling != r.Pooling || m.NOut != r.NOut || !m.RepeatIdentical || len(m.Variants) != 4 {
			t.Errorf("%s: meta %+v disagrees with index.tsv %+v", r.File, m, r)
		}
		if r.AbsTol <= 0 || (r.Pooling == "rank") != (r.ScoreTol > 0) || (r.Pooling == "rank") == (r.MinCos > 0) {
			t.Errorf("%s: tolerances %g %g %g", r.File, r.AbsTol, r.MinCos, r.ScoreTol)
		}
		if r.Pooling == "rank" {
			if len(ref.Ranks) == 0 || len(ref.Embeds) != 0 {
				t.Errorf("%s: %d rank and %d embed lines", r.File, len(ref.Ranks), len(ref.Embeds))
			}
			for _, x := range ref.Ranks {
				if len(x.Tokens) == 0 || len(x.Raw) != r.NOut || x.Score <= 0 || x.Score >= 1 {
					t.Errorf("%s: %q / %q: %d tokens, raw %v, score %g", r.File, x.Query, x.Document, len(x.Tokens), x.Raw, x.Score)
				}
				if m.RankTemplate != nil && (len(x.ServerTokens) == 0 || len(x.ServerRaw) != r.NOut) {
					t.Errorf("%s: %q / %q: no llama-server-style input", r.File, x.Query, x.Document)
				}
			}
			continue
		}
		if len(ref.Embeds) == 0 || len(ref.Ranks) != 0 {
			t.Errorf("%s: %d embed and %d rank lines", r.File, len(ref.Embeds), len(ref.Ranks))
		}
		for _, x := range ref.Embeds {
			if len(x.Tokens) == 0 || len(x.Embedding) != r.NOut {
				t.Errorf("%s: %q: %d tokens, %d values", r.File, x.Text, len(x.Tokens), len(x.Embedding))
			}
		}
	}
}

// TestEmbedPresets writes every preset and checks the file's architecture,
// pooling type and tensor set, and that qwen3-rerank-mini's cls.output rows
// are the token_embd rows of "yes" and "no".
func TestEmbedPresets(t *testing.T) {
	assets := filepath.Join(Shared(t), "models")
	for _, p := range EmbedPresets {
		if p.Name == "bert-base-shape" && testing.Short() {
			continue
		}
		var buf bytes.Buffer
		if err := WriteEmbed(&buf, ModernOptions{Model: p.Name, Type: "F16", Seed: 1, Assets: assets}); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		f, err := gguf.Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if a, _ := f.String("general.architecture"); a != p.Arch {
			t.Errorf("%s: architecture %q, want %q", p.Name, a, p.Arch)
		}
		pool, err := f.Uint(p.Arch + ".pooling_type")
		want := map[string]uint64{"mean": poolMean, "cls": poolCLS, "last": poolLast, "rank": poolRank}[p.Pooling]
		if err != nil || pool != want {
			t.Errorf("%s: pooling_type %d (%v), want %d", p.Name, pool, err, want)
		}
		_, cls := f.Tensor("cls.output.weight")
		if cls != (p.Pooling == "rank") {
			t.Errorf("%s: cls.output.weight present %v", p.Name, cls)
		}
		if p.Name != "qwen3-rerank-mini" {
			continue
		}
		toks, _ := f.Strings("tokenizer.ggml.tokens")
		id := map[string]int{}
		for i, s := range toks {
			id[s] = i
		}
		emb, _ := f.Tensor("token_embd.weight")
		out, _ := f.Tensor("cls.output.weight")
		e, o := f.TensorData(emb), f.TensorData(out)
		row := len(o) / 2
		if !bytes.Equal(o[:row], e[id["yes"]*row:(id["yes"]+1)*row]) || !bytes.Equal(o[row:], e[id["no"]*row:(id["no"]+1)*row]) {
			t.Errorf("qwen3-rerank-mini: cls.output rows are not token_embd's yes / no rows")
		}
		if tmpl, _ := f.String("tokenizer.chat_template.rerank"); tmpl != qwen3RerankTemplate {
			t.Errorf("qwen3-rerank-mini: rerank template %q", tmpl)
		}
	}
}
