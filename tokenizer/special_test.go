package tokenizer_test

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestSpecialTokens compares special-token parsing with llama.cpp's own
// tokenizer on the synthgguf presets. testdata/special_llamacpp.jsonl was
// recorded with the llama.cpp that node-llama-cpp 3.22.1 ships
// (model.tokenize(text, specialTokens) with specialTokens true and false;
// no BOS), the prebuilt used by shared/tools/llamacpp-bench.
func TestSpecialTokens(t *testing.T) {
	f, err := os.Open("testdata/special_llamacpp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var c struct {
			Preset, Text   string
			Special, Plain []int32
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		v := presetVocab(t, c.Preset)
		if got := v.Encode(c.Text, false, true); !slices.Equal(got, c.Special) {
			t.Errorf("%s %q parse special:\n got %v\nwant %v", c.Preset, c.Text, got, c.Special)
		}
		if got := v.Encode(c.Text, false, false); !slices.Equal(got, c.Plain) {
			t.Errorf("%s %q plain:\n got %v\nwant %v", c.Preset, c.Text, got, c.Plain)
		}
		n++
	}
	if n < 12 {
		t.Fatalf("only %d cases", n)
	}
}
