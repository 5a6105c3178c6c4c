package hfmodel

import (
	"path/filepath"
	"testing"

	"github.com/loom-inference/loom/internal/model"
)

// TestEmbeddingFoldersLoad: where Loom's model layer runs the family, the
// folder loads through it (model.LoadGGUFFrom, as the engine loads a
// folder).
func TestEmbeddingFoldersLoad(t *testing.T) {
	bge := bertFolder(t, "BertModel", nil, nil, false)
	for name, dir := range map[string]string{"bert": bge, "qwen3-rerank": qwenFolder(t, "Qwen3-Reranker-0.6B", true)} {
		fo, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		arch := fo.Arch
		fo.Close()
		if _, err := model.Lookup(arch); err != nil {
			t.Logf("%s: %v (not checked)", name, err)
			continue
		}
		if err := openAndLoad(dir); err != nil {
			t.Errorf("%s (%s): %v", name, filepath.Base(dir), err)
		}
	}
}
