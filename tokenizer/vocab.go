// Package tokenizer turns text into token ids and back, exactly as
// llama.cpp does for the same vocabulary: SentencePiece-style BPE ("llama"),
// byte-level BPE ("gpt2") with llama.cpp's pre-tokenizers, special-token
// parsing and streaming, UTF-8 safe detokenization.
package tokenizer

import (
	"fmt"
	"sort"
)

// TokenType is the GGUF tokenizer.ggml.token_type value.
type TokenType int32

// Token types as llama.cpp stores them.
const (
	Normal      TokenType = 1
	Unknown     TokenType = 2
	Control     TokenType = 3
	UserDefined TokenType = 4
	Unused      TokenType = 5
	Byte        TokenType = 6
)

// Kind is the vocabulary family (tokenizer.ggml.model).
type Kind string

// Families.
const (
	SPM Kind = "llama"
	BPE Kind = "gpt2"
	WPM Kind = "bert"
	// Gemma4 is llama.cpp's "gemma4" model: a BPE over raw UTF-8 with
	// spaces written '▁' and <0xXX> byte fallback (Gemma 4's tokenizer).
	Gemma4 Kind = "gemma4"
)

// Vocab is a vocabulary with its special ids and flags.
type Vocab struct {
	Kind   Kind
	Pre    string // tokenizer.ggml.pre
	Tokens []string
	Scores []float32
	Types  []TokenType
	Merges map[string]int // BPE: "left right" → rank

	BOS, EOS, EOT, UNK, PAD int32 // -1 when absent
	AddBOS, AddEOS          bool
	AddSpacePrefix          bool     // SPM: prepend a space to the text
	IgnoreMerges            bool     // BPE: a pre-token already in the vocabulary is one token
	Warnings                []string // what loading noticed (the caller decides whether to print)

	// Hugging Face tokenizer.json settings (zero for GGUF vocabularies).
	normalize func(string) string // applied before pre-tokenization (BPE)
	pre       preTokenizer        // overrides Pre
	rawBPE    bool                // merges over characters, not byte-level; byte fallback <0xNN>
	spaceMark bool                // pieces use '▁' for a space (SPM-style decoding)

	// llama.cpp's end-of-generation set (special.go): eog ascending;
	// notEOG the tokens its workarounds took out (never EOG, even as EOS/EOT).
	eog, notEOG []int32

	gemma4 bool // SentencePiece-style BPE of tokenizer model "gemma4" (gguf.go)

	pair pairSpecials // llama.cpp's view of BOS/EOS/SEP for a text pair (PairSpecials)

	ids     map[string]int32
	special []int32 // control/user-defined/unknown tokens, longest text first
	byteTok [256]int32
}

// init builds the lookup tables; called by every constructor.
func (v *Vocab) init() error {
	n := len(v.Tokens)
	if n == 0 {
		return fmt.Errorf("tokenizer: empty vocabulary")
	}
	if v.Scores != nil && len(v.Scores) != n {
		return fmt.Errorf("tokenizer: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types == nil {
		v.Types = make([]TokenType, n)
		for i := range v.Types {
			v.Types[i] = Normal
		}
	} else if len(v.Types) != n {
		return fmt.Errorf("tokenizer: %d token types for %d tokens", len(v.Types), n)
	}
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.EOT, &v.UNK, &v.PAD} {
		if *id >= int32(n) || *id < -1 {
			*id = -1
		}
	}
	v.ids = make(map[string]int32, n)
	for i, t := range v.Tokens {
		if _, dup := v.ids[t]; !dup {
			v.ids[t] = int32(i)
		}
	}
	v.buildSpecial()
	for b := range 256 {
		v.byteTok[b] = -1
		if v.gemma4 {
			// llama.cpp's gemma4 BPE falls back to <0xXX> tokens only
			if id, ok := v.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
				v.byteTok[b] = id
			}
		} else if v.Kind == SPM || v.Kind == WPM || v.rawBPE {
			if id, ok := v.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
				v.byteTok[b] = id
			} else if id, ok := v.ids[string(rune(b))]; ok && b < 0x80 {
				v.byteTok[b] = id
			}
		} else if id, ok := v.ids[string(byteToRune[b])]; ok {
			v.byteTok[b] = id
		}
	}
	return nil
}

// buildSpecial lists the tokens partition matches in text (llama.cpp's
// cache_special_tokens): control, user-defined and unknown, longest first.
func (v *Vocab) buildSpecial() {
	v.special = v.special[:0]
	for i, t := range v.Tokens {
		switch v.Types[i] {
		case Control, UserDefined, Unknown:
			if t != "" {
				v.special = append(v.special, int32(i))
			}
		}
	}
	sort.SliceStable(v.special, func(a, b int) bool {
		return len(v.Tokens[v.special[a]]) > len(v.Tokens[v.special[b]])
	})
}

// Len is the vocabulary size.
func (v *Vocab) Len() int { return len(v.Tokens) }

// ID looks up a token by its text.
func (v *Vocab) ID(text string) (int32, bool) { id, ok := v.ids[text]; return id, ok }

func (v *Vocab) score(id int32) float32 {
	if v.Scores == nil {
		return 0
	}
	return v.Scores[id]
}

// PadTo appends unused "[PADi]" tokens up to n (a model whose embedding
// has rows past its tokenizer, as llama.cpp's converter pads it); a vocab
// already that long is left alone.
func (v *Vocab) PadTo(n int) error {
	if n <= len(v.Tokens) {
		return nil
	}
	if n > 1<<24 {
		return fmt.Errorf("tokenizer: padding to %d tokens", n)
	}
	for i := len(v.Tokens); i < n; i++ {
		v.Tokens = append(v.Tokens, fmt.Sprintf("[PAD%d]", i))
		v.Types = append(v.Types, Unused)
		if v.Scores != nil {
			v.Scores = append(v.Scores, -1000)
		}
	}
	return v.init()
}

// pairSpecials are the special tokens llama.cpp puts around a text pair.
type pairSpecials struct {
	bos, eos, sep          int32
	addBOS, addEOS, addSEP bool
	read                   bool // set from a GGUF file's keys
}

// PairSpecials returns the special tokens llama.cpp's server puts around
// a (query, document) pair for a reranker (format_prompt_rerank): BOS
// first when addBOS, EOS after each text when addEOS (SEP standing in for
// a missing EOS), SEP between them when addSEP. They are llama.cpp's
// reading of the vocabulary, which for BERT differs from Encode's (Loom
// appends [SEP] as BERT's EOS; llama.cpp has no EOS there but adds SEP).
// Ids are -1 when absent. A vocabulary not read from GGUF takes BOS and
// EOS as Encode adds them, and no SEP.
func (v *Vocab) PairSpecials() (bos, eos, sep int32, addBOS, addEOS, addSEP bool) {
	p := v.pair
	if !p.read {
		p = pairSpecials{bos: v.BOS, eos: v.EOS, sep: -1, addBOS: v.AddBOS, addEOS: v.AddEOS}
	}
	if p.eos < 0 {
		p.eos = p.sep
	}
	return p.bos, p.eos, p.sep, p.addBOS, p.addEOS, p.addSEP
}
