package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// TestEmbedReferences: every embedding and reranking recording of
// testdata/reference-embed (llama.cpp 2026 through node-llama-cpp 3.22.1)
// agrees with Loom on the same file: each input's tokens are Loom's own
// tokenization of its text, its raw pooled output is within the
// recording's tolerance (llama.cpp's own flash-attention/KV variation) and
// at cosine ≥ the recording's (and ≥ 0.9999 on F16 files), and a
// reranker's raw scores
// too — for the (query, document) pairs as Loom formats them
// (RerankTokens) wherever llama-server formats them the same way.
func TestEmbedReferences(t *testing.T) {
	recs, err := testmodels.EmbedRecordings()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no recordings in testdata/reference-embed/index.tsv")
	}
	for _, r := range recs {
		t.Run(strings.TrimSuffix(r.File, ".jsonl"), func(t *testing.T) {
			ref, err := r.Load()
			if err != nil {
				t.Fatal(err)
			}
			e, err := engine.Load(testmodels.EmbedModel(t, r.Source), engine.Options{Threads: 2, CtxLen: 512})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if got := e.Pooling(); got != r.Pooling {
				t.Fatalf("pooling %q, recording %q", got, r.Pooling)
			}
			ctx := context.Background()
			// The cosine bar is llama.cpp's own: its variants' (issue
			// 27's 0.9999 holds where llama.cpp itself holds it — the
			// F16 files; Q8_0's quantized activations move its own
			// variants below it, to 0.9987–0.99994).
			minCos := r.MinCos
			if strings.Contains(r.Model, "F16") {
				minCos = max(minCos, 0.9999)
			}
			var worstAbs, worstCos float64 = 0, 1
			for _, rec := range ref.Embeds {
				if got := e.Tokenize(rec.Text, true, false); !slices.Equal(got, rec.Tokens) {
					t.Errorf("%q: tokens %v, llama.cpp %v", rec.Text, got, rec.Tokens)
				}
				out, err := e.Embed(ctx, [][]int32{rec.Tokens}, engine.EmbedOptions{Norm: engine.NormNone})
				if err != nil {
					t.Fatalf("%q: %v", rec.Text, err)
				}
				d, c := compare(out[0].Vector, rec.Embedding)
				worstAbs, worstCos = max(worstAbs, d), min(worstCos, c)
				if d > r.AbsTol || c < minCos {
					t.Errorf("%q: max |diff| %.5f (tolerance %.5f), cosine %.7f (want ≥ %.7f)", rec.Text, d, r.AbsTol, c, minCos)
				}
			}
			for _, rec := range ref.Ranks {
				server, raw := rec.Tokens, rec.Raw
				if rec.ServerTokens != nil { // node formats a template reranker's pair its own way
					server, raw = rec.ServerTokens, rec.ServerRaw
				}
				if got := e.RerankTokens(rec.Query, rec.Document); !slices.Equal(got, server) {
					t.Errorf("%q / %q: pair tokens %v, llama-server %v", rec.Query, rec.Document, got, server)
				}
				for _, c := range []struct {
					toks []int32
					raw  []float32
				}{{rec.Tokens, rec.Raw}, {server, raw}} {
					out, err := e.Embed(ctx, [][]int32{c.toks}, engine.EmbedOptions{Norm: engine.NormNone})
					if err != nil {
						t.Fatalf("%q / %q: %v", rec.Query, rec.Document, err)
					}
					d, _ := compare(out[0].Vector, c.raw)
					worstAbs = max(worstAbs, d)
					if d > r.AbsTol {
						t.Errorf("%q / %q: raw scores %v, llama.cpp %v (tolerance %.5f)", rec.Query, rec.Document, out[0].Vector, c.raw, r.AbsTol)
					}
				}
			}
			if len(ref.Ranks) > 0 { // Rerank is Embed of RerankTokens, through the scheduler together
				var docs []string
				for _, rec := range ref.Ranks {
					docs = append(docs, rec.Document)
				}
				q := ref.Ranks[0].Query
				got, err := e.Rerank(ctx, q, docs, engine.RerankOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for i, g := range got {
					one, err := e.Embed(ctx, [][]int32{e.RerankTokens(q, docs[i])}, engine.EmbedOptions{Norm: engine.NormNone})
					if err != nil {
						t.Fatal(err)
					}
					if g.Index != i || g.Score != one[0].Vector[0] {
						t.Errorf("rerank %d: %+v, alone %v", i, g, one[0].Vector[0])
					}
				}
			}
			t.Logf("%s: worst |diff| %.6f (tolerance %.6f), worst cosine %.8f", r.Model, worstAbs, r.AbsTol, worstCos)
			fmt.Printf("AGREEMENT embed %s: max|diff| %.6f tol %.6f, min cos %.8f\n", r.Model, worstAbs, r.AbsTol, worstCos)
		})
	}
}

