package tokenizer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loom-inference/loom/gguf"
	"github.com/loom-inference/loom/internal/testmodels"
	"github.com/loom-inference/loom/tokenizer"
)

func presetVocab(t *testing.T, preset string) *tokenizer.Vocab {
	t.Helper()
	// Q2_K is the smallest file; the vocabulary is the same in every type.
	f, err := gguf.Open(testmodels.Synth(t, "-model", preset, "-type", "Q2_K", "-seed", "1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	v, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func checkVectors(t *testing.T, v *tokenizer.Vocab, name string) {
	t.Helper()
	texts, want := vectors(t, filepath.Join(testmodels.Shared(t), "models", "vocab", "ggml-vocab-"+name+".gguf"))
	bad := 0
	for i, text := range texts {
		if got := v.Encode(text, false, false); !slices.Equal(got, want[i]) {
			if bad++; bad <= 3 {
				t.Errorf("%s %q:\n got %v\nwant %v", name, text, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d strings differ", name, bad, len(texts))
	}
}

// TestPresetVectors: the qwen2 / llama-bpe / deepseek-r1-qwen vectors have no
// GGUF of their own; the synthgguf presets carry those vocabularies.
func TestPresetVectors(t *testing.T) {
	qwen := presetVocab(t, "qwen2.5-0.5b")
	checkVectors(t, qwen, "qwen2")
	checkVectors(t, qwen, "deepseek-r1-qwen")
	checkVectors(t, presetVocab(t, "llama-3.2-1b"), "llama-bpe")
}

// TestBPEFiles builds the same vocabularies straight from the original files.
func TestBPEFiles(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tokenizers")
	qwen, err := tokenizer.FromBPEFiles(filepath.Join(dir, "qwen2", "vocab.json"), filepath.Join(dir, "qwen2", "merges.txt"), "qwen2", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, qwen, "qwen2")
	checkVectors(t, qwen, "deepseek-r1-qwen")
	llama, err := tokenizer.FromBPEFiles(filepath.Join(dir, "llama3.2", "encoder.json"), filepath.Join(dir, "llama3.2", "vocab.bpe"), "llama-bpe", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, llama, "llama-bpe")
}

// allInputs gathers every test string of the llama.cpp vectors.
func allInputs(t *testing.T) []string {
	files, _ := filepath.Glob(filepath.Join(testmodels.Shared(t), "models", "vocab", "*.inp"))
	seen := map[string]bool{}
	var out []string
	for _, f := range files {
		texts, _ := vectors(t, strings.TrimSuffix(f, ".inp"))
		for _, s := range texts {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// TestHFSmolLM2: tokenizer.json and the GGUF made from it agree on every
// test string, with and without special-token parsing.
func TestHFSmolLM2(t *testing.T) {
	hf, err := tokenizer.FromHFJSON(filepath.Join(testmodels.Shared(t), "models", "tokenizers", "smollm2", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	gg := presetVocab(t, "smollm2-135m")
	inputs := append(allInputs(t), "<|im_start|>user\nHi<|im_end|>\n")
	for _, s := range inputs {
		for _, special := range []bool{false, true} {
			a, b := hf.Encode(s, false, special), gg.Encode(s, false, special)
			if !slices.Equal(a, b) {
				t.Fatalf("%q (special %v):\n tokenizer.json %v\n           gguf %v", s, special, a, b)
			}
		}
		if got := hf.Decode(hf.Encode(s, false, false)); got != s {
			t.Errorf("round trip %q -> %q", s, got)
		}
	}
}

// TestHFTinyStories: the model folder's tokenizer (merge ranks, '▁'
// normalizer, BOS from the post-processor) agrees with llama.cpp on the GGUF
// conversion where both apply the same merges ("Once upon a time"), and
// round-trips every test string written in its alphabet. (The GGUF files
// lost the merge order — all scores are -1000 — so for other text llama.cpp
// on the GGUF merges leftmost-first and legitimately differs: "The little
// dog" is "▁The little▁ dog▁" here and "li tt le▁" there.)
func TestHFTinyStories(t *testing.T) {
	shared := testmodels.Shared(t)
	hf, err := tokenizer.FromHFJSON(filepath.Join(shared, "models", "tinystories-656k", "hf", "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if hf.BOS != 1 || !hf.AddBOS {
		t.Fatalf("BOS %d add %v", hf.BOS, hf.AddBOS)
	}
	for _, r := range testmodels.References(t) {
		if !strings.Contains(r.Source, "tinystories-656k") || r.Prompt != "Once upon a time" {
			continue
		}
		want := r.Load(t).Prompt.Tokens
		if got := hf.Encode(r.Prompt, true, false); !slices.Equal(got, want) {
			t.Errorf("%q: tokenizer.json %v, llama.cpp on the GGUF %v", r.Prompt, got, want)
		}
	}
	n := 0
	for _, s := range allInputs(t) {
		representable := true
		for _, r := range s {
			if _, ok := hf.ID(string(r)); !ok && r != ' ' {
				representable = false
			}
		}
		if !representable {
			continue
		}
		n++
		ids := hf.Encode(s, true, false)
		st := hf.NewStream(true)
		var sb strings.Builder
		for _, id := range ids[1:] {
			sb.WriteString(st.Add(id))
		}
		sb.WriteString(st.Flush())
		if sb.String() != s {
			t.Errorf("round trip %q -> %q", s, sb.String())
		}
	}
	if n < 10 {
		t.Fatalf("only %d test strings in the alphabet", n)
	}
}

// TestHFNormalizerNFC: a tokenizer.json with Qwen2's NFC normalizer maps a
// decomposed "é" (e + U+0301) to the same ids as the composed one.
func TestHFNormalizerNFC(t *testing.T) {
	js := `{"model":{"type":"BPE","vocab":{"a":0,"é":1,"e":2,"\u0301":3},"merges":[]},
	"normalizer":{"type":"NFC"},"pre_tokenizer":null,"added_tokens":[]}`
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := tokenizer.FromHFJSON(path)
	if err != nil {
		t.Fatal(err)
	}
	composed, decomposed := v.Encode("a\u00e9", false, false), v.Encode("ae\u0301", false, false)
	if !slices.Equal(composed, []int32{0, 1}) || !slices.Equal(decomposed, composed) {
		t.Fatalf("composed %v, decomposed %v, want [0 1] for both", composed, decomposed)
	}
}

// TestHFTekkenAndO200kSplits: a tokenizer.json whose Split regex is
// Mistral's tekken or OpenAI's o200k (gpt-oss) loads (both need look-ahead)
// and is named as llama.cpp names it; tekken splits digits one by one, o200k
// in threes and keeps "'s" on its word, as their regexes say.
func TestHFTekkenAndO200kSplits(t *testing.T) {
	for _, c := range []struct {
		name, regex string
		text        string
		want        []string
	}{
		{"tekken", `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
			"ab 1234", []string{"ab", "Ġ", "1", "2", "3", "4"}},
		{"gpt-4o", `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`,
			"ab's 1234", []string{"ab's", "Ġ", "123", "4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// A vocabulary of exactly the pieces: each pre-token is one id.
			vocab := map[string]int{}
			for i, p := range []string{"a", "b", "'", "s", "Ġ", "1", "2", "3", "4", "ab", "ab's", "123", "12", "34", "1234"} {
				vocab[p] = i
			}
			merges := []string{"a b", "ab '", "ab' s", "1 2", "12 3", "3 4", "12 34"}
			pat, _ := json.Marshal(c.regex)
			vj, _ := json.Marshal(vocab)
			mj, _ := json.Marshal(merges)
			js := `{"model":{"type":"BPE","vocab":` + string(vj) + `,"merges":` + string(mj) + `,"ignore_merges":false},
			"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + string(pat) + `},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]},
			"decoder":{"type":"ByteLevel"},"added_tokens":[]}`
			path := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := os.WriteFile(path, []byte(js), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := tokenizer.ReadHFFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := f.PreTokenizer(); got != c.name {
				t.Errorf("pre-tokenizer %q, want %q", got, c.name)
			}
			v, err := f.NewVocab()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, id := range v.Encode(c.text, false, false) {
				got = append(got, v.Tokens[id])
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%q → %q, want %q", c.text, got, c.want)
			}
		})
	}
}
