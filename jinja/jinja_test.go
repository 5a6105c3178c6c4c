package jinja

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, src, ctx string) (string, error) {
	t.Helper()
	vars := NewDict()
	if ctx != "" {
		v, err := DecodeJSON([]byte(ctx))
		if err != nil {
			t.Fatal(err)
		}
		vars = v.(*Dict)
	}
	tpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	return tpl.Render(vars, time.Date(2024, 7, 26, 13, 5, 9, 0, time.UTC))
}

// TestLanguage pins Python Jinja2's output (with transformers' settings)
// for each construct chat templates use.
func TestLanguage(t *testing.T) {
	for _, c := range []struct{ src, ctx, want string }{
		// Printing follows Python's str().
		{`{{ none }}|{{ true }}|{{ 1.0 }}|{{ 1e20 }}|{{ 0.0001 }}|{{ 1e-05 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 / 2 }}|{{ -7 % 3 }}`, ``,
			`None|True|1.0|1e+20|0.0001|1e-05|3|-4|3.5|2`},
		{`{{ ['a', "it's", 1, none, {'k': [1.5]}] }}`, ``, `['a', "it's", 1, None, {'k': [1.5]}]`},
		{`{{ x }}`, `{"x": {"b": 1, "a": [true, null]}}`, `{'b': 1, 'a': [True, None]}`},
		{`{{ (1,) }}{{ (1, 'a') }}`, ``, `(1,)(1, 'a')`},
		// Undefined.
		{`[{{ missing }}]{{ missing is defined }}{{ missing|default('d') }}{{ missing|length }}`, ``, `[]Falsed0`},
		{`{% for x in missing %}x{% else %}empty{% endfor %}`, ``, `empty`},
		{`{{ d.nokey is defined }}{{ d['nokey'] is defined }}{{ d.get('nokey') is none }}`, `{"d": {}}`, `FalseFalseTrue`},
		// Whitespace control: trim_blocks, lstrip_blocks, - and +.
		{"a\n  {% if true %}\n  b\n  {% endif %}\nc", ``, "a\n  b\nc"},
		{"a  {%- if true -%}  b  {%- endif -%}  c", ``, "abc"},
		{"a\n  {%+ if true %}b{% endif %}", ``, "a\n  b"},
		{"{{ 'x' }}\n{{ 'y' }}", ``, "x\ny"},
		{"{# c #}\nx", ``, "x"},
		{"  {{- 'a' -}}  \n b", ``, "ab"},
		{"{% raw %}{{ 7*7 }}{% endraw %}", ``, "{{ 7*7 }}"},
		// Loops.
		{`{% for m in ms %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}`,
			`{"ms": [1, 2]}`, `10TrueFalse22;21FalseTrue21;`},
		{`{% for m in ms if m > 1 %}{{ m }}{{ loop.length }}{% endfor %}`, `{"ms": [1, 2, 3]}`, `2232`},
		{`{% for m in ms %}{% if m == 2 %}{% continue %}{% endif %}{% if m == 4 %}{% break %}{% endif %}{{ m }}{% endfor %}`,
			`{"ms": [1, 2, 3, 4, 5]}`, `13`},
		{`{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}`, `{"d": {"b": 1, "a": 2}}`, `b=1,a=2,`},
		{`{% for k, v in d|items %}{{ k }}={{ v }},{% endfor %}`, `{"d": {"b": 1, "a": 2}}`, `b=1,a=2,`},
		{`{% for x in ms %}{{ loop.previtem is defined }}{{ loop.nextitem|default('-') }}{% endfor %}`, `{"ms": [1, 2]}`, `False2True-`},
		{`{% for x in t recursive %}[{{ x.n }}{% if x.c %}{{ loop(x.c) }}{% endif %}]{% endfor %}`,
			`{"t": [{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3, "c": []}]}`, `[1[2]][3]`},
		// Scoping: set in a loop does not leak; namespace does.
		{`{% set x = 1 %}{% for i in [1, 2] %}{% set x = i %}{% endfor %}{{ x }}`, ``, `1`},
		{`{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}`, ``, `4`},
		{`{% if true %}{% set y = 5 %}{% endif %}{{ y }}`, ``, `5`},
		{`{% set a, b = [1, 2] %}{{ b }}{{ a }}`, ``, `21`},
		{`{% set s %}in {{ 1 + 1 }}{% endset %}[{{ s }}]`, ``, `[in 2]`},
		// Expressions.
		{`{{ 'a' ~ 1 ~ none }}{{ 'ab' in 'cabd' }}{{ 1 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 3 not in [1] }}`, ``, `a1NoneTrueTrueTrueTrue`},
		{`{{ 1 if false }}|{{ 'y' if 0 else 'n' }}|{{ 1 < 2 < 3 }}|{{ not 1 == 2 }}|{{ 2 ** 10 }}|{{ -2 ** 2 }}`, ``, `|n|True|True|1024|4`},
		{`{{ ms[1:] }}{{ ms[::-1] }}{{ ms[-1] }}{{ 'hello'[1:3] }}{{ ms[:-1] }}{{ ms[5] is defined }}`, `{"ms": [1, 2, 3]}`, `[2, 3][3, 2, 1]3el[1, 2]False`},
		{`{{ 0 or '' or 'x' }}{{ 1 and 2 }}{{ none and 1 }}`, ``, `x2None`},
		// String methods.
		{`{{ ' a b '.strip() }}|{{ 'a,b'.split(',') }}|{{ ' a  b '.split() }}|{{ 'ab'.startswith('a') }}|{{ 'x{}y{}'.format(1, 'z') }}|{{ 'A'.lower() }}{{ 'ab'.upper() }}|{{ 'xyx'.rstrip('x') }}`,
			``, `a b|['a', 'b']|['a', 'b']|True|x1yz|aAB|xy`},
		// Filters.
		{`{{ ' x '|trim }}|{{ [3, 1]|length }}|{{ [3, 1]|first }}|{{ [3, 1]|last }}|{{ ['a', 'b']|join(', ') }}|{{ 'aXa'|replace('a', 'b') }}|{{ 'x'|upper }}|{{ '3'|int + 1 }}|{{ 2.5|round }}|{{ 3.14159|round(2) }}`,
			``, `x|2|3|1|a, b|bXb|X|4|2.0|3.14`},
		{`{{ x|tojson }}`, `{"x": {"a": "é\n\"", "b": [1, 2.0, null, true], "c": {}}}`, `{"a": "é\n\"", "b": [1, 2.0, null, true], "c": {}}`},
		{`{{ x|tojson(indent=2) }}`, `{"x": {"a": [1, {"b": []}]}}`, "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ]\n}"},
		{`{{ ms|selectattr('r', 'equalto', 'u')|map(attribute='c')|list }}|{{ ms|rejectattr('r', 'equalto', 'u')|list|length }}|{{ ms|map(attribute='r')|unique|list }}`,
			`{"ms": [{"r": "u", "c": 1}, {"r": "a", "c": 2}, {"r": "u", "c": 3}]}`, `[1, 3]|1|['u', 'a']`},
		{`{{ [1, 0, 2]|select|list }}{{ [1, 2, 3]|reject('odd')|list }}{{ ['a', 'b']|map('upper')|join }}`, ``, `[1, 2][2]AB`},
		{"{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}", ``, "a\n  b\n\n  c|  a\n  b"},
		{`{{ [3, 1, 2]|sort }}{{ ['b', 'A']|sort }}{{ [1, 2]|sum }}{{ [1, 5]|max }}`, ``, `[1, 2, 3]['A', 'b']35`},
		{`{% filter upper %}a{{ 'b' }}{% endfilter %}`, ``, `AB`},
		// Tests.
		{`{{ 'x' is string }}{{ {} is mapping }}{{ [] is iterable }}{{ 1 is number }}{{ none is none }}{{ 3 is odd }}{{ 4 is divisibleby 2 }}{{ 1 is not string }}`, ``,
			`TrueTrueTrueTrueTrueTrueTrueTrue`},
		// Macros and call blocks.
		{`{% macro g(name, p='!') %}hi {{ name }}{{ p }}{% endmacro %}{{ g('x') }}|{{ g('y', p='?') }}`, ``, `hi x!|hi y?`},
		{`{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}in{% endcall %}`, ``, `<in>`},
		{`{% macro f() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, k=3) }}`, ``, `(1, 2){'k': 3}`},
		// Globals.
		{`{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ strftime_now('%d %b %Y %H:%M') }}{{ dict(a=1) }}`, ``, `[0, 1, 2][1, 3, 5]26 Jul 2024 13:05{'a': 1}`},
		{`{% generation %}g{% endgeneration %}`, ``, `g`},
		// Message text is data, never template code.
		{`{{ m }}`, `{"m": "{{ 7*7 }} {% if %} <|im_end|>"}`, `{{ 7*7 }} {% if %} <|im_end|>`},
	} {
		got, err := render(t, c.src, c.ctx)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s\n got %q\nwant %q", c.src, got, c.want)
		}
	}
}

