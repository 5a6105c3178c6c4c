package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/internal/testmodels"
)

// BenchmarkEmbedSentences embeds 256 sentences of about 32 tokens on the
// BERT-base-shape file (768 wide, 12 layers) at 2 threads, through the
// scheduler as the server does, at a few step budgets; b.N counts batches
// of 256. Compare with llama.cpp's llama-server --embedding on the same file
// (issue 27's closing note has the commands).
func BenchmarkEmbedSentences(b *testing.B) {
	for _, typ := range []string{"F16", "Q8_0"} {
		path := testmodels.EmbedModel(b, "modelgen -model bert-base-shape -type "+typ+" -seed 1")
		for _, step := range []int{512, 2048} {
			b.Run(fmt.Sprintf("%s/step%d", typ, step), func(b *testing.B) {
				e, err := engine.Load(path, engine.Options{Threads: 2, StepTokens: step})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				texts := sentences(256)
				b.ResetTimer()
				toks := 0
				for range b.N {
					out, err := e.EmbedTexts(context.Background(), texts, engine.EmbedOptions{})
					if err != nil {
						b.Fatal(err)
					}
					for _, o := range out {
						toks += o.Tokens
					}
				}
				b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "inputs/s")
				b.ReportMetric(float64(toks)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

// sentences makes n lowercase sentences of 27 to 33 common words.
func sentences(n int) []string {
	words := strings.Fields("the of and to in is was for on that with as by at from his her they this which but be are have had not one all were when we there can an your their said if do will each about how up out them then she many some so these would other into has more two like him see time could no make than first been its who now people my made over did down only way find use may water long little very after words called just where most know get through back much before go good new write our used me man too any day same right look think also around another came come work three word must because does part even place well such")
	r := rand.New(rand.NewPCG(7, 7))
	out := make([]string, n)
	for i := range out {
		k := 27 + r.IntN(7)
		s := make([]string, k)
		for j := range s {
			s[j] = words[r.IntN(len(words))]
		}
		out[i] = strings.Join(s, " ") + "."
	}
	return out
}
