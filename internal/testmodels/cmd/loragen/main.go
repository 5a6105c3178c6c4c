// Command loragen writes a random LoRA adapter for a base GGUF model, as
// llama.cpp's convert_lora_to_gguf.py would write a PEFT adapter of that
// rank and alpha (testmodels.WriteLoRA):
//
//	go run ./internal/testmodels/cmd/loragen -base BASE.gguf -rank 8 -alpha 16 -seed 1 -type F32 -targets 'attn_(q|v)|ffn_(up|down)' -o OUT.gguf
package main

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
)

func main() {
	base := flag.String("base", "", "the base model `FILE`")
	rank := flag.Int("rank", 8, "rank")
	alpha := flag.Float64("alpha", 16, "adapter.lora.alpha")
	seed := flag.Uint64("seed", 1, "seed")
	typ := flag.String("type", "F32", "F32 or F16")
	targets := flag.String("targets", `attn_(q|v)\.weight|ffn_(up|down)\.weight`, "regexp of the adapted weights")
	std := flag.Float64("std", 0, "standard deviation of lora_b (0: 0.02)")
	out := flag.String("o", "", "output `FILE`")
	flag.Parse()
	if *base == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: loragen -base BASE.gguf -o OUT.gguf [-rank R] [-alpha A] [-seed S] [-type F32|F16] [-targets RE]")
		os.Exit(2)
	}
	f, err := gguf.Open(*base)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	var buf bytes.Buffer
	o := testmodels.LoRAOptions{Rank: *rank, Alpha: float32(*alpha), Seed: *seed, Type: *typ, Targets: *targets, Std: *std}
	if err := testmodels.WriteLoRA(&buf, f, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s sha256 %x\n", *out, sha256.Sum256(buf.Bytes()))
}
