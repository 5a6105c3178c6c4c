package tokenizer

import "slices"

// llama.cpp's special-token rules (llama_vocab::impl::load, 2026): which
// tokens end generation, found mostly by their text, and the token types it
// changes on the way (they decide whether a token's text is matched in
// plain text and whether it is printed).

// specialIDs are the ids llama.cpp reads from tokenizer.ggml.*_token_id
// (-1 when the file has none); those left -1 are looked up by text.
type specialIDs struct {
	eot, eom                                       int32
	fimPre, fimSuf, fimMid, fimPad, fimRep, fimSep int32
}

func noSpecialIDs() specialIDs { return specialIDs{-1, -1, -1, -1, -1, -1, -1, -1} }

// Texts by which llama.cpp finds a special token the file does not name,
// in llama.cpp's order.
var (
	eotTexts    = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	eomTexts    = []string{"<|eom_id|>"}
	fimPreTexts = []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}
	fimSufTexts = []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}
	fimMidTexts = []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}
	fimPadTexts = []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}
	fimRepTexts = []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}
	fimSepTexts = []string{"<|file_sep|>"}

	// eogTexts: every token with one of these texts ends generation.
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
		"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}

	// alwaysRendered: gpt-oss's harmony markers, printed as text even when
	// special tokens are not (llama.cpp makes them user-defined).
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// setSpecial applies llama.cpp's rules to a loaded vocabulary (its tables
// built): the special ids the file leaves out are found by text, tokens
// that must be control tokens become control tokens, the end-of-generation
// set is built, and the workarounds for gpt-oss (harmony), solar-open,
// Gemma 4 and PaddleOCR are applied. Where llama.cpp's pick among several
// candidates for one role follows its hash map's order, Loom takes the
// first text of the list; the end-of-generation set does not depend on it.
func (v *Vocab) setSpecial(ids specialIDs) {
	n := int32(len(v.Tokens))
	// llama.cpp adds CONTROL to the token's attributes; whatever else they
	// hold, the token then acts as a control token (matched only when
	// special tokens are parsed, printed only when they are rendered).
	control := func(id int32) { v.Types[id] = Control }
	find := func(dst *int32, texts []string) {
		if *dst >= 0 && *dst < n {
			return
		}
		*dst = -1
		for _, t := range texts {
			if id, ok := v.ids[t]; ok {
				*dst = id
				control(id)
				return
			}
		}
	}
	if v.EOT < 0 {
		find(&v.EOT, eotTexts)
	}
	find(&ids.eom, eomTexts)
	find(&ids.fimPre, fimPreTexts)
	find(&ids.fimSuf, fimSufTexts)
	find(&ids.fimMid, fimMidTexts)
	find(&ids.fimPad, fimPadTexts)
	find(&ids.fimRep, fimRepTexts)
	find(&ids.fimSep, fimSepTexts)

	v.eog, v.notEOG = v.eog[:0], v.notEOG[:0]
	add := func(id int32) {
		if id >= 0 && id < n && !slices.Contains(v.eog, id) {
			v.eog = append(v.eog, id)
		}
	}
	add(ids.fimPad)
	add(ids.fimRep)
	add(ids.fimSep)
	for _, t := range eogTexts {
		if id, ok := v.ids[t]; ok {
			add(id)
			control(id)
		}
	}
	for _, t := range alwaysRendered {
		if id, ok := v.ids[t]; ok {
			v.Types[id] = UserDefined
		}
	}
	add(v.EOS)
	add(v.EOT)
	add(ids.eom)

	// gpt-oss (o200k_harmony) and solar-open end on <|return|> / <|call|>
	// (<|calls|> / <|flush|>), not on <|end|>, which ends one message of
	// several: <|end|> leaves the set and is printed like text.
	has := func(t string) (int32, bool) {
		id, ok := v.ids[t]
		return id, ok && slices.Contains(v.eog, id)
	}
	_, ret := has("<|return|>")
	_, call := has("<|call|>")
	if _, calls := has("<|calls|>"); calls {
		call = true
	}
	_, flush := has("<|flush|>")
	if end, ok := has("<|end|>"); ok && ((ret && call) || (call && flush)) {
		v.dropEOG(end)
		v.Types[end] = UserDefined
	}
	// Gemma 4 (and PaddleOCR): with <|tool_response> in the set, </s> is
	// an ordinary token.
	if _, ok := has("<|tool_response>"); ok {
		if s, ok := has("</s>"); ok {
			v.dropEOG(s)
			v.Types[s] = Normal
		}
	}
	slices.Sort(v.eog)
	v.buildSpecial()
}

func (v *Vocab) dropEOG(id int32) {
	if i := slices.Index(v.eog, id); i >= 0 {
		v.eog = slices.Delete(v.eog, i, i+1)
	}
	v.notEOG = append(v.notEOG, id)
}

// IsEOG reports whether id ends generation: a token of the vocabulary's
// end-of-generation set (llama.cpp's special_eog_ids for a GGUF file),
// EOS, or EOT — unless one of llama.cpp's workarounds took the token out
// of the set (gpt-oss's <|end|>, Gemma 4's </s>).
func (v *Vocab) IsEOG(id int32) bool {
	if id < 0 {
		return false
	}
	if _, ok := slices.BinarySearch(v.eog, id); ok {
		return true
	}
	return (id == v.EOS || id == v.EOT) && !slices.Contains(v.notEOG, id)
}

// EOG returns the ids that end generation, ascending: the set plus EOS and
// EOT.
func (v *Vocab) EOG() []int32 {
	out := slices.Clone(v.eog)
	for _, id := range []int32{v.EOS, v.EOT} {
		if id >= 0 && int(id) < len(v.Tokens) && v.IsEOG(id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// AddEOG adds id to the end-of-generation set (a model's
// generation_config.json can name more end tokens than EOS and EOT).
func (v *Vocab) AddEOG(id int32) {
	if id < 0 || int(id) >= len(v.Tokens) {
		return
	}
	if i, ok := slices.BinarySearch(v.eog, id); !ok {
		v.eog = slices.Insert(v.eog, i, id)
	}
	if i := slices.Index(v.notEOG, id); i >= 0 {
		v.notEOG = slices.Delete(v.notEOG, i, i+1)
	}
}
