package engine_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/sample"
)

// TestStories260K: greedy from BOS for 200 tokens (run.c -n 200) reproduces llama2.c's run.c output byte
// for byte, from the GGUF file and from the llama2.c checkpoint.
func TestStories260K(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "stories260K")
	want, err := os.ReadFile(filepath.Join(dir, "expected_run_c_t0_n200.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, model, tok string }{
		{"gguf", "stories260K.gguf", ""},
		{"llama2c", "stories260K.bin", filepath.Join(dir, "tok512.bin")},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := engine.Load(filepath.Join(dir, c.model), engine.Options{Threads: 2, Tokenizer: c.tok})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			var sb strings.Builder
			_, err = e.Generate(context.Background(), engine.Request{MaxTokens: 200, Sample: sample.Params{Temp: 0}},
				func(s string) error { sb.WriteString(s); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if got, w := strings.TrimSpace(sb.String()), strings.TrimSpace(string(want)); got != w {
				t.Fatalf("text differs from llama2.c:\n got %q\nwant %q", got, w)
			}
		})
	}
}

// largeOnly: CI's reference step passes it after its -short run has
// checked the other recordings, so none is checked twice.
var largeOnly = flag.Bool("refs.large-only", false, "TestReferences: only the 1B-class recordings (-short skips exactly these)")

// TestReferences checks every recording of shared/reference as its README
// defines a match. 1B-class files are skipped under -short, the others
// with -refs.large-only.
func TestReferences(t *testing.T) {
	for _, r := range testmodels.References(t) {
		t.Run(strings.TrimSuffix(r.File, ".jsonl"), func(t *testing.T) {
			if r.Large() && testing.Short() {
				t.Skip("1B-class model: run without -short")
			}
			if !r.Large() && *largeOnly {
				t.Skip("-refs.large-only: the -short run checks it")
			}
			checkReference(t, r)
		})
	}
}

func checkReference(t *testing.T, r testmodels.Ref) {
	checkModel(t, r, r.ModelPath(t), true)
}

// checkModel checks the model at path against r's recording; with
// sameTokenizer the prompt must tokenize to the recorded ids, else the
// recorded ids are evaluated as given.
func checkModel(t *testing.T, r testmodels.Ref, path string, sameTokenizer bool) {
	checkModelWith(t, r, path, sameTokenizer, engine.Options{})
}

