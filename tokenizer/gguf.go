package tokenizer

import (
	"fmt"
	"strings"

	"github.com/loom-inference/loom/gguf"
)

// FromGGUF reads the vocabulary stored in a GGUF file's tokenizer.ggml.* keys,
// with llama.cpp's defaults, overrides and special-token rules.
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
	// id reads a special token id; a default outside the vocabulary is
	// none, and a value outside it keeps the default (as llama.cpp does).
	n := uint64(len(v.Tokens))
	id := func(key string, def int32) int32 {
		if def >= 0 && uint64(def) >= n {
			def = -1
		}
		x, e := f.UintOr("tokenizer.ggml."+key, n)
		if e != nil || x >= n {
			return def
		}
		return int32(x)
	}
	switch v.Kind {
	case SPM:
		v.BOS, v.EOS, v.UNK = id("bos_token_id", 1), id("eos_token_id", 2), id("unknown_token_id", 0)
		v.AddBOS, v.AddSpacePrefix = true, true
	case BPE, Gemma4:
		if v.Kind == Gemma4 {
			// llama.cpp: a BPE whose special ids all come from the file,
			// always with the gemma4 pre-tokenizer
			v.BOS, v.EOS = id("bos_token_id", -1), id("eos_token_id", -1)
			v.Pre = "gemma4"
		} else {
			v.BOS, v.EOS = id("bos_token_id", 11), id("eos_token_id", 11)
		}
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
	sp := specialIDs{
		eot: v.EOT, eom: id("eom_token_id", -1),
		fimPre: id("fim_pre_token_id", -1), fimSuf: id("fim_suf_token_id", -1), fimMid: id("fim_mid_token_id", -1),
		fimPad: id("fim_pad_token_id", -1), fimRep: id("fim_rep_token_id", -1), fimSep: id("fim_sep_token_id", -1),
	}
	// the deprecated names win when both are present (llama.cpp reads them last)
	sp.fimPre, sp.fimSuf, sp.fimMid = id("prefix_token_id", sp.fimPre), id("suffix_token_id", sp.fimSuf), id("middle_token_id", sp.fimMid)
	if v.AddBOS, err = f.Bool("tokenizer.ggml.add_bos_token", v.AddBOS); err != nil {
		return nil, err
	}
	if v.gemma4 {
		v.AddBOS = true // llama.cpp overrides a file's false for Gemma 4
	}
	if v.AddEOS, err = f.Bool("tokenizer.ggml.add_eos_token", v.AddEOS); err != nil {
		return nil, err
	}
	if v.AddSpacePrefix, err = f.Bool("tokenizer.ggml.add_space_prefix", v.AddSpacePrefix); err != nil {
		return nil, err
	}
	// The pair specials of llama.cpp's rerank input (PairSpecials): for
	// BERT its EOS is none unless the file names one, and SEP is added.
	v.pair.bos, v.pair.addBOS = v.BOS, v.AddBOS
	v.pair.eos, v.pair.addEOS = v.EOS, v.AddEOS
	v.pair.sep, v.pair.read = id("seperator_token_id", -1), true
	if v.Kind == WPM {
		v.pair.eos, v.pair.sep = id("eos_token_id", -1), id("seperator_token_id", 102)
		if v.pair.addEOS, err = f.Bool("tokenizer.ggml.add_eos_token", false); err != nil {
			return nil, err
		}
		v.pair.addSEP = true
	}
	if v.pair.addSEP, err = f.Bool("tokenizer.ggml.add_sep_token", v.pair.addSEP); err != nil {
		return nil, err
	}
	if err := v.init(); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	v.setSpecial(sp)
	return v, nil
}

// setPre chooses the pre-tokenizer and BPE flags for tokenizer.ggml.pre.
func (v *Vocab) setPre() error {
	switch strings.ToLower(v.Pre) {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "tekken":
		v.IgnoreMerges, v.AddBOS = true, true
	case "gemma4", "granite-embed-multi-311m":
		// SentencePiece-style BPE over raw UTF-8: spaces written '▁'
		// before the merges, <0xXX> byte fallback, no UNK
		v.gemma4, v.rawBPE, v.spaceMark = true, true, true
		v.normalize = escapeSpaces
	}
	if _, ok := preTokenizers[strings.ToLower(v.Pre)]; !ok && v.Pre != "" {
		return fmt.Errorf("tokenizer pre-tokenizer %q is not supported", v.Pre)
	}
	if v.Pre == "" && v.Kind == BPE {
		v.Warnings = append(v.Warnings, "missing pre-tokenizer type, using: 'default' (as llama.cpp does; the file should set tokenizer.ggml.pre)")
	}
	return nil
}
