package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStaticBuild builds loom exactly as the README's install section
// says (its `go build … ./cmd/loom` line, with the environment assignments
// it starts with) and checks the result is a static executable: no
// program interpreter (PT_INTERP) and no shared libraries needed. A plain
// `go build` links the C resolver of net and os/user through cgo whenever
// a C compiler is present, giving a dynamic binary; CGO_ENABLED=0 does not.
// It runs under -short too (.ci/test's unit pass): the promise is the
// README's first command.
func TestStaticBuild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("checks an ELF executable")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.Contains(l, "go build") && strings.Contains(l, "./cmd/loom") {
			line = l
			break
		}
	}
	if line == "" {
		t.Fatal("README.md has no `go build … ./cmd/loom` line")
	}
	words := strings.Fields(strings.SplitN(line, "#", 2)[0])
	var env []string
	for len(words) > 0 && strings.Contains(words[0], "=") {
		env = append(env, words[0])
		words = words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		t.Fatalf("cannot read the README's build command %q", line)
	}
	bin := filepath.Join(t.TempDir(), "loom")
	args := []string{"build"}
	hasOut := false
	for i := 2; i < len(words); i++ {
		args = append(args, words[i])
		if words[i] == "-o" && i+1 < len(words) {
			args = append(args, bin)
			i++
			hasOut = true
		}
	}
	if !hasOut {
		args = append([]string{"build", "-o", bin}, args[1:]...)
	}
	// The environment of a user who types the line: whatever cgo setting
	// the test runs under is dropped, so only the README's line decides.
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CGO_ENABLED=") {
			base = append(base, kv)
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(base, env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the README's build (%s) gives a dynamically linked binary (it has a program interpreter)", strings.TrimSpace(line))
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the README's build (%s) needs shared libraries %v", strings.TrimSpace(line), libs)
	}
}
