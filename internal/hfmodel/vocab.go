package hfmodel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/loom-inference/loom/internal/model"
	"github.com/loom-inference/loom/tokenizer"
)

// The tokenizer metadata llama.cpp's converter writes from tokenizer.json:
// a SentencePiece-style vocabulary ("llama": its LlamaHfVocab, every score
// -1000) when the tokenizer marks spaces with '▁' or falls back to bytes,
// else byte-level BPE ("gpt2": tokens, types and merges, with the
// pre-tokenizer named by its regex).

// Special holds the special tokens tokenizer_config.json and config.json
// name (-1: none) and its add_bos_token / add_eos_token (nil: unset).
type Special struct {
	BOS, EOS, UNK, PAD int32
	AddBOS, AddEOS     *bool
	ChatTemplate       string
}

// token types as GGUF stores them.
const (
	ttNormal, ttControl, ttUserDefined, ttUnused, ttByte = 1, 3, 4, 5, 6
)

var byteToken = regexp.MustCompile(`^<0x[0-9A-Fa-f]{2}>$`)

// gemma4Visible are the tokens Gemma4Model.set_vocab makes USER_DEFINED.
var gemma4Visible = map[string]bool{"<|channel>": true, "<channel|>": true, "<|tool_call>": true, "<tool_call|>": true,
	"<|tool_response>": true, "<tool_response|>": true, `<|"|>`: true}

