package jinja

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loom-inference/loom/internal/testmodels"
)

// fuzzLimits are small, so that each input finishes in milliseconds.
var fuzzLimits = Limits{MaxOutput: 1 << 16, MaxBytes: 1 << 22, MaxSteps: 200_000, MaxDepth: 16}

// FuzzRender renders hostile templates against hostile contexts (JSON
// decoded with DecodeJSON) under a budget: no panic, every failure a
// *Error or *LimitError, output within MaxOutput, spending within
// MaxSteps and MaxBytes, and an end in bounded time. Seeds: memory bombs,
// deep nesting, recursion, and the real templates of shared/chat with
// their conversations.
func FuzzRender(f *testing.F) {
	ctx := `{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi {{ 7*7 }}\r\n"}, {"role": "assistant", "content": "<think>x</think>ok", "tool_calls": [{"function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}], "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"}`
	for _, s := range []string{
		`{% set s='x' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}`,
		`{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|tojson }}`,
		`{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a == ns.a }}{{ ns.a|pprint }}`,
		`{% macro f(n) %}{{ f(n + 1) }}{{ caller() if caller }}{% endmacro %}{% call f(0) %}x{% endcall %}`,
		`{% for x in t recursive %}{{ loop(t) }}{% endfor %}`,
		strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300),
		"{{ 1" + strings.Repeat(" ~ 1", 300) + " }}",
		strings.Repeat("{% if true %}", 300) + strings.Repeat("{% endif %}", 300),
		`{{ ('{0}' * 100).format('x' * 1000) }}{{ '%*s' % (99999999, 'x') }}{{ 'a'|center(99999999) }}`,
		`{{ messages|map(attribute='content')|join(' ' * 1000)|wordwrap(3)|indent(100)|urlize|striptags|truncate(50) }}`,
		`{{ messages|groupby('role')|list }}{{ messages|dictsort }}{{ messages[0]|dictsort(by='value') }}{{ tools|tojson(indent=2, sort_keys=true) }}`,
		"a\r\n  {%- for m in messages if m.role != 'x' -%}\r{{ m.content|trim }}{% break %}{% endfor %}\r\n",
		`{% raw %}{{ x }}{% endraw %}{% filter upper %}{{ lipsum(2) }}{% endfilter %}{% set c = cycler(1, 2) %}{{ c.next() }}{{ joiner()() }}`,
	} {
		f.Add(s, []byte(ctx))
	}
	if dir, err := testmodels.SharedDir(); err == nil {
		tpls, _ := filepath.Glob(filepath.Join(dir, "models", "chat-templates", "*.jinja"))
		cases, _ := filepath.Glob(filepath.Join(dir, "chat", "cases", "*.json"))
		for i, p := range tpls {
			src, err1 := os.ReadFile(p)
			var c []byte
			var err2 error
			if len(cases) > 0 {
				c, err2 = os.ReadFile(cases[(i*7)%len(cases)])
			}
			if err1 == nil && err2 == nil {
				f.Add(string(src), c)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src string, ctxJSON []byte) {
		vars := NewDict()
		if v, err := DecodeJSON(ctxJSON); err == nil {
			if d, ok := v.(*Dict); ok {
				vars = d
			} else {
				vars.Set("x", v)
			}
		}
		tpl, err := Parse(src)
		if err != nil {
			checkErr(t, err)
			return
		}
		tpl.Limits = fuzzLimits
		var steps, bytes int
		statsHook = func(s, b int) { steps, bytes = s, b }
		defer func() { statsHook = nil }()
		start := time.Now()
		out, err := tpl.Render(vars, time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC))
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("render took %v", d)
		}
		if err != nil {
			checkErr(t, err)
			return
		}
		if len(out) > fuzzLimits.MaxOutput {
			t.Fatalf("output of %d bytes", len(out))
		}
		if steps > fuzzLimits.MaxSteps || bytes > fuzzLimits.MaxBytes {
			t.Fatalf("spent %d steps, %d bytes", steps, bytes)
		}
	})
}

func checkErr(t *testing.T, err error) {
	var e *Error
	var le *LimitError
	if !errors.As(err, &e) && !errors.As(err, &le) {
		t.Fatalf("error %T: %v", err, err)
	}
}