// checkModelWith is checkModel with options (LoRA adapters) for the load;
// threads and context are the references'.
func checkModelWith(t *testing.T, r testmodels.Ref, path string, sameTokenizer bool, o engine.Options) {
	rec := r.Load(t)
	o.Threads, o.CtxLen = 2, 512
	for o.CtxLen < len(rec.Prompt.Tokens)+len(rec.Gen)+1 { // the long recordings': 1024
		o.CtxLen *= 2
	}
	e, err := engine.Load(path, o)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ids := e.Tokenize(r.Prompt, true, false)
	if r.PromptTokens > 0 && len(ids) > r.PromptTokens {
		ids = ids[:r.PromptTokens]
	}
	if !sameTokenizer {
		ids = rec.Prompt.Tokens
	}
	if !slices.Equal(ids, rec.Prompt.Tokens) {
		t.Fatalf("prompt tokens differ:\n got %v\nwant %v", ids, rec.Prompt.Tokens)
	}
	if nv := e.Info().NVocab; nv != rec.Prompt.NVocab {
		t.Fatalf("n_vocab %d, reference %d", nv, rec.Prompt.NVocab)
	}
	// Prefill: every row's logits, through the scheduler; the recorded
	// positions' kept (a long recording keeps some of its positions).
	rows := map[int][]float32{}
	for _, tf := range rec.TF {
		rows[tf.Pos] = nil
	}
	st, err := e.Submit(context.Background(), engine.Request{Tokens: ids, EvalOnly: true, AllLogits: true,
		Logits: func(pos int, row []float32) {
			if _, ok := rows[pos]; ok {
				rows[pos] = slices.Clone(row)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res := st[0].Result(); res.Err != nil {
		t.Fatal(res.Err)
	}
	worst, worstLSE := 0.0, 0.0
	for _, tf := range rec.TF {
		row := rows[tf.Pos]
		if row == nil {
			t.Fatalf("no logits after position %d", tf.Pos)
		}
		ours := sample.TopK(row, 10)
		dTop, dl := compareTop(t, r, "pos", tf.Pos, row, ours, tf)
		worst, worstLSE = max(worst, dTop), max(worstLSE, dl)
		// Argmax equal, or a near-tie by llama.cpp's own logits.
		if am := ours[0].ID; am != int32(tf.Top[0][0]) {
			ref := -1e30
			for _, p := range tf.Top {
				if int32(p[0]) == am {
					ref = p[1]
				}
			}
			if tf.Top[0][1]-ref > 2*r.LogitTol {
				t.Errorf("pos %d: argmax %d, llama.cpp %d (not a near-tie)", tf.Pos, am, int32(tf.Top[0][0]))
			}
		}
	}
	// Decode: llama.cpp's greedy tokens fed one at a time after the prompt
	// (the one-token path: vec_dot orders, decode attention), each step's
	// top-10 logits against the recorded gtop line, same tolerances.
	worstDec := 0.0
	var steps [][]int32
	for i, g := range rec.GTop {
		if g.Pos != len(ids)+i || i >= len(rec.Gen) || rec.Gen[i].Token != g.Token {
			t.Fatalf("gtop line %d: pos %d token %d does not follow the greedy tokens", i, g.Pos, g.Token)
		}
		steps = append(steps, []int32{g.Token})
	}
	dec := engine.EvalDecode(t, e, ids, steps...)
	for i, g := range rec.GTop {
		out := dec[i]
		dTop, _ := compareTop(t, r, "decode pos", len(ids)+i, out, sample.TopK(out, 10), g)
		worstDec = max(worstDec, dTop)
	}
	// Greedy generation: the first stable_gen tokens.
	n := min(r.StableGen, len(rec.Gen))
	same := 0 // leading greedy tokens equal to llama.cpp's
	var got []int32
	if n > 0 {
		st, err := e.Submit(context.Background(), engine.Request{Tokens: ids, MaxTokens: n, IgnoreEOS: true, Sample: sample.Params{Temp: 0}})
		if err != nil {
			t.Fatal(err)
		}
		_, got, _ = st[0].Collect()
		var want []int32
		var wantText, gotText []byte
		for _, g := range rec.Gen[:n] {
			want = append(want, g.Token)
			wantText = append(wantText, g.Piece...)
		}
		for _, id := range got {
			gotText = e.Vocab().AppendPiece(gotText, id, true)
		}
		for same < len(got) && same < len(want) && got[same] == want[same] {
			same++
		}
		if string(gotText) == string(wantText) {
			same = n
		}
		if !slices.Equal(got, want) && string(gotText) != string(wantText) {
			t.Errorf("greedy tokens differ within the first %d:\n got %v\nwant %v", n, got, want)
		}
	}
	msg := fmt.Sprintf("AGREEMENT %s: worst top-10 logit diff %.4f (tol %.3f), worst lse diff %.4f (tol %.3f), greedy %d/%d, decode steps %d worst %.4f",
		r.File, worst, r.LogitTol, worstLSE, r.LseTol, same, r.StableGen, len(rec.GTop), worstDec)
	t.Log(msg)
}

// compareTop checks one row of logits against a recorded line: each of
// llama.cpp's top-10 logits that the engine also ranks in its top 10
// (ours) within logit_tol, and the log-sum-exp within lse_tol. It returns
// the worst of each difference.
func compareTop(t *testing.T, r testmodels.Ref, what string, pos int, row []float32, ours []sample.Candidate, rec testmodels.Record) (worst, lse float64) {
	t.Helper()
	inOurs := map[int32]bool{}
	for _, s := range ours {
		inOurs[s.ID] = true
	}
	for _, p := range rec.Top {
		id := int32(p[0])
		if !inOurs[id] {
			continue
		}
		d := math.Abs(float64(row[id]) - p[1])
		worst = max(worst, d)
		if d > r.LogitTol {
			t.Errorf("%s %d token %d: logit %.6f, llama.cpp %.6f (diff %.4f > tol %.3f)", what, pos, id, row[id], p[1], d, r.LogitTol)
		}
	}
	lse = math.Abs(sample.LogSumExp(row) - rec.LSE)
	if lse > r.LseTol {
		t.Errorf("%s %d: lse %.6f, llama.cpp %.6f (diff %.4f > tol %.3f)", what, pos, sample.LogSumExp(row), rec.LSE, lse, r.LseTol)
	}
	return worst, lse
}