// TestErrors: what Python raises, Loom refuses, naming the line.
func TestErrors(t *testing.T) {
	for _, c := range []struct{ src, ctx, msg string }{
		{`{{ 'a' + none }}`, ``, `can only concatenate str`},
		{`{{ 'a' + {} }}`, ``, `can only concatenate str`},
		{`{{ 1 + 'a' }}`, ``, `unsupported operand`},
		{`{% for t in tools %}{% endfor %}`, `{"tools": null}`, `not iterable`},
		{`{{ tools|length }}`, `{"tools": null}`, `has no len()`},
		{`{{ [1]|map('string')|tojson }}`, ``, `not JSON serializable`},
		{`{{ raise_exception('boom') }}`, ``, `boom`},
		{`{{ missing.attr }}`, ``, `'missing' is undefined`},
		{`{{ missing + 1 }}`, ``, `'missing' is undefined`},
		{`{{ ms.append(1) }}`, `{"ms": []}`, `unsafe`},
		{`{{ d.update({}) }}`, `{"d": {}}`, `unsafe`},
		{`{{ none < 1 }}`, ``, `not supported`},
		{`{{ 1 / 0 }}`, ``, `division by zero`},
		// Python's integers are unbounded, Loom's 64-bit: a result that
		// does not fit fails rather than wrapping around.
		{`{{ 9223372036854775807 + 1 }}`, ``, `integer overflow`},
		{`{{ -9223372036854775807 - 2 }}`, ``, `integer overflow`},
		{`{{ 4294967296 * 4294967296 }}`, ``, `integer overflow`},
		{`{{ 2 ** 63 }}`, ``, `integer overflow`},
		{`{{ 10 ** 100 }}`, ``, `integer overflow`},
		{`{{ -(-9223372036854775807 - 1) }}`, ``, `integer overflow`},
		{`{{ (-9223372036854775807 - 1) // -1 }}`, ``, `integer overflow`},
		{`{{ (-9223372036854775807 - 1)|abs }}`, ``, `integer overflow`},
		{`{{ [9223372036854775807, 1]|sum }}`, ``, `integer overflow`},
		{`{{ (-8) ** 0.5 }}`, ``, `complex`},
		{"line one\n{% if %}", ``, `line 2`},
		{"{% for x in y %}", ``, `endfor`},
		{"{{ 'unclosed }}", ``, `unclosed`},
		{"{% include 'x' %}", ``, `not available`},
		{"{% set x = (1 %}", ``, `expected`},
		{"{{ x is }}", ``, `expected a name`},
	} {
		_, err := render(t, c.src, c.ctx)
		if err == nil {
			t.Errorf("%s: rendered, want an error with %q", c.src, c.msg)
			continue
		}
		var je *Error
		if !errors.As(err, &je) {
			t.Errorf("%s: error %T is not a *jinja.Error", c.src, err)
		}
		if !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %q, want it to mention %q", c.src, err, c.msg)
		}
	}
}

