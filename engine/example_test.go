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
