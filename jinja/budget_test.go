package jinja

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// bombs are templates that grow a value, the output or the work without
// bound; each must stop with a *LimitError.
var bombs = []struct{ name, src, limit string }{
	// Growing strings.
	{"concat ~ doubling (issue 25)", `{% set s='x' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}`, "MaxBytes"},
	{"concat + doubling", `{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`, "MaxBytes"},
	{"quadratic concat", `{% set ns = namespace(s='') %}{% for i in range(100000) %}{% set ns.s = ns.s ~ 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' %}{% endfor %}`, "MaxBytes"},
	{"str * n", `{{ ('x' * 100000000000)|length }}`, "MaxBytes"},
	{"n * str", `{{ (100000000000 * 'ab')|length }}`, "MaxBytes"},
	{"list * n", `{{ ([1, 2] * 100000000000)|length }}`, "MaxBytes"},
	{"tuple * n", `{{ ((1,) * 100000000000)|length }}`, "MaxBytes"},
	{"str * n doubling", `{% set s = 'x' %}{% for i in range(64) %}{% set s = s * 2 %}{% endfor %}`, "MaxBytes"},
	{"join separator", `{% set sep = 'x' * 1000000 %}{{ range(100000)|join(sep)|length }}`, "MaxBytes"},
	{"join method", `{% set s = 'x' * 1000000 %}{{ s.join(range(1000)|map('string'))|length }}`, "MaxBytes"},
	{"replace empty", `{% set s = 'x' * 100000 %}{{ s|replace('', s)|length }}`, "MaxBytes"},
	{"replace method", `{% set s = 'x' * 100000 %}{{ s.replace('x', s)|length }}`, "MaxBytes"},
	{"percent format", `{% set s = 'x' * 1000000 %}{% set ns = namespace(f='%s') %}{% for i in range(30) %}{% set ns.f = ns.f ~ '%s' %}{% endfor %}{% for i in range(100) %}{{ (ns.f|format(*([s] * 31)))|length }}{% endfor %}`, "MaxBytes"},
	{"percent width", `{{ ('%999999999999s' % 'x')|length }}`, "MaxBytes"},
	{"percent star precision", `{{ ('%.*d' % (1000000000000, 1))|length }}`, "MaxBytes"},
	{"percent float precision", `{{ ('%.*f' % (1000000000000, 1.5))|length }}`, "MaxBytes"},
	{"str.format repeat", `{% set s = 'x' * 1000000 %}{{ ('{0}' * 1000).format(s)|length }}`, "MaxBytes"},
	{"str.format width", `{{ '{:>999999999999}'.format('x')|length }}`, "MaxBytes"},
	{"center", `{{ 'x'|center(1000000000000)|length }}`, "MaxBytes"},
	{"center method", `{{ 'x'.center(1000000000000)|length }}`, "MaxBytes"},
	{"ljust zfill", `{{ 'x'.ljust(1000000000000)|length }}{{ '1'.zfill(1000000000000) }}`, "MaxBytes"},
	{"indent width", `{{ 'x\nx'|indent(1000000000000)|length }}`, "MaxBytes"},
	{"indent many lines", `{{ ('\n' * 1000000)|indent(1000, blank=true)|length }}`, "MaxBytes"},
	{"wordwrap wrapstring", `{{ ('x ' * 1000000)|wordwrap(1, wrapstring='y' * 1000)|length }}`, "MaxBytes|MaxSteps"},
	{"expandtabs", `{{ ('\t' * 1000)|string|attr('expandtabs')(1000000000)|length }}`, "MaxBytes"},
	{"tojson indent", `{{ [[1]]|tojson(indent=1000000000000)|length }}`, "MaxBytes"},
	{"tojson shared", `{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a|tojson|length }}`, "MaxBytes|MaxSteps"},
	{"repr shared", `{% set ns = namespace(a=['x']) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a|string|length }}`, "MaxBytes|MaxSteps"},
	{"pprint shared", `{% set ns = namespace(a=['x']) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a|pprint|length }}`, "MaxBytes|MaxSteps"},
	{"equal shared", `{% set ns = namespace(a=[1]) %}{% for i in range(60) %}{% set ns.a = [ns.a, ns.a] %}{% endfor %}{{ ns.a == ns.a + [] }}`, "MaxSteps"},
	{"replace doubling", `{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s|replace('x', 'xx') %}{% endfor %}`, "MaxBytes"},
	{"escape growth", `{% set ns = namespace(s='&') %}{% for i in range(64) %}{% set ns.s = ns.s|forceescape ~ ns.s|forceescape %}{% endfor %}`, "MaxBytes"},
	{"lipsum", `{{ lipsum(1000000000)|length }}`, "MaxBytes|MaxSteps"},
	// Growing lists and dicts.
	{"list append via +", `{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}{% endfor %}{{ ns.l|length }}`, "MaxBytes"},
	{"list doubling", `{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}`, "MaxBytes"},
	{"dict copies", `{% set ns = namespace(d={}) %}{% for i in range(100000) %}{% set ns.d = dict(ns.d, **{('k' ~ i): i}) %}{% endfor %}`, "MaxBytes"},
	{"namespace attributes", `{% set ns = namespace() %}{% for i in range(100000) %}{% for j in range(100) %}{% set ns.x = i %}{% endfor %}{% endfor %}`, "MaxSteps"},
	{"batch fill", `{{ [1]|batch(1000000000000, 0)|list|length }}`, "MaxBytes"},
	{"slice count", `{{ [1]|slice(1000000000000)|list|length }}`, "MaxBytes"},
	{"range lists", `{% for i in range(100000) %}{% set r = range(100000) %}{% endfor %}`, "MaxBytes|MaxSteps"},
	{"string to list", `{% set s = 'x' * 1000000 %}{% for i in range(1000) %}{% set l = s|list %}{% endfor %}`, "MaxBytes"},
	// Output.
	{"output", `{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}`, "MaxOutput"},
	{"output in macro", `{% macro m() %}{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}{% endmacro %}{{ m() }}`, "MaxOutput"},
	// Work.
	{"nested loops", `{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}`, "MaxSteps|MaxBytes"},
	{"scan a big string", `{% set s = 'x' * 4000000 %}{% for i in range(100000) %}{% if 'y' in s %}{% endif %}{{ s|length }}{% endfor %}`, "MaxSteps"},
	{"index a big string", `{% set s = 'é' * 1000000 %}{% for i in range(100000) %}{{ s[500000] }}{% endfor %}`, "MaxSteps"},
	{"in a big list", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% if -1 in l %}{% endif %}{% endfor %}`, "MaxSteps"},
	{"sort a big list", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% set s = l|sort %}{% endfor %}`, "MaxSteps|MaxBytes"},
	{"unique", `{{ range(100000)|map('string')|unique|list|length }}{% for i in range(100000) %}{% set u = range(1000)|unique|list %}{% endfor %}`, "MaxSteps|MaxBytes"},
	{"urlize parentheses", `{{ ('(' * 200000 ~ 'www.example.com' ~ ')' * 200000)|urlize|length }}{% for i in range(1000) %}{{ ('(' * 20000 ~ ')' * 20000)|urlize|length }}{% endfor %}`, "MaxSteps|MaxBytes|MaxOutput"},
	// Recursion.
	{"recursive macro", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, "MaxDepth"},
	{"macro fan-out", `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}`, "MaxSteps"},
	{"recursive caller", `{% macro m() %}{% call m() %}{{ caller() }}{% endcall %}{% endmacro %}{{ m() }}`, "MaxDepth"},
	{"recursive loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`, "MaxDepth"},
	{"deep value repr", `{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}`, "MaxNesting"},
	{"deep value tojson", `{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x|tojson }}`, "recursion depth"},
	{"deep value equal", `{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x == ns.x + [] }}`, "MaxNesting"},
	{"deep value sort", `{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ [ns.x, ns.x + []]|sort }}`, "MaxNesting"},
	// Parser nesting: every form that nests the tree.
	{"parens", strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000), "MaxNesting"},
	{"blocks", strings.Repeat("{% if true %}", 1000) + strings.Repeat("{% endif %}", 1000), "MaxNesting"},
	{"for blocks", strings.Repeat("{% for x in [1] %}", 1000) + strings.Repeat("{% endfor %}", 1000), "MaxNesting"},
	{"+ chain", "1" + strings.Repeat(" + 1", 200000), "MaxNesting"},
	{"~ chain", "'a'" + strings.Repeat(" ~ 'a'", 200000), "MaxNesting"},
	{"* chain", "1" + strings.Repeat(" * 1", 200000), "MaxNesting"},
	{"** chain", "1" + strings.Repeat(" ** 1", 200000), "MaxNesting"},
	{"and chain", "1" + strings.Repeat(" and 1", 200000), "MaxNesting"},
	{"or chain", "0" + strings.Repeat(" or 0", 200000), "MaxNesting"},
	{"filter chain", "1" + strings.Repeat("|string", 200000), "MaxNesting"},
	{"test chain", "1" + strings.Repeat(" is defined", 200000), "MaxNesting"},
	{"attribute chain", "x" + strings.Repeat(".a", 200000), "MaxNesting"},
	{"item chain", "x" + strings.Repeat("[0]", 200000), "MaxNesting"},
	{"call chain", "x" + strings.Repeat("()", 200000), "MaxNesting"},
	{"conditional chain", "1" + strings.Repeat(" if 1", 200000), "MaxNesting"},
	{"not chain", strings.Repeat("not ", 200000) + "1", "MaxNesting"},
	{"unary chain", strings.Repeat("- ", 200000) + "1", "MaxNesting"},
	{"list nesting", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), "MaxNesting"},
	{"dict nesting", strings.Repeat("{'a': ", 5000) + "1" + strings.Repeat("}", 5000), "MaxNesting"},
}

