package tokenizer

import (
	"slices"
	"testing"
)

// TestEOGRules: llama.cpp's end-of-generation set and type changes on
// small vocabularies shaped like each family's (the llama.cpp-recorded
// versions are in llamacpp2026_test.go).
func TestEOGRules(t *testing.T) {
	N, U, C := Normal, UserDefined, Control
	type tok struct {
		text string
		typ  TokenType
	}
	for _, c := range []struct {
		name      string
		toks      []tok
		eos       string
		ids       func(id func(string) int32) specialIDs
		eog       []string // the set, EOS and EOT included
		eot       string
		types     map[string]TokenType // after loading
		printed   []string             // printed without rendering special tokens
		notEOGEOT bool                 // EOT is a token the workarounds took out
	}{
		{name: "llama 3", toks: []tok{{"<|begin_of_text|>", C}, {"<|end_of_text|>", C}, {"<|start_header_id|>", C}, {"<|eot_id|>", C}, {"<|eom_id|>", C}, {"<|python_tag|>", C}},
			eos: "<|end_of_text|>", eog: []string{"<|end_of_text|>", "<|eot_id|>", "<|eom_id|>"}, eot: "<|eot_id|>"},
		{name: "qwen 2.5", toks: []tok{{"<|endoftext|>", C}, {"<|im_start|>", C}, {"<|im_end|>", C}, {"<|fim_prefix|>", U}, {"<|fim_middle|>", U}, {"<|fim_suffix|>", U}, {"<|fim_pad|>", U}, {"<|repo_name|>", U}, {"<|file_sep|>", U}, {"<tool_call>", U}},
			eos: "<|im_end|>", eog: []string{"<|endoftext|>", "<|im_end|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"}, eot: "<|im_end|>",
			types: map[string]TokenType{"<|fim_prefix|>": C, "<|fim_pad|>": C, "<tool_call>": U}, printed: []string{"<tool_call>"}},
		{name: "phi-3", toks: []tok{{"<unk>", Unknown}, {"<s>", C}, {"</s>", U}, {"<|endoftext|>", C}, {"<|assistant|>", U}, {"<|end|>", U}, {"<|user|>", U}},
			eos: "<|endoftext|>", ids: func(id func(string) int32) specialIDs { s := noSpecialIDs(); s.eot = id("<|end|>"); return s },
			eog: []string{"</s>", "<|endoftext|>", "<|end|>"}, eot: "<|end|>", types: map[string]TokenType{"</s>": C, "<|end|>": C, "<|user|>": U}, printed: []string{"<|user|>", "<|assistant|>"}},
		{name: "gemma 3", toks: []tok{{"<pad>", C}, {"<eos>", C}, {"<bos>", C}, {"<start_of_turn>", U}, {"<end_of_turn>", U}},
			eos: "<eos>", eog: []string{"<eos>", "<end_of_turn>"}, eot: "<end_of_turn>", types: map[string]TokenType{"<end_of_turn>": C, "<start_of_turn>": U}, printed: []string{"<start_of_turn>"}},
		{name: "gpt-oss", toks: []tok{{"<|startoftext|>", C}, {"<|endoftext|>", C}, {"<|return|>", C}, {"<|constrain|>", C}, {"<|channel|>", C}, {"<|start|>", C}, {"<|end|>", C}, {"<|message|>", C}, {"<|call|>", C}},
			eos: "<|return|>", eog: []string{"<|endoftext|>", "<|return|>", "<|call|>"}, eot: "<|end|>", notEOGEOT: true,
			types:   map[string]TokenType{"<|end|>": U, "<|channel|>": U, "<|message|>": U, "<|start|>": U, "<|constrain|>": U, "<|call|>": C},
			printed: []string{"<|end|>", "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}},
		{name: "solar-open", toks: []tok{{"<|endoftext|>", C}, {"<|end|>", C}, {"<|calls|>", C}, {"<|flush|>", C}},
			eos: "<|endoftext|>", eog: []string{"<|endoftext|>", "<|calls|>", "<|flush|>"}, eot: "<|end|>", notEOGEOT: true, types: map[string]TokenType{"<|end|>": U}, printed: []string{"<|end|>"}},
		{name: "harmony without <|call|>", toks: []tok{{"<|return|>", C}, {"<|end|>", C}},
			eog: []string{"<|return|>", "<|end|>"}, eot: "<|end|>"},
		{name: "gemma 4", toks: []tok{{"<pad>", C}, {"<eos>", C}, {"<bos>", C}, {"<|turn>", C}, {"<turn|>", C}, {"<|tool_response>", U}, {"<tool_response|>", U}, {"</s>", N}},
			eos: "<eos>", eog: []string{"<eos>", "<turn|>", "<|tool_response>"},
			types: map[string]TokenType{"<|tool_response>": C, "<tool_response|>": U, "</s>": N}, printed: []string{"<tool_response|>", "</s>"}},
		{name: "paddleocr", toks: []tok{{"<s>", C}, {"</s>", N}}, eog: []string{"</s>"}, types: map[string]TokenType{"</s>": C}},
		{name: "keys", toks: []tok{{"a", N}, {"b", N}, {"c", N}, {"d", N}, {"<PAD>", N}, {"<|eot_id|>", N}},
			ids: func(id func(string) int32) specialIDs {
				s := noSpecialIDs()
				s.eot, s.eom, s.fimPad, s.fimRep = id("a"), id("b"), id("c"), id("d")
				return s
			},
			eog: []string{"a", "b", "c", "d", "<|eot_id|>"}, eot: "a", types: map[string]TokenType{"a": N, "b": N, "<PAD>": N, "<|eot_id|>": C}},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := &Vocab{Kind: BPE, BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, Merges: map[string]int{}}
			for _, x := range c.toks {
				v.Tokens, v.Types = append(v.Tokens, x.text), append(v.Types, x.typ)
			}
			if err := v.init(); err != nil {
				t.Fatal(err)
			}
			id := func(s string) int32 {
				i, ok := v.ID(s)
				if !ok {
					t.Fatalf("no %q", s)
				}
				return i
			}
			if c.eos != "" {
				v.EOS = id(c.eos)
			}
			ids := noSpecialIDs()
			if c.ids != nil {
				ids = c.ids(id)
			}
			v.EOT = ids.eot
			v.setSpecial(ids)
			var want []int32
			for _, s := range c.eog {
				want = append(want, id(s))
			}
			slices.Sort(want)
			if got := v.EOG(); !slices.Equal(got, want) {
				t.Errorf("EOG %v, want %v", got, want)
			}
			for i := range int32(v.Len()) {
				if v.IsEOG(i) != slices.Contains(want, i) {
					t.Errorf("IsEOG(%q) = %v", v.Tokens[i], v.IsEOG(i))
				}
			}
			if c.eot != "" && v.EOT != id(c.eot) || c.eot == "" && v.EOT != -1 {
				t.Errorf("EOT %d, want %q", v.EOT, c.eot)
			}
			if c.notEOGEOT && v.IsEOG(v.EOT) {
				t.Errorf("EOT %q ends generation", v.Tokens[v.EOT])
			}
			for s, ty := range c.types {
				if got := v.Types[id(s)]; got != ty {
					t.Errorf("%q has type %d, want %d", s, got, ty)
				}
			}
			for i, tk := range v.Tokens {
				if v.Types[i] == Normal {
					continue
				}
				printed := string(v.Piece(int32(i), false)) == tk
				if printed != slices.Contains(c.printed, tk) {
					t.Errorf("%q printed: %v", tk, printed)
				}
				// user-defined tokens match in plain text; control tokens only as special
				plain := v.Encode(tk, false, false)
				if isTok := len(plain) == 1 && plain[0] == int32(i); isTok != (v.Types[i] == UserDefined) {
					t.Errorf("%q in plain text: %v", tk, plain)
				}
			}
		})
	}
}

