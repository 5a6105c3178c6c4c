// Command modelgen writes one of testmodels' reduced-size random-weight GGUF
// presets (mistral3-mini, gemma4-mini, gemma4moe-mini, the hybrid presets
// lfm2-mini, granitehybrid-mini, qwen35moe-mini, qwen3next-mini, and the embedding and
// reranking presets bert-mini, bert-rerank-mini, nomic-bert-mini,
// qwen3-embed-mini, qwen3-rerank-mini, gemma-embed-mini, bert-base-shape),
// deterministically:
//
//	go run ./internal/testmodels/cmd/modelgen -model gemma4-mini -type F16 -seed 1 -o gemma4-mini-F16.gguf
//
// -set KEY=VALUE and -fill TENSOR_PATTERN=VALUE change the file for
// experiments (switching a feature off to see that it matters); the
// recordings in testdata/reference-modern use neither.
package main

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/loom-inference/loom/internal/testmodels"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, " ") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var o testmodels.ModernOptions
	var sets, fills list
	out := flag.String("o", "", "output file")
	listPresets := flag.Bool("list", false, "list the presets")
	flag.StringVar(&o.Model, "model", "", "preset")
	flag.StringVar(&o.Type, "type", "F16", "weight type: F32, F16 or Q8_0")
	flag.Uint64Var(&o.Seed, "seed", 1, "random seed")
	flag.StringVar(&o.Assets, "assets", "", "shared/models (default: ../shared/models beside the repository)")
	flag.Var(&sets, "set", "KEY=VALUE: override a metadata value (repeatable; KEY= deletes)")
	flag.Var(&fills, "fill", "PATTERN=VALUE: fill the matching tensors with a constant (repeatable)")
	flag.Parse()
	if *listPresets {
		for _, p := range testmodels.ModernPresets {
			fmt.Printf("%-15s %-9s %s\n", p.Name, p.Arch, p.Desc)
		}
		for _, p := range testmodels.HybridPresets {
			fmt.Printf("%-18s %-13s %s\n", p.Name, p.Arch, p.Desc)
		}
		for _, p := range testmodels.EmbedPresets {
			fmt.Printf("%-17s %-15s %-4s %s\n", p.Name, p.Arch, p.Pooling, p.Desc)
		}
		return
	}
	if *out == "" || o.Model == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	o.Set, o.Fill = sets, fills
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h := sha256.New()
	if err := testmodels.WriteModelgen(io.MultiWriter(f, h), o); err != nil {
		f.Close()
		os.Remove(*out)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%s %s seed %d) sha256 %x\n", *out, o.Model, o.Type, o.Seed, h.Sum(nil))
}
