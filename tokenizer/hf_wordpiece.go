package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// WordPiece (BERT) tokenizers of a Hugging Face folder — tokenizer.json
// with a WordPiece model, or a bare vocab.txt — read as llama.cpp's
// converter writes them (BertModel.set_vocab): the same ids, the pieces in
// GGUF's phantom-space form (a word start gets '▁', a continuation piece
// loses its "##", control tokens stay as they are), tokenized by the WPM
// tokenizer llama.cpp runs on the converted file (wpm.go). That tokenizer
// lower-cases and strips accents, as BertNormalizer does by default; a
// tokenizer that keeps case or accents is refused rather than tokenized
// differently.

// wordPiece is what a WordPiece tokenizer.json adds to HFFile.
type wordPiece struct {
	prefix string // continuing_subword_prefix
	unk    string
}

// readWordPiece completes ReadHFFile for a WordPiece model.
func (f *HFFile) readWordPiece(raw []byte) error {
	j := &f.j
	wp := &wordPiece{prefix: "##", unk: "[UNK]"}
	if p := j.Model.ContinuingSubwordPrefix; p != nil {
		wp.prefix = *p
	}
	if u := j.Model.UnkToken; u != nil {
		wp.unk = *u
	}
	if wp.prefix == "" {
		return fmt.Errorf("tokenizer: %s: WordPiece continuing_subword_prefix is empty", f.Path)
	}
	if err := checkWordPieceNormalizer(f.Path, j.Normalizer); err != nil {
		return err
	}
	if len(j.Model.Vocab) == 0 {
		return fmt.Errorf("tokenizer: %s: WordPiece model without a vocab", f.Path)
	}
	for k, v := range j.Model.Vocab {
		f.Vocab[k] = v
	}
	for _, a := range j.AddedTokens {
		f.Vocab[a.Content] = a.ID
		f.Added[a.ID] = a.Special
	}
	f.WordPiece, f.wp = true, wp
	return nil
}

// checkWordPieceNormalizer refuses a normalizer llama.cpp's WPM tokenizer
// does not run: BertNormalizer with lowercase false, or strip_accents false
// beside lowercase (the converter would write
// tokenizer.ggml.normalizer.lowercase false, which Loom's WPM does not
// follow).
func checkWordPieceNormalizer(path string, c *hfComponent) error {
	if c == nil {
		return fmt.Errorf("tokenizer: %s: WordPiece without a normalizer (BertNormalizer expected)", path)
	}
	switch c.Type {
	case "BertNormalizer":
		if c.Lowercase != nil && !*c.Lowercase {
			return fmt.Errorf("tokenizer: %s: normalizer BertNormalizer lowercase = false (a cased WordPiece vocabulary) is not supported", path)
		}
		if c.StripAccents != nil && !*c.StripAccents {
			return fmt.Errorf("tokenizer: %s: normalizer BertNormalizer strip_accents = false is not supported", path)
		}
		return nil
	case "Sequence":
		lower, strip := false, false
		for _, n := range c.Normalizers {
			switch n.Type {
			case "Lowercase":
				lower = true
			case "StripAccents":
				strip = true
			case "NFD", "NFC", "NFKC", "NFKD", "BertNormalizer":
				if n.Type == "BertNormalizer" {
					return checkWordPieceNormalizer(path, &n)
				}
			default:
				return fmt.Errorf("tokenizer: %s: WordPiece normalizer %q is not supported", path, n.Type)
			}
		}
		if !lower || !strip {
			return fmt.Errorf("tokenizer: %s: WordPiece normalizer without Lowercase and StripAccents is not supported", path)
		}
		return nil
	}
	return fmt.Errorf("tokenizer: %s: WordPiece normalizer %q is not supported (BertNormalizer expected)", path, c.Type)
}

