package testmodels

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHybridFilesUnchanged regenerates every modelgen model of
// testdata/reference-hybrid/index.tsv and checks its sha256 (a change to
// the writer, the presets or the vocabularies would silently make the
// recordings describe other files); a synthgguf model's sha256 must be the
// one shared/reference-modern/index.tsv gives for the same command. It also
// checks that each recording has a teacher-forced line per prompt token and
// the greedy steps index.tsv promises.
func TestHybridFilesUnchanged(t *testing.T) {
	assets := filepath.Join(Shared(t), "models")
	rows := hybridIndex(t)
	if len(rows) == 0 {
		t.Fatal("no rows in testdata/reference-hybrid/index.tsv")
	}
	shared := sharedSHA(t)
	seen := map[string]bool{}
	for _, r := range rows {
		switch {
		case strings.HasPrefix(r.Source, "modelgen "):
			o, err := ParseModernSource(r.Source)
			if err != nil {
				t.Fatal(err)
			}
			if !isHybridPreset(o.Model) {
				t.Errorf("%s: not a hybrid preset", r.Source)
			}
			o.Assets = assets
			h := sha256.New()
			if err := WriteModern(h, o); err != nil {
				t.Fatalf("%s: %v", r.Source, err)
			}
			if got := fmt.Sprintf("%x", h.Sum(nil)); got != r.SHA256 {
				t.Errorf("%s: sha256 %s, index.tsv has %s", r.Source, got, r.SHA256)
			}
			seen[o.Model] = true
		case strings.HasPrefix(r.Source, "synthgguf "):
			if want, ok := shared[r.Source]; !ok || want != r.SHA256 {
				t.Errorf("%s: sha256 %s, shared/reference-modern/index.tsv has %q", r.Source, r.SHA256, want)
			}
		default:
			t.Errorf("%s: unknown source %q", r.File, r.Source)
		}
		rec := r.Load(t)
		if len(rec.Prompt.Tokens) == 0 || len(rec.TF) != len(rec.Prompt.Tokens) || len(rec.Gen) != r.NGen || len(rec.GTop) != r.NGen {
			t.Errorf("%s: %d prompt tokens, %d tf lines, %d of %d greedy tokens", r.File, len(rec.Prompt.Tokens), len(rec.TF), len(rec.Gen), r.NGen)
		}
		if r.LogitTol < 0.05 || r.LseTol < 0.02 || r.StableGen > r.NGen {
			t.Errorf("%s: tolerances %v / %v, stable_gen %d of %d", r.File, r.LogitTol, r.LseTol, r.StableGen, r.NGen)
		}
	}
	for _, p := range HybridPresets {
		if !seen[p.Name] {
			t.Errorf("preset %s has no recording in testdata/reference-hybrid/index.tsv", p.Name)
		}
	}
	for _, r := range HybridReferences(t) {
		if r.Path == "" {
			t.Errorf("%s: no Path", r.File)
		}
	}
}

// sharedSHA maps the source column of shared/reference-modern/index.tsv to
// its sha256 column.
func sharedSHA(t *testing.T) map[string]string {
	b, err := os.ReadFile(filepath.Join(Shared(t), "reference-modern", "index.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if c := strings.Split(line, "\t"); len(c) >= 4 {
			m[c[2]] = c[3]
		}
	}
	return m
}
