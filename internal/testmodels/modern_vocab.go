package testmodels

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/loom-inference/loom/gguf"
)

// ---------------------------------------------------------------------------
// vocabularies

type mvocab struct {
	model, pre string
	tokens     []string
	scores     []float32 // nil: none written
	types      []int32
	merges     []string
	ids        [][2]any // (key suffix, id) in order
	tail       [][2]any // boolean keys after the ids
	template   string
}

func (v *mvocab) kvs(m *mmodel) {
	m.set("tokenizer.ggml.model", v.model)
	if v.pre != "" {
		m.set("tokenizer.ggml.pre", v.pre)
	}
	m.set("tokenizer.ggml.tokens", v.tokens)
	if v.scores != nil {
		m.set("tokenizer.ggml.scores", v.scores)
	}
	m.set("tokenizer.ggml.token_type", v.types)
	m.set("tokenizer.ggml.merges", v.merges)
	for _, kv := range v.ids {
		m.set("tokenizer.ggml."+kv[0].(string), kv[1])
	}
	for _, kv := range v.tail {
		m.set("tokenizer.ggml."+kv[0].(string), kv[1])
	}
	if v.template != "" {
		m.set("tokenizer.chat_template", v.template)
	}
}

const (
	tokNormal      = 1
	tokControl     = 3
	tokUserDefined = 4
	tokByte        = 6
)

// tekkenVocab is a tekken-shaped vocabulary (Mistral's tiktoken BPE as
// convert_hf_to_gguf.py writes it: tokenizer model gpt2, pre tekken, 1000
// control tokens first, then the byte-level ranks). Tekken itself is not in
// shared/models: its byte-level part is the first 8192 ranks of Llama 3's
// tiktoken BPE (also a cl100k-style byte-level vocabulary), with the merges
// among them.
func tekkenVocab(assets string) (*mvocab, error) {
	const nBPE = 8192
	dir := filepath.Join(assets, "tokenizers", "llama3.2")
	var enc map[string]int
	b, err := os.ReadFile(filepath.Join(dir, "encoder.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &enc); err != nil {
		return nil, err
	}
	names := []string{"<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
		"[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]",
		"[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]"}
	for i := len(names); i < 1000; i++ {
		switch i {
		case 32:
			names = append(names, "[ARGS]")
		case 33:
			names = append(names, "[CALL_ID]")
		case 34:
			names = append(names, "[THINK]")
		case 35:
			names = append(names, "[/THINK]")
		default:
			names = append(names, fmt.Sprintf("<SPECIAL_%d>", i))
		}
	}
	v := &mvocab{model: "gpt2", pre: "tekken"}
	v.tokens = make([]string, 1000+nBPE)
	v.types = make([]int32, 1000+nBPE)
	for i, n := range names {
		v.tokens[i], v.types[i] = n, tokControl
	}
	kept := map[string]bool{}
	for s, id := range enc {
		if id < nBPE {
			v.tokens[1000+id], v.types[1000+id] = s, tokNormal
			kept[s] = true
		}
	}
	for i, s := range v.tokens {
		if s == "" {
			return nil, fmt.Errorf("tekken vocabulary: rank %d missing from encoder.json", i-1000)
		}
	}
	lines, err := os.ReadFile(filepath.Join(dir, "vocab.bpe"))
	if err != nil {
		return nil, err
	}
	for i, line := range strings.Split(string(lines), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || (i == 0 && strings.HasPrefix(line, "#")) {
			continue
		}
		if kept[f[0]] && kept[f[1]] && kept[f[0]+f[1]] {
			v.merges = append(v.merges, f[0]+" "+f[1])
		}
	}
	v.ids = [][2]any{{"bos_token_id", uint32(1)}, {"eos_token_id", uint32(2)}, {"unknown_token_id", uint32(0)}, {"padding_token_id", uint32(11)}}
	v.tail = [][2]any{{"add_bos_token", true}, {"add_eos_token", false}}
	if t, err := os.ReadFile(filepath.Join(assets, "chat-templates", "mistralai-Mistral-Nemo-Instruct-2407.jinja")); err == nil {
		v.template = string(t)
	}
	return v, nil
}

// gemma4Vocab is a Gemma-4-shaped vocabulary (Gemma4Model.set_vocab:
// tokenizer model "gemma4", a byte-fallback BPE over raw UTF-8 with ▁ for
// spaces, merges, scores -1000, <0xXX> byte tokens): the Gemma control tokens
// and the Gemma 4 turn and tool tokens first, the 256 byte tokens, then the
// first pieces of Llama 2's SentencePiece vocabulary (Gemma 4's own 262k one
// is not in shared/models: its single characters and first multi-character
// pieces), 8192 tokens in all, with the merges that Hugging
// Face's SentencePiece converter derives for them (every split of a piece
// into two pieces, ordered by the piece's rank).
func gemma4Vocab(assets string) (*mvocab, error) {
	const n = 8192
	f, err := gguf.Open(filepath.Join(assets, "vocab", "ggml-vocab-llama-spm.gguf"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil {
		return nil, err
	}
	v := &mvocab{model: "gemma4"}
	add := func(s string, t int32) { v.tokens = append(v.tokens, s); v.types = append(v.types, t) }
	for _, s := range []string{"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>"} {
		add(s, tokControl)
	}
	// always rendered (USER_DEFINED), as Gemma4Model.set_vocab marks them
	for _, s := range []string{"<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>", "<|\"|>"} {
		add(s, tokUserDefined)
	}
	for i := 0; i < 256; i++ {
		add(fmt.Sprintf("<0x%02X>", i), tokByte)
	}
	first := len(v.tokens)
	// every single-character piece (Llama 2 keeps them last), then the first
	// multi-character pieces, all in Llama 2's order
	singles := 0
	for _, s := range src[259:] {
		if utf8.RuneCountInString(s) == 1 {
			singles++
		}
	}
	multi := n - first - singles
	for _, s := range src[259:] {
		if utf8.RuneCountInString(s) == 1 || multi > 0 {
			if utf8.RuneCountInString(s) > 1 {
				multi--
			}
			add(s, tokNormal)
		}
	}
	id := map[string]int{}
	for i, s := range v.tokens {
		if _, dup := id[s]; !dup {
			id[s] = i
		}
	}
	for _, piece := range v.tokens[first:] {
		type pair struct{ l, r string }
		var local []pair
		for k := range piece {
			if k == 0 {
				continue
			}
			l, r := piece[:k], piece[k:]
			_, okl := id[l]
			_, okr := id[r]
			if okl && okr && utf8.ValidString(l) {
				local = append(local, pair{l, r})
			}
		}
		sort.SliceStable(local, func(i, j int) bool {
			if id[local[i].l] != id[local[j].l] {
				return id[local[i].l] < id[local[j].l]
			}
			return id[local[i].r] < id[local[j].r]
		})
		for _, p := range local {
			v.merges = append(v.merges, p.l+" "+p.r)
		}
	}
	v.scores = make([]float32, len(v.tokens))
	for i := range v.scores {
		v.scores[i] = -1000
	}
	v.ids = [][2]any{{"bos_token_id", uint32(2)}, {"eos_token_id", uint32(1)}, {"unknown_token_id", uint32(3)}, {"padding_token_id", uint32(0)}}
	v.tail = [][2]any{{"add_space_prefix", false}, {"add_bos_token", true}}
	return v, nil
}
