// Package families registers every model family Loom runs: importing it
// (for its side effect) makes their architectures known to model.Lookup.
// Adding a family is one package beside the others and one line here.
package families

import (
	_ "github.com/loom-inference/loom/internal/model/bert"
	_ "github.com/loom-inference/loom/internal/model/gemma2"
	_ "github.com/loom-inference/loom/internal/model/gemma3"
	_ "github.com/loom-inference/loom/internal/model/gemma4"
	_ "github.com/loom-inference/loom/internal/model/gpt2"
	_ "github.com/loom-inference/loom/internal/model/gptoss"
	_ "github.com/loom-inference/loom/internal/model/granite"
	_ "github.com/loom-inference/loom/internal/model/lfm2"
	_ "github.com/loom-inference/loom/internal/model/llama"
	_ "github.com/loom-inference/loom/internal/model/mistral3"
	_ "github.com/loom-inference/loom/internal/model/phi3"
	_ "github.com/loom-inference/loom/internal/model/qwen2"
	_ "github.com/loom-inference/loom/internal/model/qwen3"
	_ "github.com/loom-inference/loom/internal/model/qwen35"
	_ "github.com/loom-inference/loom/internal/model/smollm3"
)
