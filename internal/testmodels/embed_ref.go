package testmodels

// Reading testdata/reference-embed: llama.cpp's embeddings and rank outputs
// for the EmbedPresets files (README.md there has the format and how they
// were recorded).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// EmbedRef is one recording: its meta line, then its embed or rank lines
// (in file order).
type EmbedRef struct {
	Meta   EmbedMeta
	Embeds []EmbedRecord // pooling mean, cls, last
	Ranks  []RankRecord  // pooling rank
}

// EmbedMeta is the first line of a recording.
type EmbedMeta struct {
	Model        string `json:"model"`  // "bert-mini F16"
	Source       string `json:"source"` // "modelgen -model bert-mini -type F16 -seed 1"
	Arch         string `json:"arch"`
	Pooling      string `json:"pooling"` // mean, cls, last or rank
	NOut         int    `json:"n_out"`   // length of each embedding (rank: of Raw, the labels)
	RecordedWith string `json:"recorded_with"`
	// ReferenceVariant names the variant whose values the file holds
	// ("fa1-kvF16": flash attention on, KV cache F16).
	ReferenceVariant string `json:"reference_variant"`
	RepeatIdentical  bool   `json:"repeat_identical"`
	// RankTemplate is the rank template node-llama-cpp filled in
	// (tokenizer.chat_template.rerank with {{query}} / {{document}}), nil
	// when it formats [BOS] query [EOS] [SEP] document [EOS].
	RankTemplate *string `json:"rank_template,omitempty"`
	Score        string  `json:"score,omitempty"` // how the rank score derives from Raw
	// MaxCosBetweenInputs is the largest cosine between the embeddings of
	// two different texts (a sanity check that they are not degenerate).
	MaxCosBetweenInputs float64 `json:"max_cos_between_inputs,omitempty"`
	// Variants maps each of llama.cpp's variants to its distance from the
	// reference one.
	Variants map[string]EmbedVariant `json:"variants"`
}

// EmbedVariant is one llama.cpp configuration and how far its outputs are
// from the reference variant's.
type EmbedVariant struct {
	FlashAttention bool    `json:"flash_attention"`
	KVType         string  `json:"kv_type"`
	MaxAbs         float64 `json:"max_abs"`   // largest |difference| of an output value
	MinCos         float64 `json:"min_cos"`   // smallest cosine of two embeddings (embed files)
	MaxScore       float64 `json:"max_score"` // largest |difference| of a rank score (rank files)
	Reference      bool    `json:"reference"`
}

// EmbedRecord is one text: the tokens llama.cpp evaluated (special tokens
// included) and its raw pooled output (llama_get_embeddings_seq, not
// normalized).
type EmbedRecord struct {
	Text      string    `json:"text"`
	Tokens    []int32   `json:"tokens"`
	Embedding []float32 `json:"embedding"`
}

// RankRecord is one (query, document) pair: the tokens evaluated (as
// node-llama-cpp's LlamaRankingContext formats them), the raw output of the
// rank head (all n_cls_out values; for qwen3 already softmaxed) and
// node-llama-cpp's rank() score.
type RankRecord struct {
	Query    string    `json:"query"`
	Document string    `json:"document"`
	Tokens   []int32   `json:"tokens"`
	Raw      []float32 `json:"raw"`
	Score    float32   `json:"score"`
	// For template rerankers (qwen3), the input llama-server builds when it
	// differs from node's: the texts substituted into the template and the
	// whole string tokenized (node tokenizes the pieces separately, so
	// "<Query>: " + "What" gives ":" " " "What" instead of ":" " What"),
	// with its raw output and score. Empty when the two agree.
	ServerTokens []int32   `json:"server_tokens,omitempty"`
	ServerRaw    []float32 `json:"server_raw,omitempty"`
	ServerScore  float32   `json:"server_score,omitempty"`
}

// LoadEmbedRef reads a recording (a jsonl file of testdata/reference-embed).
func LoadEmbedRef(path string) (EmbedRef, error) {
	var ref EmbedRef
	f, err := os.Open(path)
	if err != nil {
		return ref, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var k struct{ Kind string }
		if err := json.Unmarshal(line, &k); err != nil {
			return ref, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		switch k.Kind {
		case "meta":
			err = json.Unmarshal(line, &ref.Meta)
		case "embed":
			var r EmbedRecord
			err = json.Unmarshal(line, &r)
			ref.Embeds = append(ref.Embeds, r)
		case "rank":
			var r RankRecord
			err = json.Unmarshal(line, &r)
			ref.Ranks = append(ref.Ranks, r)
		default:
			err = fmt.Errorf("unknown kind %q", k.Kind)
		}
		if err != nil {
			return ref, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return ref, err
	}
	if ref.Meta.Source == "" {
		return ref, fmt.Errorf("%s: no meta line", path)
	}
	return ref, nil
}

// EmbedRecording is one row of testdata/reference-embed/index.tsv.
type EmbedRecording struct {
	File    string // jsonl name
	Path    string // absolute path of the jsonl file
	Model   string // "bert-mini F16"
	Source  string // modelgen command that writes the model (EmbedModel makes it)
	SHA256  string // of the model file
	Pooling string // mean, cls, last or rank
	NOut    int
	// Tolerances from llama.cpp's own variants (README.md): AbsTol bounds
	// |difference| of every output value (embeddings, rank raw values),
	// MinCos the cosine of each embedding to the recorded one (0 for rank
	// files), ScoreTol |difference| of the rank score (0 for embed files).
	AbsTol, MinCos, ScoreTol float64
}

// Load reads the recording.
func (r EmbedRecording) Load() (EmbedRef, error) { return LoadEmbedRef(r.Path) }

// EmbedRefDir is the absolute path of testdata/reference-embed.
func EmbedRefDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "reference-embed")
}

// EmbedRecordings lists the recordings of testdata/reference-embed/index.tsv
// with their modelgen sources and tolerances.
func EmbedRecordings() ([]EmbedRecording, error) {
	dir := EmbedRefDir()
	b, err := os.ReadFile(filepath.Join(dir, "index.tsv"))
	if err != nil {
		return nil, err
	}
	var rows []EmbedRecording
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		c := strings.Split(line, "\t")
		if i == 0 {
			continue
		}
		if len(c) < 10 {
			return nil, fmt.Errorf("index.tsv line %d: %d columns, want 10", i+1, len(c))
		}
		r := EmbedRecording{File: c[0], Path: filepath.Join(dir, c[0]), Model: c[1], Source: c[2], SHA256: c[3], Pooling: c[4]}
		r.NOut, _ = strconv.Atoi(c[5])
		r.AbsTol, _ = strconv.ParseFloat(c[6], 64)
		r.MinCos, _ = strconv.ParseFloat(c[7], 64)
		r.ScoreTol, _ = strconv.ParseFloat(c[8], 64)
		rows = append(rows, r)
	}
	return rows, nil
}

// EmbedModel returns the path of the modelgen file described by source
// (Modern: any preset of EmbedPresets or ModernPresets).
func EmbedModel(t testing.TB, source string) string {
	t.Helper()
	return Modern(t, source)
}