// compare returns the largest |a−b| and the cosine of a and b (0 and −1
// when their lengths differ).
func compare(a, b []float32) (maxAbs, cos float64) {
	if len(a) != len(b) || len(a) == 0 {
		return math.Inf(1), -1
	}
	var ab, aa, bb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		maxAbs = max(maxAbs, math.Abs(x-y))
		ab, aa, bb = ab+x*y, aa+x*x, bb+y*y
	}
	return maxAbs, ab / math.Sqrt(aa*bb)
}

// TestPoolingOverride: Options.Pooling makes a text-generation model an
// embedding model (llama.cpp's --embedding --pooling last): its vector is
// the final norm's output at the last token — the row its LM head would
// read — so generation is refused and Embed works; an embedding model
// pools otherwise when asked (cls on bert-mini is its first row, which
// mean pooling averages in), a reranker's head is kept, and a pooling
// name llama.cpp does not know is refused.
func TestPoolingOverride(t *testing.T) {
	ctx := context.Background()
	gen := testmodels.EmbedModel(t, "modelgen -model qwen3-embed-mini -type F16 -seed 1")
	plain, err := engine.Load(gen, engine.Options{Threads: 2, CtxLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	ids := plain.EmbedTokens("The quick brown fox")
	want, err := plain.Embed(ctx, [][]int32{ids}, engine.EmbedOptions{Norm: engine.NormNone})
	plain.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pooling string
		check   func(t *testing.T, e *engine.Engine)
	}{
		{"last", func(t *testing.T, e *engine.Engine) {
			got, err := e.Embed(ctx, [][]int32{ids}, engine.EmbedOptions{Norm: engine.NormNone})
			if err != nil || !slices.Equal(got[0].Vector, want[0].Vector) {
				t.Errorf("last pooling asked for: %v, %v; the file's last pooling gave %v", got, err, want[0].Vector[:4])
			}
		}},
		{"mean", func(t *testing.T, e *engine.Engine) {
			got, err := e.Embed(ctx, [][]int32{ids}, engine.EmbedOptions{Norm: engine.NormNone})
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := compare(got[0].Vector, want[0].Vector); d == 0 {
				t.Error("mean pooling equals last pooling")
			}
			// A causal model's prompt may come in chunks (a step budget
			// of 4 tokens): the mean sums across them.
			small, err := engine.Load(gen, engine.Options{Threads: 2, CtxLen: 256, Pooling: "mean", StepTokens: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer small.Close()
			chunked, err := small.Embed(ctx, [][]int32{ids}, engine.EmbedOptions{Norm: engine.NormNone})
			if err != nil {
				t.Fatal(err)
			}
			if d, c := compare(chunked[0].Vector, got[0].Vector); c < 0.99999 {
				t.Errorf("mean over 4-token chunks: max |diff| %g, cosine %.7f against one chunk", d, c)
			}
		}},
		{"none", func(t *testing.T, e *engine.Engine) {
			got, err := e.Embed(ctx, [][]int32{ids}, engine.EmbedOptions{Norm: engine.NormNone})
			if err != nil {
				t.Fatal(err)
			}
			if p := got[0].PerToken; len(p) != len(ids) || !slices.Equal(p[len(p)-1], want[0].Vector) {
				t.Errorf("pooling none: %d vectors for %d tokens (the last one must be last pooling's)", len(p), len(ids))
			}
		}},
	} {
		t.Run(c.pooling, func(t *testing.T) {
			e, err := engine.Load(gen, engine.Options{Threads: 2, CtxLen: 256, Pooling: c.pooling})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.Pooling() != c.pooling {
				t.Fatalf("pooling %q", e.Pooling())
			}
			c.check(t, e)
		})
	}
	if _, err := engine.Load(gen, engine.Options{Pooling: "max"}); err == nil || !strings.Contains(err.Error(), `pooling "max"`) {
		t.Errorf("unknown pooling: %v", err)
	}
	if _, err := engine.Load(gen, engine.Options{Pooling: "rank"}); err == nil || !strings.Contains(err.Error(), "cls.output.weight") {
		t.Errorf("rank pooling without a head: %v", err)
	}
	// A generation model made an embedder refuses to generate.
	stories := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "gguf", "TinyStories-656K-Q8_0.gguf")
	e, err := engine.Load(stories, engine.Options{Threads: 2, Pooling: "mean"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Generate(ctx, engine.Request{Prompt: "Once", MaxTokens: 4}, func(string) error { return nil }); !errors.Is(err, engine.ErrNotGenerative) {
		t.Errorf("generation on a pooled model: %v", err)
	}
	if out, err := e.EmbedTexts(ctx, []string{"Once upon a time"}, engine.EmbedOptions{}); err != nil || len(out[0].Vector) != e.EmbedDim() {
		t.Errorf("embedding with a generation model's body: %v", err)
	}
}
