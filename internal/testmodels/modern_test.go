package testmodels

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"testing"
)

// TestModernFilesUnchanged regenerates every model of
// testdata/reference-modern/index.tsv and checks its sha256: a change to
// the writer, the presets or the vocabularies would silently make the
// recordings describe other files.
func TestModernFilesUnchanged(t *testing.T) {
	assets := filepath.Join(Shared(t), "models")
	refs := modernIndex(t)
	if len(refs) == 0 {
		t.Fatal("no rows in testdata/reference-modern/index.tsv")
	}
	for _, r := range refs {
		o, err := ParseModernSource(r.Source)
		if err != nil {
			t.Fatal(err)
		}
		o.Assets = assets
		h := sha256.New()
		if err := WriteModern(h, o); err != nil {
			t.Fatalf("%s: %v", r.Source, err)
		}
		if got, want := fmt.Sprintf("%x", h.Sum(nil)), r.SHA256; got != want {
			t.Errorf("%s: sha256 %s, index.tsv has %s", r.Source, got, want)
		}
		rec := r.Load(t)
		if len(rec.Prompt.Tokens) == 0 || len(rec.TF) != len(rec.Prompt.Tokens) || len(rec.Gen) != r.NGen {
			t.Errorf("%s: %d prompt tokens, %d tf lines, %d of %d greedy tokens", r.File, len(rec.Prompt.Tokens), len(rec.TF), len(rec.Gen), r.NGen)
		}
	}
}
