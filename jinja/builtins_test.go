package jinja

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestJinja2Cases replays testdata/jinja2_cases.json: every built-in
// filter, test and global, str methods, formatting, line endings and
// whitespace control, each with what Python Jinja2 3.1 rendered under
// transformers' settings (testdata/jinja2_cases.py made the file). An
// error case must fail.
func TestJinja2Cases(t *testing.T) {
	b, err := os.ReadFile("testdata/jinja2_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Context json.RawMessage
		Cases   []struct {
			Name, Src   string
			Want, Error *string
		}
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	ctx, err := DecodeJSON(file.Context)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2024, 7, 26, 13, 5, 9, 0, time.UTC)
	for _, c := range file.Cases {
		got, err := renderWith(c.Src, ctx.(*Dict), now)
		switch {
		case c.Error != nil && err == nil:
			t.Errorf("%s: rendered %q, want an error (Python: %s)", c.Name, got, *c.Error)
		case c.Error == nil && err != nil:
			t.Errorf("%s: %v\nwant %q", c.Name, err, *c.Want)
		case c.Error == nil && got != *c.Want:
			t.Errorf("%s:\n got %q\nwant %q", c.Name, got, *c.Want)
		}
	}
}

func renderWith(src string, vars *Dict, now time.Time) (string, error) {
	tpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	return tpl.Render(vars, now)
}

// TestRandomBuiltins: lipsum and random are random in Jinja2 too; their
// shape is what can be pinned.
func TestRandomBuiltins(t *testing.T) {
	for range 20 {
		got, err := render(t, `{{ [1, 2, 3]|random }}|{{ 'xyz'|random }}|{{ lipsum(3, false, 5, 10) }}|{{ lipsum(2) }}`, "")
		if err != nil {
			t.Fatal(err)
		}
		p := strings.Split(got, "|")
		if !strings.Contains("123", p[0]) || len(p[0]) != 1 || !strings.Contains("xyz", p[1]) || len(p[1]) != 1 {
			t.Fatalf("random: %q", got)
		}
		paras := strings.Split(p[2], "\n\n")
		if len(paras) != 3 {
			t.Fatalf("lipsum(3, false): %q", p[2])
		}
		for _, para := range paras {
			if n := len(strings.Fields(para)); n < 5 || n >= 10 || !strings.HasSuffix(para, ".") || !strings.ContainsAny(para[:1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
				t.Fatalf("lipsum paragraph %q", para)
			}
		}
		if strings.Count(p[3], "<p>") != 2 || !strings.HasSuffix(p[3], "</p>") {
			t.Fatalf("lipsum(2): %q", p[3])
		}
	}
}