// TestEOGAfterLoad: EOS and EOT set after loading end generation (Hugging
// Face folders, llama2.c), AddEOG adds more, and a token llama.cpp's
// workarounds took out stays out unless added explicitly.
func TestEOGAfterLoad(t *testing.T) {
	v := &Vocab{Kind: BPE, BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, Merges: map[string]int{},
		Tokens: []string{"x", "<|return|>", "<|call|>", "<|end|>", "y"}}
	if err := v.init(); err != nil {
		t.Fatal(err)
	}
	v.setSpecial(noSpecialIDs())
	if v.IsEOG(0) || v.IsEOG(3) || !v.IsEOG(1) || !v.IsEOG(2) {
		t.Fatalf("EOG %v", v.EOG())
	}
	v.EOS, v.EOT = 0, 3
	if !v.IsEOG(0) || v.IsEOG(3) {
		t.Errorf("EOS 0 / EOT 3 (<|end|>): %v %v", v.IsEOG(0), v.IsEOG(3))
	}
	v.AddEOG(4)
	v.AddEOG(3)
	if !v.IsEOG(4) || !v.IsEOG(3) || !slices.Equal(v.EOG(), []int32{0, 1, 2, 3, 4}) {
		t.Errorf("after AddEOG: %v", v.EOG())
	}
	lit := &Vocab{Tokens: []string{"a", "b"}, EOS: 1, EOT: -1}
	if !lit.IsEOG(1) || lit.IsEOG(0) || lit.IsEOG(-1) {
		t.Error("a vocabulary literal ends on its EOS")
	}
}