// vocabMeta adds the tokenizer keys and the chat template to Meta and
// reads generation_config.json.
func (f *Folder) vocabMeta(h hparams, fam *family) error {
	tj, fromJSON, err := readTokenizer(f.Dir, fam)
	if err != nil {
		return err
	}
	f.Tokenizer = tj
	path, vocab, added := tj.Path, tj.Vocab, tj.Added
	// The token table is as long as the embeddings: ids and vocab_size
	// beyond their rows are refused before a table is sized by them.
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Dims) != 2 {
		return fmt.Errorf("no token embeddings (token_embd.weight)")
	}
	rows := int(min(emb.Dims[1], model.MaxVocab))
	n := 0
	for text, id := range vocab {
		if id < 0 || id >= rows {
			return fmt.Errorf("%s: token %q has id %d, but the embeddings have %d rows", path, text, id, emb.Dims[1])
		}
		n = max(n, id+1)
	}
	vs, err := h.count(0, "vocab_size")
	if err != nil {
		return err
	}
	if int(vs) > n {
		if int(vs) > rows {
			return fmt.Errorf("config.json: vocab_size = %d but the embeddings have %d rows", vs, emb.Dims[1])
		}
		n = int(vs) // the embedding has rows past the tokenizer: padding
	}
	tokens := make([]string, n)
	types := make([]int32, n)
	for i := range tokens {
		tokens[i], types[i] = fmt.Sprintf("[PAD%d]", i), ttUnused
	}
	for text, id := range vocab {
		if types[id] != ttUnused {
			return fmt.Errorf("%s: tokens %q and %q share id %d", path, tokens[id], text, id)
		}
		tokens[id] = text
		switch special, isAdded := added[id]; {
		case isAdded && special:
			types[id] = ttControl
		case isAdded:
			types[id] = ttUserDefined
		default:
			types[id] = ttNormal
		}
	}
	spm := tj.ByteFallback || tj.SpaceMark()
	kv := f.Meta
	switch {
	case fam.tokModel == "bert":
		if !tj.WordPiece {
			return fmt.Errorf("%s: a WordPiece tokenizer is expected for %s", path, f.HFArch)
		}
		// BertModel.set_vocab: the token type count, then the vocabulary
		// in phantom-space form.
		ttc, err := h.count(1, "type_vocab_size")
		if err != nil {
			return err
		}
		kv.Set("tokenizer.ggml.token_type_count", ttc)
		for i := range tokens {
			tokens[i] = tj.Piece(tokens[i], types[i] == ttControl)
		}
		v, err := tj.NewVocab()
		if err != nil {
			return err
		}
		kv.Set("tokenizer.ggml.model", "bert")
		kv.Set("tokenizer.ggml.pre", wpmPre(v))
		kv.Set("tokenizer.ggml.tokens", tokens)
		kv.Set("tokenizer.ggml.token_type", types)
	case fam.tokModel == "gemma4":
		// Gemma4Model.set_vocab: LlamaHfVocab's tokens (BYTE for <0xXX>,
		// scores -1000) with the seven tool and channel tokens made
		// USER_DEFINED so they always render, then the merges.
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = -1000
			if types[i] == ttNormal && byteToken.MatchString(tokens[i]) {
				types[i] = ttByte
			}
			if gemma4Visible[tokens[i]] && types[i] != ttUnused {
				types[i] = ttUserDefined
			}
		}
		kv.Set("tokenizer.ggml.model", "gemma4")
		kv.Set("tokenizer.ggml.tokens", tokens)
		kv.Set("tokenizer.ggml.scores", scores)
		kv.Set("tokenizer.ggml.token_type", types)
		kv.Set("tokenizer.ggml.merges", tj.Merges)
	case spm:
		scores := make([]float32, n)
		for i := range scores {
			scores[i] = -1000
			if types[i] == ttNormal && byteToken.MatchString(tokens[i]) {
				types[i] = ttByte
			}
		}
		kv.Set("tokenizer.ggml.model", "llama")
		kv.Set("tokenizer.ggml.pre", "default")
		kv.Set("tokenizer.ggml.tokens", tokens)
		kv.Set("tokenizer.ggml.scores", scores)
		kv.Set("tokenizer.ggml.token_type", types)
	default:
		kv.Set("tokenizer.ggml.model", "gpt2")
		kv.Set("tokenizer.ggml.pre", tj.PreTokenizer())
		kv.Set("tokenizer.ggml.tokens", tokens)
		kv.Set("tokenizer.ggml.token_type", types)
		kv.Set("tokenizer.ggml.merges", tj.Merges)
	}
	if f.emb.fullSpecial {
		sp, err := specialVocab(f.Dir, tj, fromJSON, h, n, kv)
		if err != nil {
			return err
		}
		if spm && fam.noSpacePrefix {
			kv.Set("tokenizer.ggml.add_space_prefix", false)
		}
		f.Special = sp
		f.Gen, err = readGeneration(f.Dir)
		return err
	}
	sp, err := readSpecial(f.Dir, h, vocab)
	if err != nil {
		return err
	}
	for _, s := range []struct {
		key string
		id  int32
	}{{"bos_token_id", sp.BOS}, {"eos_token_id", sp.EOS}, {"unknown_token_id", sp.UNK}, {"padding_token_id", sp.PAD}} {
		if s.id >= 0 && int(s.id) < n {
			kv.Set("tokenizer.ggml."+s.key, uint32(s.id))
		}
	}
	bosLater := false
	if fam.tokModel == "gemma4" { // forced on, in its place if tokenizer_config.json set it (llama.cpp forces it too)
		bosLater = sp.AddBOS == nil
		sp.AddBOS = new(bool)
		*sp.AddBOS = true
	}
	if sp.AddBOS != nil && !bosLater {
		kv.Set("tokenizer.ggml.add_bos_token", *sp.AddBOS)
	}
	if sp.AddEOS != nil {
		kv.Set("tokenizer.ggml.add_eos_token", *sp.AddEOS)
	}
	if sp.ChatTemplate != "" {
		kv.Set("tokenizer.chat_template", sp.ChatTemplate)
	}
	if (spm || fam.tokModel == "gemma4") && fam.noSpacePrefix { // after the special tokens, as Gemma's set_vocab writes it
		kv.Set("tokenizer.ggml.add_space_prefix", false)
	}
	if bosLater {
		kv.Set("tokenizer.ggml.add_bos_token", true)
	}
	f.Special = sp
	gen, err := readGeneration(f.Dir)
	if err != nil {
		return err
	}
	f.Gen = gen
	return nil
}

