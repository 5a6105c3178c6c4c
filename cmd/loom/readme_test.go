package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCommands keeps the documentation's commands true: every `loom`
// command line in a shell block of README.md and docs/*.md names a command
// that exists, and every flag it shows is one that command takes (as its
// `loom help` lists it). The first-steps commands that need no download run.
func TestReadmeCommands(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md"}, files...)
	helps := map[string]string{}
	help := func(cmd string) (string, bool) {
		if h, ok := helps[cmd]; ok {
			return h, h != ""
		}
		out, _, err := loom(t, append([]string{"help"}, strings.Fields(cmd)...)...)
		if err != nil {
			out = ""
		}
		helps[cmd] = out
		return out, out != ""
	}
	flagRE := regexp.MustCompile(`(?:^|[\s\[(|])(--?[a-zA-Z][a-zA-Z0-9-]*)`)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inSh := false
		for i, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "```sh"):
				inSh = true
				continue
			case strings.HasPrefix(line, "```"):
				inSh = false
				continue
			}
			if !inSh {
				continue
			}
			// Comments are prose; a line may hold several commands.
			if j := strings.Index(line, " #"); j >= 0 {
				line = line[:j]
			}
			for _, part := range regexp.MustCompile(`\||&&`).Split(line, -1) {
				w := strings.Fields(part)
				if len(w) < 2 || w[0] != "loom" {
					continue
				}
				cmd := w[1]
				if cmd == "grammar" && len(w) > 2 && !strings.HasPrefix(w[2], "-") {
					cmd += " " + w[2]
				}
				h, ok := help(cmd)
				if !ok && strings.HasPrefix(cmd, "grammar ") {
					// "grammar from-schema X | check ...": the synopsis
					// of both subcommands.
					h, ok = help("grammar")
				}
				if !ok {
					t.Errorf("%s:%d: loom %s: no such command", f, i+1, cmd)
					continue
				}
				for _, m := range flagRE.FindAllStringSubmatch(part, -1) {
					name := strings.TrimLeft(m[1], "-")
					if name == "" || name == "h" {
						continue
					}
					if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(h) {
						t.Errorf("%s:%d: loom %s: flag %s is not in its help", f, i+1, cmd, m[1])
					}
				}
				checked++
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d loom command lines found in the documentation", checked)
	}
	// The README's first steps that need nothing downloaded.
	out, stderr, err := loom(t, "run", "Once upon a time", "-n", "8", "--temp", "0")
	if err != nil || strings.TrimSpace(out) == "" {
		t.Fatalf("loom run \"Once upon a time\": %v\n%s%s", err, out, stderr)
	}
}
