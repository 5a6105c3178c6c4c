package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/loom-inference/loom/engine"
)

// loraFlags are llama.cpp's adapter flags: --lora FILE[:SCALE] (repeatable;
// scale 1 by default) and --lora-init-without-apply (every adapter loaded
// at scale 0: the server's requests turn them on).
type loraFlags struct {
	files     []engine.LoRAFile
	noDefault bool
}

func addLoRAFlags(fs *flag.FlagSet) *loraFlags {
	l := &loraFlags{}
	fs.Func("lora", "apply the LoRA adapter `FILE[:SCALE]` (a GGUF adapter of the model, as llama.cpp's convert_lora_to_gguf.py writes; scale 1 unless given; repeatable)", func(v string) error {
		lf, err := parseLoRA(v)
		if err != nil {
			return err
		}
		l.files = append(l.files, lf)
		return nil
	})
	fs.BoolVar(&l.noDefault, "lora-init-without-apply", false, "load the --lora adapters at scale 0: requests turn them on (the server's \"lora\" field)")
	return l
}

// parseLoRA reads FILE or FILE:SCALE (a path may hold colons: only a
// number after the last one is a scale).
func parseLoRA(v string) (engine.LoRAFile, error) {
	if v == "" {
		return engine.LoRAFile{}, fmt.Errorf("want an adapter file")
	}
	if i := strings.LastIndexByte(v, ':'); i > 0 {
		if s, err := strconv.ParseFloat(v[i+1:], 32); err == nil {
			return engine.LoRAFile{Path: v[:i], Scale: float32(s)}, nil
		}
	}
	return engine.LoRAFile{Path: v, Scale: 1}, nil
}

// adapters is the engine's Options.LoRA.
func (l *loraFlags) adapters() []engine.LoRAFile {
	out := append([]engine.LoRAFile(nil), l.files...)
	if l.noDefault {
		for i := range out {
			out[i].Scale = 0
		}
	}
	return out
}