// ReadVocabTxt reads a BERT vocab.txt (one piece a line, the line number
// its id) as a WordPiece HFFile; specials are the special tokens
// tokenizer_config.json names (those in the vocabulary become control
// tokens), cls and sep the ones BertTokenizer puts around a text.
func ReadVocabTxt(path string, specials []string, cls, sep string) (*HFFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	f := &HFFile{Path: path, Vocab: map[string]int{}, Added: map[int]bool{}, WordPiece: true, wp: &wordPiece{prefix: "##", unk: "[UNK]"}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for id := 0; sc.Scan(); id++ {
		if id >= 1<<24 {
			return nil, fmt.Errorf("tokenizer: %s: more than %d lines", path, 1<<24)
		}
		t := strings.TrimRight(sc.Text(), "\r")
		if _, dup := f.Vocab[t]; !dup { // BertTokenizer keeps the first
			f.Vocab[t] = id
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if len(f.Vocab) == 0 {
		return nil, fmt.Errorf("tokenizer: %s: empty vocabulary", path)
	}
	for _, s := range specials {
		if id, ok := f.Vocab[s]; ok {
			f.Added[id] = true
			f.j.AddedTokens = append(f.j.AddedTokens, struct {
				ID      int    `json:"id"`
				Content string `json:"content"`
				Special bool   `json:"special"`
			}{id, s, true})
		}
	}
	if _, ok := f.Vocab[cls]; ok {
		if _, ok := f.Vocab[sep]; ok {
			tp := func(s string) templatePiece {
				p := templatePiece{SpecialToken: &struct {
					ID string `json:"id"`
				}{s}}
				return p
			}
			seq := func(s string) templatePiece {
				return templatePiece{Sequence: &struct {
					ID string `json:"id"`
				}{s}}
			}
			f.j.PostProcessor = &hfComponent{Type: "TemplateProcessing", Single: []templatePiece{tp(cls), seq("A"), tp(sep)},
				Pair: []templatePiece{tp(cls), seq("A"), tp(sep), seq("B"), tp(sep)}}
		}
	}
	return f, nil
}

// Piece is a WordPiece token as GGUF stores it (the converter's phantom
// space): control tokens as they are, a continuation piece without its
// prefix, any other piece after '▁'.
func (f *HFFile) Piece(text string, control bool) string {
	switch {
	case control || f.wp == nil:
		return text
	case strings.HasPrefix(text, f.wp.prefix):
		return text[len(f.wp.prefix):]
	}
	return "\u2581" + text
}

// UnkToken is the model's unk_token ("" if none).
func (f *HFFile) UnkToken() string {
	if f.wp != nil {
		return f.wp.unk
	}
	if u := f.j.Model.UnkToken; u != nil {
		return *u
	}
	return ""
}

// wordPieceVocab builds the WPM vocabulary llama.cpp runs on the converted
// file: tokens in phantom-space form, added special tokens control,
// other added tokens user-defined; [CLS] … [SEP] around a text as the
// post-processor's template puts them (BOS and EOS).
func (f *HFFile) wordPieceVocab() (*Vocab, error) {
	n := 0
	for _, id := range f.Vocab {
		if id < 0 || id > 1<<24 {
			return nil, fmt.Errorf("tokenizer: %s: token id %d out of range", f.Path, id)
		}
		n = max(n, id+1)
	}
	v := &Vocab{Kind: WPM, BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1}
	v.Tokens = make([]string, n)
	v.Types = make([]TokenType, n)
	for i := range v.Tokens {
		v.Tokens[i], v.Types[i] = fmt.Sprintf("[PAD%d]", i), Unused
	}
	for text, id := range f.Vocab {
		typ := Normal
		if special, added := f.Added[id]; added {
			typ = UserDefined
			if special {
				typ = Control
			}
		}
		v.Tokens[id], v.Types[id] = f.Piece(text, typ == Control), typ
	}
	id := func(text string) int32 {
		if i, ok := f.Vocab[text]; ok {
			return int32(i)
		}
		return -1
	}
	v.UNK, v.PAD = id(f.UnkToken()), id("[PAD]")
	// BOS and EOS: the template's first and last special tokens, else
	// BERT's [CLS] and [SEP] (llama.cpp's defaults, 101 and 102).
	v.BOS, v.EOS = id("[CLS]"), id("[SEP]")
	v.AddBOS, v.AddEOS = true, true
	for _, p := range f.PostProcessors() {
		switch p.Type {
		case "TemplateProcessing":
			if len(p.Single) > 0 {
				first, last := p.Single[0], p.Single[len(p.Single)-1]
				v.AddBOS = !strings.HasPrefix(first, "$")
				if v.AddBOS {
					v.BOS = id(first)
				}
				v.AddEOS = len(p.Single) > 1 && !strings.HasPrefix(last, "$")
				if v.AddEOS {
					v.EOS = id(last)
				}
			}
		case "BertProcessing", "RobertaProcessing":
			v.BOS, v.EOS = id(p.Cls), id(p.Sep)
		}
	}
	if err := v.init(); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", f.Path, err)
	}
	v.setSpecial(noSpecialIDs())
	return v, nil
}

// PostStep is one post-processor of a tokenizer.json, as llama.cpp's
// converter (gguf-py's SpecialVocab) reads it: a template's items are the
// special tokens' ids (texts) and "$A" / "$B" for the sequences;
// Bert/RobertaProcessing name their cls and sep tokens.
type PostStep struct {
	Type         string
	Single, Pair []string
	Cls, Sep     string
}

// PostProcessors lists the post-processor (the steps of a Sequence).
func (f *HFFile) PostProcessors() []PostStep {
	p := f.j.PostProcessor
	if p == nil {
		return nil
	}
	steps := []hfComponent{*p}
	if len(p.Processors) > 0 {
		steps = p.Processors
	}
	items := func(t []templatePiece) []string {
		var out []string
		for _, x := range t {
			switch {
			case x.SpecialToken != nil:
				out = append(out, x.SpecialToken.ID)
			case x.Sequence != nil:
				out = append(out, "$"+x.Sequence.ID)
			default:
				out = append(out, "")
			}
		}
		return out
	}
	first := func(raw json.RawMessage) string {
		var pair []any
		if json.Unmarshal(raw, &pair) == nil && len(pair) > 0 {
			s, _ := pair[0].(string)
			return s
		}
		return ""
	}
	var out []PostStep
	for _, s := range steps {
		out = append(out, PostStep{Type: s.Type, Single: items(s.Single), Pair: items(s.Pair), Cls: first(s.Cls), Sep: first(s.Sep)})
	}
	return out
}

// NormalizerFlags are the lowercase and strip_accents flags the converter
// reads from the normalizer (SpecialVocab._parse_normalizer): Lowercase and
// StripAccents normalizers set them, BertNormalizer states them (nil:
// unstated).
func (f *HFFile) NormalizerFlags() (lowercase, stripAccents *bool) {
	yes := true
	var walk func(c *hfComponent)
	walk = func(c *hfComponent) {
		switch c.Type {
		case "Lowercase":
			lowercase = &yes
		case "StripAccents":
			stripAccents = &yes
		case "BertNormalizer":
			// the converter reads the keys when present: a JSON null
			// (strip_accents' default) sets nothing it writes
			if c.Lowercase != nil {
				lowercase = c.Lowercase
			}
			if c.StripAccents != nil {
				stripAccents = c.StripAccents
			}
		case "Sequence":
			for i := range c.Normalizers {
				walk(&c.Normalizers[i])
			}
		}
	}
	if f.j.Normalizer != nil {
		walk(f.j.Normalizer)
	}
	return lowercase, stripAccents
}
