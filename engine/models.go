package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultModel is the file `loom run` uses without -m.
const DefaultModel = "TinyStories-656K-Q8_0.gguf"

// DefaultModelURL is where DefaultModel can be downloaded.
const DefaultModelURL = "https://github.com/diogok/llama.cpp.zig/raw/a0db4194/models/TinyStories-656K-Q8_0.gguf"

// ModelDirs lists where models are looked up, in order: $LOOM_MODELS,
// ../shared/models (when run from a checkout), the user cache directory.
func ModelDirs() []string {
	var dirs []string
	if d := os.Getenv("LOOM_MODELS"); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, filepath.Join("..", "shared", "models"))
	if c, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(c, "loom", "models"))
	}
	return dirs
}

// FindModel looks name up in ModelDirs, directly or in the layout of
// shared/models. The error says where it looked and how to get the file.
func FindModel(name string) (string, error) {
	var tried []string
	for _, d := range ModelDirs() {
		for _, p := range []string{
			filepath.Join(d, name),
			filepath.Join(d, "tinystories-656k", "gguf", name),
		} {
			tried = append(tried, p)
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("model %s not found; looked in:\n  %s\ndownload it from %s into one of those directories (or set LOOM_MODELS), or pass -m FILE",
		name, strings.Join(tried, "\n  "), DefaultModelURL)
}