// TestBudget: every bomb stops with a *LimitError naming the limit, fast
// and without allocating much more than the budget allows.
func TestBudget(t *testing.T) {
	for _, c := range bombs {
		src := c.src
		if !strings.Contains(src, "{{") && !strings.Contains(src, "{%") {
			src = "{{ " + src + " }}"
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := renderLimited(src, bombLimits)
		d := time.Since(start)
		runtime.ReadMemStats(&after)
		matched := false
		for _, want := range strings.Split(c.limit, "|") {
			matched = matched || err != nil && strings.Contains(err.Error(), want)
		}
		if !matched {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.limit)
			continue
		}
		var le *LimitError
		if strings.HasPrefix(c.limit, "Max") && (!errors.Is(err, ErrLimit) || !errors.As(err, &le)) {
			t.Errorf("%s: %v (%T) is not a *LimitError", c.name, err, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Errorf("%s allocated %d MiB", c.name, alloc>>20)
		}
		if testing.Verbose() {
			t.Logf("%-30s %6.0f ms %5d MiB %v", c.name, d.Seconds()*1000, (after.TotalAlloc-before.TotalAlloc)>>20, err)
		}
		if d > 5*time.Second {
			t.Errorf("%s took %v", c.name, d)
		}
	}
}

// bombLimits scale the defaults down (the same code paths, less time).
var bombLimits = Limits{MaxOutput: 4 << 20, MaxBytes: 16 << 20, MaxSteps: 2_000_000}

func renderLimited(src string, lim Limits) (string, error) {
	tpl, err := Parse(src)
	if err != nil {
		return "", err
	}
	tpl.Limits = lim
	return tpl.Render(NewDict(), time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC))
}

