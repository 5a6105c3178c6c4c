package engine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/loom-inference/loom/engine/defaultmodel"
)

// DefaultModel is the file `loom run` uses without -m. The binary embeds
// it, so it is always available.
const DefaultModel = defaultmodel.Name

// ModelDirs lists where models are looked up, in order: $LOOM_MODELS,
// then the user cache directory.
func ModelDirs() []string {
	var dirs []string
	if d := os.Getenv("LOOM_MODELS"); d != "" {
		dirs = append(dirs, d)
	}
	if c, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(c, "loom", "models"))
	}
	return dirs
}

// FindModel looks name up in ModelDirs; the default model, when no
// directory has it, is written from the binary into the user cache
// directory. The error says where it looked.
func FindModel(name string) (string, error) {
	var tried []string
	for _, d := range ModelDirs() {
		p := filepath.Join(d, name)
		tried = append(tried, p)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	if name == DefaultModel {
		return writeDefault()
	}
	return "", fmt.Errorf("model %s not found; looked in:\n  %s\nput it in one of those directories (or set LOOM_MODELS), or pass -m FILE",
		name, strings.Join(tried, "\n  "))
}

// writeDefault puts the embedded default model in the user cache (or the
// temporary directory) and returns its path; an existing identical copy is
// reused. The file appears whole or not at all (written, then renamed).
func writeDefault() (string, error) {
	dirs := []string{}
	if c, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(c, "loom", "models"))
	}
	dirs = append(dirs, filepath.Join(os.TempDir(), "loom-models"))
	var lastErr error
	for _, d := range dirs {
		p := filepath.Join(d, DefaultModel)
		if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, defaultmodel.GGUF) {
			return p, nil
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			lastErr = err
			continue
		}
		tmp, err := os.CreateTemp(d, DefaultModel+".partial-*")
		if err != nil {
			lastErr = err
			continue
		}
		_, err = tmp.Write(defaultmodel.GGUF)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), p)
		}
		if err != nil {
			os.Remove(tmp.Name())
			lastErr = err
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("writing the embedded default model: %w", lastErr)
}
