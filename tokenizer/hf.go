package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Hugging Face tokenizers: tokenizer.json (BPE models) and the older
// vocab.json + merges.txt / encoder.json + vocab.bpe pairs, so a model folder
// can be tokenized without converting it to GGUF.

type hfJSON struct {
	Model struct {
		Type         string          `json:"type"`
		Vocab        map[string]int  `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		IgnoreMerges bool            `json:"ignore_merges"`
		ByteFallback bool            `json:"byte_fallback"`
		UnkToken     *string         `json:"unk_token"`
		// WordPiece: the mark of a word's continuation pieces ("##").
		ContinuingSubwordPrefix *string `json:"continuing_subword_prefix"`
	} `json:"model"`
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    *hfComponent `json:"normalizer"`
	PreTokenizer  *hfComponent `json:"pre_tokenizer"`
	Decoder       *hfComponent `json:"decoder"`
	PostProcessor *hfComponent `json:"post_processor"`
}

// hfComponent is a normalizer, pre-tokenizer, decoder or post-processor.
type hfComponent struct {
	Type             string          `json:"type"`
	Normalizers      []hfComponent   `json:"normalizers"`
	Pretokenizers    []hfComponent   `json:"pretokenizers"`
	Decoders         []hfComponent   `json:"decoders"`
	Prepend          string          `json:"prepend"`
	Pattern          json.RawMessage `json:"pattern"`
	Content          string          `json:"content"`
	IndividualDigits bool            `json:"individual_digits"`
	AddPrefixSpace   bool            `json:"add_prefix_space"`
	UseRegex         *bool           `json:"use_regex"`
	Single           []templatePiece `json:"single"`
	// WordPiece and the converter's reading of special tokens
	// (hf_wordpiece.go): BertNormalizer's flags, the post-processor's
	// pair template, a Sequence's processors, Bert/RobertaProcessing's
	// [text, id] pairs.
	Pair         []templatePiece `json:"pair"`
	Processors   []hfComponent   `json:"processors"`
	Lowercase    *bool           `json:"lowercase"`
	StripAccents *bool           `json:"strip_accents"`
	Cls          json.RawMessage `json:"cls"`
	Sep          json.RawMessage `json:"sep"`
}

// templatePiece is one item of a TemplateProcessing template.
type templatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

// HFFile is a parsed Hugging Face tokenizer.json with a BPE model: what
// FromHFJSON builds a vocabulary from, and what a converter writes to GGUF.
type HFFile struct {
	Path         string
	Vocab        map[string]int // text → id, added tokens included
	Added        map[int]bool   // added token ids → special
	Merges       []string       // "left right", by rank
	ByteFallback bool
	// WordPiece is set for a WordPiece (BERT) model (hf_wordpiece.go).
	WordPiece bool
	wp        *wordPiece
	j         hfJSON
}

// ReadHFFile parses a tokenizer.json with a BPE or WordPiece model.
func ReadHFFile(path string) (*HFFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	f := &HFFile{Path: path, Vocab: map[string]int{}, Added: map[int]bool{}}
	j := &f.j
	if err := json.Unmarshal(b, j); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if j.Model.Type == "WordPiece" {
		return f, f.readWordPiece(b)
	}
	if j.Model.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer: %s: model type %q is not supported (BPE or WordPiece only)", path, j.Model.Type)
	}
	if f.Merges, err = parseHFMerges(j.Model.Merges); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	for k, v := range j.Model.Vocab {
		f.Vocab[k] = v
	}
	for _, a := range j.AddedTokens {
		f.Vocab[a.Content] = a.ID
		f.Added[a.ID] = a.Special
	}
	f.ByteFallback = j.Model.ByteFallback
	return f, nil
}

// SpaceMark reports whether the decoder turns '▁' back into spaces
// (SentencePiece-style pieces).
func (f *HFFile) SpaceMark() bool { return hasComponent(f.j.Decoder, "Replace") }

// PreTokenizer names the byte-level pre-tokenizer as llama.cpp does
// (llama-bpe, qwen2, smollm, gpt-2), from its split regexes; "default"
// when it is none of those.
func (f *HFFile) PreTokenizer() string {
	name := "default"
	var walk func(c *hfComponent)
	walk = func(c *hfComponent) {
		switch c.Type {
		case "Sequence":
			for i := range c.Pretokenizers {
				walk(&c.Pretokenizers[i])
			}
		case "Split":
			var pat struct{ Regex *string }
			if json.Unmarshal(c.Pattern, &pat) == nil && pat.Regex != nil {
				if k, ok := knownSplits[*pat.Regex]; ok && name == "default" {
					name = k.name
				}
			}
		case "Digits":
			if c.IndividualDigits && name == "default" {
				name = "smollm"
			}
		case "ByteLevel":
			if name == "default" {
				name = "gpt-2"
			}
		}
	}
	if f.j.PreTokenizer != nil {
		walk(f.j.PreTokenizer)
	}
	return name
}

// FromHFJSON reads a Hugging Face tokenizer.json with a BPE model.
func FromHFJSON(path string) (*Vocab, error) {
	f, err := ReadHFFile(path)
	if err != nil {
		return nil, err
	}
	return f.NewVocab()
}

// NewVocab builds the vocabulary the file describes.
func (f *HFFile) NewVocab() (*Vocab, error) {
	if f.WordPiece {
		return f.wordPieceVocab()
	}
	j, path, vocab, merges := &f.j, f.Path, f.Vocab, f.Merges
	special := map[string]bool{}
	for _, a := range j.AddedTokens {
		special[a.Content] = a.Special
	}
	v := &Vocab{Kind: BPE, BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1, IgnoreMerges: j.Model.IgnoreMerges}
	if err := v.setTokens(vocab, special, merges); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if j.Model.UnkToken != nil {
		if id, ok := vocab[*j.Model.UnkToken]; ok {
			v.UNK = int32(id)
		}
	}
	byteLevel := false
	if err := v.hfNormalizer(j.Normalizer); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if j.PreTokenizer != nil {
		var stages []stage
		if err := hfPreTokenizer(j.PreTokenizer, &stages, &byteLevel); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
		v.pre = pipeline(stages...)
	} else {
		v.pre = func(text []rune) [][]rune { return [][]rune{text} }
	}
	v.rawBPE = !byteLevel
	v.spaceMark = !byteLevel && hasComponent(j.Decoder, "Replace")
	if v.spaceMark {
		v.AddSpacePrefix = true
	}
	if p := j.PostProcessor; p != nil && p.Type == "TemplateProcessing" && len(p.Single) > 0 && p.Single[0].SpecialToken != nil {
		if id, ok := vocab[p.Single[0].SpecialToken.ID]; ok {
			v.BOS, v.AddBOS = int32(id), true
		}
	}
	if err := v.init(); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	// the end tokens and token types llama.cpp would give the converted file
	v.setSpecial(noSpecialIDs())
	return v, nil
}

func parseHFMerges(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var asStrings []string
	if err := json.Unmarshal(raw, &asStrings); err == nil {
		return asStrings, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("merges: %w", err)
	}
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p[0] + " " + p[1]
	}
	return out, nil
}

// setTokens lays out the id → text table from a text → id map.
func (v *Vocab) setTokens(vocab map[string]int, special map[string]bool, merges []string) error {
	n := 0
	for _, id := range vocab {
		if id < 0 || id > 1<<24 {
			return fmt.Errorf("token id %d out of range", id)
		}
		n = max(n, id+1)
	}
	v.Tokens = make([]string, n)
	v.Types = make([]TokenType, n)
	for i := range v.Tokens {
		v.Tokens[i] = fmt.Sprintf("[PAD%d]", i)
		v.Types[i] = Unused
	}
	for t, id := range vocab {
		v.Tokens[id] = t
		v.Types[id] = Normal
		if s, ok := special[t]; ok {
			v.Types[id] = UserDefined
			if s {
				v.Types[id] = Control
			}
		} else if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			v.Types[id] = Byte
		}
	}
	v.Merges = make(map[string]int, len(merges))
	for i, m := range merges {
		if _, dup := v.Merges[m]; !dup {
			v.Merges[m] = i
		}
	}
	return nil
}

func (v *Vocab) hfNormalizer(c *hfComponent) error {
	if c == nil {
		return nil
	}
	var steps []func(string) string
	var add func(c *hfComponent) error
	add = func(c *hfComponent) error {
		switch c.Type {
		case "Sequence":
			for i := range c.Normalizers {
				if err := add(&c.Normalizers[i]); err != nil {
					return err
				}
			}
		case "Prepend":
			p := c.Prepend
			steps = append(steps, func(s string) string { return p + s })
		case "Replace":
			var pat struct{ String *string }
			if err := json.Unmarshal(c.Pattern, &pat); err != nil || pat.String == nil {
				return fmt.Errorf("normalizer Replace: only string patterns are supported")
			}
			from, to := *pat.String, c.Content
			steps = append(steps, func(s string) string { return strings.ReplaceAll(s, from, to) })
		case "NFC":
			steps = append(steps, norm.NFC.String)
		case "NFD":
			steps = append(steps, norm.NFD.String)
		case "NFKC":
			steps = append(steps, norm.NFKC.String)
		case "Lowercase":
			steps = append(steps, strings.ToLower)
		default:
			return fmt.Errorf("normalizer %q is not supported", c.Type)
		}
		return nil
	}
	if err := add(c); err != nil {
		return err
	}
	v.normalize = func(s string) string {
		for _, f := range steps {
			s = f(s)
		}
		return s
	}
	return nil
}

// knownSplits maps the Split regexes of well-known tokenizer.json files to
// the scanners that implement them exactly (they need look-ahead).
// Each also carries llama.cpp's name for it (tokenizer.ggml.pre).
var knownSplits = map[string]struct {
	name string
	pre  preTokenizer
}{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:        {"llama-bpe", llama3Split(3)},
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:             {"qwen2", llama3Split(1)},
	`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`:                                                 {"gpt-2", gpt2Split},
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: {"qwen35", qwen35Split},
	// Mistral's tekken and OpenAI's o200k (gpt-oss): split as llama.cpp
	// 2026 splits them (pretok.go: its regex engine sees ASCII case only).
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`:                                                                {"tekken", o200kSplit(false, 1)},
	`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`: {"gpt-4o", o200kSplit(true, 3)},
}

func hfPreTokenizer(c *hfComponent, stages *[]stage, byteLevel *bool) error {
	switch c.Type {
	case "Sequence":
		for i := range c.Pretokenizers {
			if err := hfPreTokenizer(&c.Pretokenizers[i], stages, byteLevel); err != nil {
				return err
			}
		}
	case "Digits":
		if c.IndividualDigits {
			*stages = append(*stages, regexStage(`\p{N}`))
		} else {
			*stages = append(*stages, regexStage(`\p{N}+`))
		}
	case "ByteLevel":
		*byteLevel = true
		if c.AddPrefixSpace {
			return fmt.Errorf("ByteLevel add_prefix_space is not supported")
		}
		if c.UseRegex == nil || *c.UseRegex {
			*stages = append(*stages, stage(gpt2Split))
		}
	case "Split":
		var pat struct{ Regex, String *string }
		if err := json.Unmarshal(c.Pattern, &pat); err != nil || pat.Regex == nil {
			return fmt.Errorf("pre-tokenizer Split: only regex patterns are supported")
		}
		if k, ok := knownSplits[*pat.Regex]; ok {
			*stages = append(*stages, stage(k.pre))
		} else if !strings.Contains(*pat.Regex, "(?!") {
			*stages = append(*stages, regexStage(*pat.Regex))
		} else {
			return fmt.Errorf("pre-tokenizer Split regex %q needs look-ahead and is not a known pattern", *pat.Regex)
		}
	default:
		return fmt.Errorf("pre-tokenizer %q is not supported", c.Type)
	}
	return nil
}

func hasComponent(c *hfComponent, typ string) bool {
	if c == nil {
		return false
	}
	if c.Type == typ {
		return true
	}
	for i := range c.Decoders {
		if hasComponent(&c.Decoders[i], typ) {
			return true
		}
	}
	return false
}

// FromBPEFiles builds a byte-level BPE vocabulary from a vocab.json /
// encoder.json (text → id) and a merges.txt / vocab.bpe file, with the
// llama.cpp pre-tokenizer named pre ("qwen2", "llama-bpe", ...). specials
// are appended after the vocabulary as control tokens.
func FromBPEFiles(vocabPath, mergesPath, pre string, specials []string) (*Vocab, error) {
	b, err := os.ReadFile(vocabPath)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var vocab map[string]int
	if err := json.Unmarshal(b, &vocab); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", vocabPath, err)
	}
	mb, err := os.ReadFile(mergesPath)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	var merges []string
	sc := bufio.NewScanner(bytes.NewReader(mb))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" || strings.HasPrefix(line, "#version") {
			continue
		}
		merges = append(merges, line)
	}
	ids := make([]int, 0, len(vocab))
	for _, id := range vocab {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	special := map[string]bool{}
	next := 0
	if len(ids) > 0 {
		next = ids[len(ids)-1] + 1
	}
	for _, s := range specials {
		if _, ok := vocab[s]; !ok {
			vocab[s] = next
			next++
		}
		special[s] = true
	}
	v := &Vocab{Kind: BPE, Pre: pre, BOS: -1, EOS: -1, EOT: -1, UNK: -1, PAD: -1}
	if err := v.setTokens(vocab, special, merges); err != nil {
		return nil, err
	}
	if err := v.setPre(); err != nil {
		return nil, err
	}
	if err := v.init(); err != nil {
		return nil, err
	}
	return v, nil
}
