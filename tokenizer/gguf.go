package tokenizer

import (
	"fmt"
	"strings"

	"github.com/loom-inference/loom/gguf"
)

// FromGGUF reads the vocabulary stored in a GGUF file's tokenizer.ggml.* keys.
func FromGGUF(f *gguf.File) (*Vocab, error) {
	model, ok := f.String("tokenizer.ggml.model")
	if !ok {
		return nil, fmt.Errorf("%s: no tokenizer.ggml.model", f.Path)
	}
	v := &Vocab{Kind: Kind(model), BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1}
	var err error
	if v.Tokens, err = f.Strings("tokenizer.ggml.tokens"); err != nil {
		return nil, err
	}
	if v.Scores, err = f.Float32s("tokenizer.ggml.scores"); err != nil {
		return nil, err
	}
	types, err := f.Int32s("tokenizer.ggml.token_type")
	if err != nil {
		return nil, err
	}
	if types != nil {
		v.Types = make([]TokenType, len(types))
		for i, t := range types {
			v.Types[i] = TokenType(t)
		}
	}
	v.Pre, _ = f.String("tokenizer.ggml.pre")
	id := func(key string, def int32) int32 {
		x, e := f.UintOr("tokenizer.ggml."+key, uint64(uint32(def)))
		if e != nil || x > 1<<31 {
			return -1
		}
		return int32(uint32(x))
	}
	switch v.Kind {
	case SPM:
		v.BOS, v.EOS, v.UNK = id("bos_token_id", 1), id("eos_token_id", 2), id("unknown_token_id", 0)
		v.AddBOS, v.AddSpacePrefix = true, true
	case BPE:
		v.BOS, v.EOS = id("bos_token_id", 11), id("eos_token_id", 11)
		merges, err := f.Strings("tokenizer.ggml.merges")
		if err != nil {
			return nil, err
		}
		if merges == nil {
			return nil, fmt.Errorf("%s: BPE vocabulary without tokenizer.ggml.merges", f.Path)
		}
		v.Merges = make(map[string]int, len(merges))
		for i, m := range merges {
			if _, dup := v.Merges[m]; !dup {
				v.Merges[m] = i
			}
		}
		if err := v.setPre(); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	case WPM:
		v.BOS, v.EOS, v.UNK, v.PAD = id("bos_token_id", 101), id("eos_token_id", 102), id("unknown_token_id", 100), id("padding_token_id", 0)
		v.AddBOS, v.AddEOS = true, true
	default:
		return nil, fmt.Errorf("%s: tokenizer model %q is not supported", f.Path, model)
	}
	v.EOT = id("eot_token_id", -1)
	v.PAD = id("padding_token_id", -1)
	if v.AddBOS, err = f.Bool("tokenizer.ggml.add_bos_token", v.AddBOS); err != nil {
		return nil, err
	}
	if v.AddEOS, err = f.Bool("tokenizer.ggml.add_eos_token", v.AddEOS); err != nil {
		return nil, err
	}
	if v.AddSpacePrefix, err = f.Bool("tokenizer.ggml.add_space_prefix", v.AddSpacePrefix); err != nil {
		return nil, err
	}
	if err := v.init(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	// llama.cpp also ends generation on a few well-known end tokens.
	if v.EOT < 0 {
		for _, t := range []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"} {
			if i, ok := v.ids[t]; ok && v.Types[i] == Control && i != v.EOS {
				v.EOT = i
				break
			}
		}
	}
	return v, nil
}

// setPre chooses the pre-tokenizer and BPE flags for tokenizer.ggml.pre.
func (v *Vocab) setPre() error {
	switch strings.ToLower(v.Pre) {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral":
		v.IgnoreMerges = true
	}
	if _, ok := preTokenizers[strings.ToLower(v.Pre)]; !ok && v.Pre != "" {
		return fmt.Errorf("tokenizer pre-tokenizer %q is not supported", v.Pre)
	}
	if v.Pre == "" && v.Kind == BPE {
		v.Warnings = append(v.Warnings, "missing pre-tokenizer type, using: 'default' (as llama.cpp does; the file should set tokenizer.ggml.pre)")
	}
	return nil
}
