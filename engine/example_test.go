package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/loom-inference/loom/engine"
	"github.com/loom-inference/loom/sample"
)

// Load a model (here the one the binary embeds; any GGUF file or Hugging
// Face folder works the same) and generate greedily, streaming the text.
func Example() {
	path, err := engine.FindModel(engine.DefaultModel)
	if err != nil {
		panic(err)
	}
	e, err := engine.Load(path, engine.Options{Threads: 2})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	var out strings.Builder
	st, err := e.Generate(context.Background(), engine.Request{Prompt: "Once upon a time", MaxTokens: 12, Sample: sample.Params{Temp: 0}},
		func(text string) error { out.WriteString(text); return nil })
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Info().Arch, st.Generated > 0, len(out.String()) > 0)
	// Output: llama true true
}

// Submit a request with two choices and log-probabilities; each stream
// delivers its tokens as the scheduler produces them, then its Result.
func ExampleEngine_Submit() {
	path, err := engine.FindModel(engine.DefaultModel)
	if err != nil {
		panic(err)
	}
	e, err := engine.Load(path, engine.Options{Threads: 2, Parallel: 2})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	streams, err := e.Submit(context.Background(), engine.Request{Prompt: "Once upon a time", MaxTokens: 8, N: 2,
		Sample: sample.Params{Temp: 0.8, Seed: 1}, Logprobs: true})
	if err != nil {
		panic(err)
	}
	for _, st := range streams {
		n := 0
		for {
			ev, ok := st.Next()
			if !ok {
				break
			}
			if ev.ID >= 0 && ev.Logprob <= 0 {
				n++
			}
		}
		r := st.Result()
		fmt.Println(st.Index, n, r.FinishReason, r.Detail)
	}
	// Output:
	// 0 8 length max_tokens
	// 1 8 length max_tokens
}