// TestLimits: hostile templates fail fast with a *LimitError naming the
// limit (or, for range, the sandbox's own error).
func TestLimits(t *testing.T) {
	for _, c := range []struct{ name, src, limit string }{
		{"huge range", `{{ range(100000000)|length }}`, "Range too big"},
		{"nested loops", `{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(10) %}{% endfor %}{% endfor %}{% endfor %}`, "MaxSteps|MaxBytes"},
		{"recursion", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, "MaxDepth"},
		{"output bomb", `{% set s = 'xxxxxxxxxxxxxxxx' %}{% for i in range(20) %}{% set s = s ~ s %}{{ s }}{% endfor %}`, "MaxOutput|MaxBytes"},
		{"string bomb", `{{ 'x' * 100000000000 }}`, "MaxBytes"},
		{"deep nesting", strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000), "MaxNesting"},
		{"deep blocks", strings.Repeat("{% if true %}", 1000) + strings.Repeat("{% endif %}", 1000), "MaxNesting"},
	} {
		start := time.Now()
		src := c.src
		if !strings.Contains(src, "{") {
			src = "{{ " + src + " }}"
		}
		_, err := render(t, src, "")
		matched := false
		for _, want := range strings.Split(c.limit, "|") {
			matched = matched || err != nil && strings.Contains(err.Error(), want)
		}
		if !matched {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.limit)
		}
		if strings.HasPrefix(c.limit, "Max") && !errors.Is(err, ErrLimit) {
			t.Errorf("%s: %v is not an ErrLimit", c.name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s took %v", c.name, d)
		}
	}
}

