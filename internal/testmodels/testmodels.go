// Package testmodels finds the shared test assets (../shared) and generates
// synthetic GGUF files with ../shared/tools/synthgguf into a cache directory,
// so tests across packages can use the same files.
package testmodels

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Shared returns the absolute path of the shared/ directory, or skips the
// test (with a message) when it is absent. With LOOM_REQUIRE_SHARED set
// (CI sets it when ../shared is there) a missing shared/ fails the test
// instead, so a test that needs it can never pass by skipping.
func Shared(t testing.TB) string {
	t.Helper()
	dir, err := SharedDir()
	if err != nil {
		if os.Getenv("LOOM_REQUIRE_SHARED") != "" {
			t.Fatalf("LOOM_REQUIRE_SHARED is set: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return dir
}

// SharedDir locates shared/: $LOOM_SHARED, else ../shared above the module root.
func SharedDir() (string, error) {
	if d := os.Getenv("LOOM_SHARED"); d != "" {
		return d, nil
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	d := filepath.Clean(filepath.Join(root, "..", "shared"))
	if st, err := os.Stat(filepath.Join(d, "reference")); err != nil || !st.IsDir() {
		return "", fmt.Errorf("shared assets not found at %s (set LOOM_SHARED)", d)
	}
	return d, nil
}

// CacheDir is where generated files live: $LOOM_TEST_CACHE, else the user
// cache directory. Never inside the repository.
func CacheDir() (string, error) {
	if d := os.Getenv("LOOM_TEST_CACHE"); d != "" {
		return d, os.MkdirAll(d, 0o755)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	d := filepath.Join(base, "loom-test")
	return d, os.MkdirAll(d, 0o755)
}

var (
	buildOnce sync.Once
	toolPath  string
	toolErr   error
)

func synthTool(shared, cache string) (string, error) {
	buildOnce.Do(func() {
		toolPath = filepath.Join(cache, fmt.Sprintf("synthgguf-%d", os.Getpid()))
		cmd := exec.Command("go", "-C", filepath.Join(shared, "tools", "synthgguf"), "build", "-o", toolPath, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			toolErr = fmt.Errorf("building synthgguf: %v\n%s", err, out)
		}
	})
	return toolPath, toolErr
}

// SynthArgs parses the "source" column of reference/index.tsv
// ("synthgguf -model M -type T [-dequant-of D] -seed S") into a file path,
// generating the file on first use.
func SynthArgs(t testing.TB, source string) string {
	t.Helper()
	f := strings.Fields(source)
	if len(f) == 0 || f[0] != "synthgguf" {
		t.Fatalf("not a synthgguf command: %q", source)
	}
	return Synth(t, f[1:]...)
}

var genMu sync.Mutex

// Synth returns the path of the synthgguf file made with args, generating it
// into the cache on first use (written to a temporary name, then renamed, so
// concurrent test binaries never see a partial file).
func Synth(t testing.TB, args ...string) string {
	t.Helper()
	shared := Shared(t)
	cache, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	name := strings.NewReplacer("-", "", " ", "_", "/", "_").Replace(strings.Join(args, " ")) + ".gguf"
	path := filepath.Join(cache, name)
	if _, err := os.Stat(path); err == nil {
		return path
	}
	genMu.Lock()
	defer genMu.Unlock()
	if _, err := os.Stat(path); err == nil {
		return path
	}
	tool, err := synthTool(shared, cache)
	if err != nil {
		t.Fatal(err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	cmd := exec.Command(tool, append(append([]string{}, args...), "-assets", filepath.Join(shared, "models"), "-o", tmp)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		t.Fatalf("synthgguf %v: %v\n%s", args, err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// LlamaTool returns the path of one of llama.cpp b4748's prebuilt tools in
// ../shared/tools/llamacpp-b4748/bin and the environment that runs it.
func LlamaTool(t testing.TB, name string) (string, []string) {
	t.Helper()
	dir := filepath.Join(Shared(t), "tools", "llamacpp-b4748", "bin")
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("llama.cpp tool %s: %v", name, err)
	}
	return path, append(os.Environ(), "LD_LIBRARY_PATH="+dir)
}