// TestIssueBomb: issue 25's template, which ran out of memory at 4 GB,
// stops at the default limits.
func TestIssueBomb(t *testing.T) {
	start := time.Now()
	_, err := render(t, `{% set s='x' %}{% for i in range(40) %}{% set s = s ~ s %}{% endfor %}{{ s|length }}`, "")
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxBytes" || le.Max != defaultMaxBytes || le.Line != 1 {
		t.Fatalf("%v, want a MaxBytes *LimitError", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestBudgetLimits: the fields of Limits are what a render enforces, and
// the error says which.
func TestBudgetLimits(t *testing.T) {
	for _, c := range []struct {
		lim   Limits
		src   string
		limit string
	}{
		{Limits{MaxOutput: 10}, `{{ 'x' * 11 }}`, "MaxOutput"},
		{Limits{MaxBytes: 1000}, `{{ ('x' * 2000)|length }}`, "MaxBytes"},
		{Limits{MaxSteps: 1000}, `{% for i in range(2000) %}{% endfor %}`, "MaxSteps"},
		{Limits{MaxDepth: 3}, `{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}`, "MaxDepth"},
	} {
		tpl, err := Parse(c.src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tpl.Render(nil, time.Time{}); err != nil {
			t.Errorf("%s: with defaults: %v", c.src, err)
		}
		tpl.Limits = c.lim
		_, err = tpl.Render(nil, time.Time{})
		var le *LimitError
		if !errors.As(err, &le) || le.Limit != c.limit || !errors.Is(err, ErrLimit) {
			t.Errorf("%s: %v, want a *LimitError for %s", c.src, err, c.limit)
			continue
		}
		if !strings.Contains(err.Error(), c.limit) || le.Line != 1 {
			t.Errorf("%s: message %q, line %d", c.src, err, le.Line)
		}
	}
	// Just under each limit renders.
	tpl, _ := Parse(`{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(2) }}{{ 'x' * 10 }}`)
	tpl.Limits = Limits{MaxDepth: 3, MaxOutput: 10}
	if _, err := tpl.Render(nil, time.Time{}); err != nil {
		t.Errorf("under the limits: %v", err)
	}
}

// TestNestingJinja2Accepts: nesting well past what Python Jinja2 itself
// compiles (about 90 parentheses, 100 blocks) still parses and renders.
func TestNestingJinja2Accepts(t *testing.T) {
	for _, src := range []string{
		"{{ " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + " }}",
		strings.Repeat("{% if true %}", 100) + "x" + strings.Repeat("{% endif %}", 100),
		"{{ 1" + strings.Repeat(" + 1", 120) + " }}",
		"{{ 'a'" + strings.Repeat("|upper", 120) + " }}",
		"{% macro m(n) %}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}" + strings.Repeat("{% for x in [1] %}", 60) + "{{ m(40) }}" + strings.Repeat("{% endfor %}", 60),
	} {
		if _, err := render(t, src, ""); err != nil {
			t.Errorf("%.60s…: %v", src, err)
		}
	}
}