func FuzzTemplate(f *testing.F) {
	for _, s := range []string{
		`{% for m in messages %}{{ m.role }}: {{ m.content|trim }}{% if not loop.last %}\n{% endif %}{% endfor %}`,
		`{%- set ns = namespace(a=1) -%}{{ ns.a ~ x[1:] ~ (1, 2)|string }}`,
		`{% macro f(a, b=2) %}{{ a * b }}{% endmacro %}{{ f(3) }}{% raw %}{{{% endraw %}`,
		`{{ x|tojson(indent=2) }}{{ 'a'.split('b') }}{{ range(3)|map('string')|join }}`,
	} {
		f.Add(s)
	}
	ctx, _ := DecodeJSON([]byte(`{"messages": [{"role": "user", "content": " hi "}], "x": "abc"}`))
	f.Fuzz(func(t *testing.T, src string) {
		tpl, err := Parse(src)
		if err != nil {
			return
		}
		tpl.Limits = Limits{MaxOutput: 1 << 16, MaxBytes: 1 << 22, MaxSteps: 200_000}
		_, _ = tpl.Render(ctx.(*Dict), time.Time{})
	})
}

// TestHostileValues: self-reference and overflowing sizes fail or print
// bounded, never crash.
func TestHostileValues(t *testing.T) {
	for _, src := range []string{
		`{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}{{ [ns, ns] }}{{ ns.me.me }}`,
		`{{ range(-9223372036854775807, 9223372036854775807)|length }}`,
		`{{ 'ab' * 9223372036854775807 }}`,
		`{{ [1] * 9223372036854775807 }}`,
		`{{ 'x'|indent(9223372036854775807) }}{{ 'x'|center(9223372036854775807) }}`,
		`{{ {'a': 1}|tojson(indent=1000000000) }}`,
	} {
		_, _ = render(t, src, "")
	}
}