// readSpecial reads tokenizer_config.json (token strings, add_bos_token,
// add_eos_token, chat_template) and falls back to config.json's ids.
func readSpecial(dir string, h hparams, vocab map[string]int) (Special, error) {
	sp := Special{BOS: -1, EOS: -1, UNK: -1, PAD: -1}
	var tc map[string]json.RawMessage
	path := filepath.Join(dir, "tokenizer_config.json")
	if err := readJSON(path, 64<<20, &tc); err != nil && !os.IsNotExist(err) {
		return sp, fmt.Errorf("tokenizer: %w", err)
	}
	token := func(key string) int32 {
		var s string
		var obj struct{ Content string }
		raw := tc[key]
		switch {
		case json.Unmarshal(raw, &s) == nil && s != "":
		case json.Unmarshal(raw, &obj) == nil && obj.Content != "":
			s = obj.Content
		default:
			return -1
		}
		if id, ok := vocab[s]; ok {
			return int32(id)
		}
		return -1
	}
	sp.BOS, sp.EOS, sp.UNK, sp.PAD = token("bos_token"), token("eos_token"), token("unk_token"), token("pad_token")
	for _, c := range []struct {
		id  *int32
		key string
	}{{&sp.BOS, "bos_token_id"}, {&sp.EOS, "eos_token_id"}, {&sp.PAD, "pad_token_id"}} {
		if *c.id < 0 {
			if v, ok := h.num(c.key); ok && v >= 0 {
				*c.id = int32(v)
			}
		}
	}
	flag := func(key string) *bool {
		var v bool
		if json.Unmarshal(tc[key], &v) != nil {
			return nil
		}
		return &v
	}
	sp.AddBOS, sp.AddEOS = flag("add_bos_token"), flag("add_eos_token")
	if raw, ok := tc["chat_template"]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			var named []struct{ Name, Template string }
			if json.Unmarshal(raw, &named) == nil {
				sort.SliceStable(named, func(i, j int) bool { return named[i].Name == "default" })
				if len(named) > 0 {
					s = named[0].Template
				}
			}
		}
		sp.ChatTemplate = s
	}
	return sp, nil
}

func readGeneration(dir string) (*Generation, error) {
	path := filepath.Join(dir, "generation_config.json")
	var g struct {
		Generation
		EOS json.RawMessage `json:"eos_token_id"`
	}
	if err := readJSON(path, 1<<20, &g); err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	gen := g.Generation
	var one int32
	if json.Unmarshal(g.EOS, &one) == nil {
		gen.EOS = []int32{one}
	} else {
		json.Unmarshal(g.EOS, &gen.EOS)
	}
	return &gen, nil
}

// readTokenizer reads the folder's tokenizer.json; a BERT folder without
// one may have a vocab.txt (fromJSON false), read with the special tokens
// tokenizer_config.json names (BertTokenizer's defaults otherwise).
func readTokenizer(dir string, fam *family) (tj *tokenizer.HFFile, fromJSON bool, err error) {
	path := filepath.Join(dir, "tokenizer.json")
	_, statErr := os.Stat(path)
	vt := filepath.Join(dir, "vocab.txt")
	if fam.tokModel != "bert" || statErr == nil {
		tj, err = tokenizer.ReadHFFile(path)
		return tj, true, err
	}
	if _, err := os.Stat(vt); err != nil {
		return nil, false, fmt.Errorf("tokenizer: %s has neither tokenizer.json nor vocab.txt", dir)
	}
	var tc map[string]any
	if err := readJSON(filepath.Join(dir, "tokenizer_config.json"), 64<<20, &tc); err != nil && !os.IsNotExist(err) {
		return nil, false, fmt.Errorf("tokenizer: %w", err)
	}
	if v, ok := tc["do_lower_case"].(bool); ok && !v {
		return nil, false, fmt.Errorf("tokenizer_config.json: do_lower_case = false (a cased WordPiece vocabulary) is not supported")
	}
	if v, ok := tc["strip_accents"].(bool); ok && !v {
		return nil, false, fmt.Errorf("tokenizer_config.json: strip_accents = false is not supported")
	}
	name := func(key, def string) string {
		switch v := tc[key].(type) {
		case string:
			return v
		case map[string]any:
			if s, ok := v["content"].(string); ok {
				return s
			}
		}
		return def
	}
	cls, sep := name("cls_token", "[CLS]"), name("sep_token", "[SEP]")
	specials := []string{name("pad_token", "[PAD]"), name("unk_token", "[UNK]"), cls, sep, name("mask_token", "[MASK]")}
	tj, err = tokenizer.ReadVocabTxt(vt, specials, cls, sep)
	return tj, false, err
}
