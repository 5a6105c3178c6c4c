package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loom-inference/loom/internal/testmodels"
)

// TestFolderCommands: a Hugging Face folder works where a model file does
// (inspect, tokenize, logits, run), converts to GGUF, and that file
// quantizes; bad arguments are clear errors.
func TestFolderCommands(t *testing.T) {
	dir := filepath.Join(testmodels.Shared(t), "models", "tinystories-656k", "hf")
	out, _, err := loom(t, "inspect", dir)
	if err != nil || !strings.Contains(out, `general.architecture                    string  "llama"`) || !strings.Contains(out, "blk.1.attn_q.weight") {
		t.Fatalf("inspect DIR: %v\n%s", err, out)
	}
	out, _, err = loom(t, "tokenize", "-m", dir, "-p", "Once upon a time")
	if err != nil || strings.TrimSpace(out) != "1 80 147 201 282 57" {
		t.Fatalf("tokenize: %v %q", err, out)
	}
	out, _, err = loom(t, "run", "-m", dir, "-p", "Once upon a time", "-n", "8", "--temp", "0")
	if err != nil || len(strings.TrimSpace(out)) == 0 {
		t.Fatalf("run: %v %q", err, out)
	}
	tmp := t.TempDir()
	f16 := filepath.Join(tmp, "ts-f16.gguf")
	if _, stderr, err := loom(t, "convert", dir, f16, "--type", "f16"); err != nil || !strings.Contains(stderr, "(F16,") {
		t.Fatalf("convert: %v\n%s", err, stderr)
	}
	q := filepath.Join(tmp, "ts-q4km.gguf")
	_, stderr, err := loom(t, "quantize", f16, q, "Q4_K_M", "--threads", "2")
	if err != nil || !strings.Contains(stderr, "Q4_K_M") || !strings.Contains(stderr, "[  20/  20]") {
		t.Fatalf("quantize: %v\n%s", err, stderr)
	}
	a, _, err := loom(t, "run", "-m", q, "-p", "Once upon a time", "-n", "8", "--temp", "0")
	b, _, err2 := loom(t, "run", "-m", dir, "--quantize", "Q4_K_M", "-p", "Once upon a time", "-n", "8", "--temp", "0")
	if err != nil || err2 != nil || a != b {
		t.Errorf("quantized file %q (%v) vs folder quantized while loading %q (%v)", a, err, b, err2)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"quantize", f16, filepath.Join(tmp, "x.gguf"), "Q9_K"}, `unknown type "Q9_K"`},
		{[]string{"quantize", f16, filepath.Join(tmp, "x.gguf"), "Q2_K_S"}, "importance matrix"},
		{[]string{"quantize", f16, f16, "Q8_0"}, "is the input"},
		{[]string{"quantize", filepath.Join(tmp, "none.gguf"), filepath.Join(tmp, "x.gguf"), "Q8_0"}, "no such file"},
		{[]string{"convert", tmp, filepath.Join(tmp, "x.gguf")}, "not a Hugging Face model folder"},
		{[]string{"convert", dir, filepath.Join(tmp, "x.gguf"), "--type", "Q7"}, `unknown type "Q7"`},
		{[]string{"run", "-m", f16, "--quantize", "Q8_0", "-p", "x"}, "for Hugging Face folders"},
	} {
		_, stderr, err := loom(t, c.args...)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("loom %v: %v %q, want %q", c.args, err, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "x.gguf")); err == nil {
		t.Error("a failed command left an output file")
	}
}
