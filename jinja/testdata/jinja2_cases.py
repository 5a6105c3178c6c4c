#!/usr/bin/env python3
"""Writes jinja2_cases.json: what Python Jinja2 renders for each case below,
set up as transformers' chat templates are (ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks, loopcontrols, its tojson, raise_exception and
strftime_now). TestJinja2Cases replays them. Regenerate with
    python3 jinja/testdata/jinja2_cases.py
(made with Jinja2 3.1.6, MarkupSafe 2.x/3.x, Python 3.11)."""
import datetime, json, os, sys
import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

NOW = datetime.datetime(2024, 7, 26, 13, 5, 9)

def env():
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    e.globals["strftime_now"] = lambda f: NOW.strftime(f)
    return e

D = {"d": {"b": 2, "A": 3, "c": 1}, "users": [
        {"name": "Bob", "age": 30, "city": "Paris", "tags": ["x"]},
        {"name": "alice", "age": 25, "city": "paris"},
        {"name": "Carol", "age": 30, "city": "Rome", "tags": []}],
     "nums": [3, 1, 2, 5, 4], "words": ["b", "A", "c", "a"], "s": "Hello World", "none": None,
     "html": "<a href=\"x\">T&amp;C</a> <!-- c --> <b>bold</b>", "n": 7, "f": 2.5,
     "text": "The quick brown fox jumps over the lazy dog, again and again, well-known state-of-the-art.",
     "nested": {"a": {"b": [10, 20]}}}

CASES = [
    # --- filters, one group each
    ("abs", "{{ -3|abs }} {{ 2.5|abs }} {{ -0.0|abs }} {{ true|abs }}"),
    ("abs-err", "{{ 'x'|abs }}"),
    ("attr", "{{ d|attr('items') is callable }} {{ d|attr('b') is defined }} {{ (users|first)|attr('name') is defined }}"),
    ("attr-ns", "{% set ns = namespace(x=1) %}{{ ns|attr('x') }}"),
    ("batch", "{{ nums|batch(2)|list }} {{ nums|batch(3, 'X')|list }} {{ [1,2]|batch(2, 0)|list }} {{ []|batch(2)|list }}"),
    ("batch-loop", "{% for row in nums|batch(2) %}{{ row|join(',') }};{% endfor %}"),
    ("capitalize", "{{ 'hELLO wORLD'|capitalize }} {{ ''|capitalize }} {{ 5|capitalize }}"),
    ("center", "[{{ 'ab'|center(7) }}][{{ 'abc'|center(8) }}][{{ 'abcdef'|center(3) }}][{{ 'x'|center }}]"),
    ("count-length", "{{ nums|count }} {{ 'héllo'|length }} {{ d|length }} {{ missing|length }}"),
    ("count-err", "{{ none|length }}"),
    ("default", "{{ missing|default('x') }} {{ none|default('x') }} {{ none|default('x', true) }} {{ ''|d('e', boolean=true) }} {{ 0|d(5) }}"),
    ("dictsort", "{{ d|dictsort }} {{ d|dictsort(true) }} {{ d|dictsort(by='value') }} {{ d|dictsort(reverse=true) }}"),
    ("dictsort-kw", "{{ d|dictsort(case_sensitive=false, by='value', reverse=true) }}"),
    ("dictsort-loop", "{% for k, v in d|dictsort %}{{ k }}={{ v }};{% endfor %}"),
    ("dictsort-bad", "{{ d|dictsort(by='x') }}"),
    ("dictsort-list", "{{ [1]|dictsort }}"),
    ("escape", "{{ '<a href=\"x\">&\\'</a>'|e }} {{ '<b>'|escape|escape }} {{ none|e }} {{ '<i>'|safe|e }}"),
    ("escaped", "{{ 'x' is escaped }} {{ ('x'|e) is escaped }} {{ ('x'|safe) is escaped }} {{ ('<'|e|forceescape) }}"),
    ("filesizeformat", "{{ 1|filesizeformat }} {{ 100|filesizeformat }} {{ 1000|filesizeformat }} {{ 1500000|filesizeformat }} {{ 1024|filesizeformat(true) }} {{ 3000000000000000000000000000|filesizeformat }} {{ '2048'|filesizeformat(binary=true) }}"),
    ("first-last", "{{ nums|first }} {{ nums|last }} {{ 'abc'|first }} {{ 'abc'|last }} {{ d|first }} {{ []|first is defined }}"),
    ("first-gen", "{% set g = nums|map('string') %}{{ g|first }}{{ g|list }}"),
    ("last-gen", "{{ nums|map('string')|last }}"),
    ("float", "{{ '3.5'|float }} {{ 'x'|float }} {{ 'x'|float(1.5) }} {{ 3|float }} {{ ' 1_0.5 '|float }} {{ 'inf'|float }} {{ none|float }} {{ '0x10'|float }}"),
    ("format", "{{ '%s-%d'|format('a', 3) }} {{ '%(x)s!'|format(x=1) }} {{ '%5.2f|%-4d|%04d|%x|%o|%e'|format(3.14159, 7, 42, 255, 8, 12345.678) }} {{ '100%%'|format }}"),
    ("format-err", "{{ '%s'|format(1, x=2) }}"),
    ("format-err2", "{{ '%s %s'|format(1) }}"),
    ("groupby", "{% for g in users|groupby('city') %}{{ g.grouper }}:{{ g.list|map(attribute='name')|join(',') }};{% endfor %}"),
    ("groupby-cs", "{% for city, us in users|groupby('city', case_sensitive=true) %}{{ city }}={{ us|length }};{% endfor %}"),
    ("groupby-tuple", "{{ users|groupby('age')|map('first')|list }} {{ (users|groupby('age'))[0]|length }}"),
    ("groupby-default", "{% for g in users|groupby('tags.0', default='none') %}{{ g.grouper }}:{{ g.list|length }};{% endfor %}"),
    ("indent", "{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb'|indent(1, blank=true) }}|{{ 'a\\nb'|indent('--') }}|{{ 'x\\n'|indent(2) }}|{{ 'a\\rb\\x0bc'|indent(1) }}"),
    ("int", "{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(-1) }} {{ '0x1A'|int(0, 16) }} {{ '1_000'|int }} {{ 3.9|int }} {{ true|int }} {{ '  7  '|int }} {{ '0b101'|int(base=0) }} {{ none|int }}"),
    ("items", "{{ d|items|list }} {% for k, v in missing|items %}x{% endfor %}"),
    ("items-err", "{{ [1]|items|list }}"),
    ("join", "{{ nums|join }} {{ nums|join('-') }} {{ users|join(', ', attribute='name') }} {{ [1, none, 'a']|join('|') }} {{ [[1], {'a': 1}]|join }}"),
    ("list", "{{ 'abc'|list }} {{ d|list }} {{ missing|list }} {{ (1, 2)|list }}"),
    ("lower-upper", "{{ 'ÀbC'|lower }} {{ 'àbc'|upper }} {{ none|upper }}"),
    ("map", "{{ users|map(attribute='name')|list }} {{ nums|map('string')|join }} {{ users|map(attribute='tags.0', default='-')|list }} {{ none|map('upper')|list }} {{ ['a','b']|map('replace', 'a', 'z')|list }}"),
    ("map-kw", "{{ [1.234, 2.567]|map('round', precision=1)|list }} {{ ['x']|map('default')|list }}"),
    ("map-attr-err", "{{ users|map(attribute='name', x=1)|list }}"),
    ("min-max", "{{ nums|min }} {{ nums|max }} {{ words|min }} {{ words|max }} {{ words|max(case_sensitive=true) }} {{ users|max(attribute='age') }} {{ users|min(attribute='name') }} {{ []|max is defined }}"),
    ("pprint", "{{ d|pprint }} {{ [1, 'a', none, (1,)]|pprint }} {{ 'x'|pprint }}"),
    ("pprint-wide", "{{ users|pprint }}"),
    ("pprint-str", "{{ text|pprint }}"),
    ("pprint-nested", "{{ {'k': text, 'l': range(30)|list, 'z': {'y': 1, 'x': [1, 2]}}|pprint }}"),
    ("reject-select", "{{ nums|select('odd')|list }} {{ nums|reject('odd')|list }} {{ [0, 1, '', 'a', none]|select|list }} {{ nums|select('>', 2)|list }} {{ nums|select('in', [1, 5])|list }} {{ nums|reject('divisibleby', 2)|list }}"),
    ("selectattr", "{{ users|selectattr('tags')|map(attribute='name')|list }} {{ users|rejectattr('tags')|map(attribute='name')|list }} {{ users|selectattr('age', 'equalto', 30)|map(attribute='name')|list }} {{ users|selectattr('tags', 'defined')|list|length }}"),
    ("select-bad-test", "{{ nums|select('nosuch')|list }}"),
    ("replace", "{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }} {{ 'abc'|replace('', '-') }} {{ 123|replace(2, 9) }} {{ 'aXa'|replace('a', 'b', count=1) }}"),
    ("reverse", "{{ 'abc'|reverse }} {{ nums|reverse|list }} {{ (1, 2)|reverse|list }} {{ nums|map('string')|reverse }} {{ d|reverse|list }}"),
    ("round", "{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} {{ 5|round }} {{ 15|round(-1) }} {{ 25|round(-1) }} {{ 1234.5|round(-2) }} {{ -2.5|round }} {{ 0.125|round(2) }}"),
    ("round-bad", "{{ 2.5|round(method='up') }}"),
    ("safe", "{{ '<b>'|safe }} {{ ('<b>'|safe) ~ '<i>' }} {{ ('<b>'|safe) + '<i>' }} {{ '<i>' + ('<b>'|safe) }} {{ none|safe }}"),
    ("slice", "{{ nums|slice(2)|list }} {{ nums|slice(3, 0)|list }} {{ [1,2,3,4,5,6,7]|slice(3)|list }} {{ []|slice(2)|list }} {{ [1]|slice(3, 'x')|list }}"),
    ("slice-zero", "{{ nums|slice(0)|list }}"),
    ("sort", "{{ nums|sort }} {{ words|sort }} {{ words|sort(case_sensitive=true) }} {{ nums|sort(true) }} {{ users|sort(attribute='age')|map(attribute='name')|list }} {{ users|sort(attribute='age,name')|map(attribute='name')|list }} {{ users|sort(attribute='city', reverse=true)|map(attribute='name')|list }}"),
    ("sort-nested", "{{ [{'a': {'b': 2}}, {'a': {'b': 1}}]|sort(attribute='a.b') }} {{ [[2, 'b'], [1, 'z'], [2, 'a']]|sort }} {{ [[1, 2], [0, 5]]|sort(attribute='1') }}"),
    ("sort-err", "{{ [1, 'a']|sort }}"),
    ("string", "{{ 1|string ~ none|string ~ [1]|string ~ {'a': none}|string }} {{ missing|string == '' }}"),
    ("striptags", "{{ html|striptags }}|{{ '  a\\n\\n b  '|striptags }}|{{ '&lt;x&gt; &amp;amp; &eacute;'|striptags }}|{{ '<unclosed'|striptags }}"),
    ("sum", "{{ nums|sum }} {{ users|sum(attribute='age') }} {{ nums|sum(start=10) }} {{ [[1], [2]]|sum(start=[]) }} {{ [0.5, 1]|sum }} {{ []|sum }}"),
    ("sum-str", "{{ ['a', 'b']|sum }}"),
    ("title", "{{ 'hello-world foo(bar) [x]y <z>w it\\'s'|title }} {{ 'HELLO wORLD'|title }}"),
    ("title-method", "{{ 'hello-world it\\'s'.title() }}"),
    ("tojson", "{{ d|tojson }} {{ d|tojson(indent=2) }} {{ [1, 'é', none, true, 1.5]|tojson }} {{ 'é'|tojson(true) }} {{ d|tojson(sort_keys=true) }} {{ d|tojson(separators=(',', ':')) }} {{ [1, [2]]|tojson(indent='\\t') }} {{ {}|tojson(indent=2) }} {{ d|tojson(false, 0) }} {{ '\\u2028\\x7f\\x01'|tojson }} {{ '\\U0001F600'|tojson(ensure_ascii=true) }}"),
    ("tojson-keys", "{{ {1: 'a', none: 'b', true: 'c', 1.5: 'd'}|tojson }}"),
    ("tojson-err", "{{ missing|tojson }}"),
    ("tojson-gen", "{{ nums|select|tojson }}"),
    ("tojson-sortmix", "{{ {1: 'a', 'b': 2}|tojson(sort_keys=true) }}"),
    ("trim", "[{{ '  a b \\n'|trim }}][{{ 'xxaxx'|trim('x') }}][{{ '\\x1c a \\u3000'|trim }}]"),
    ("truncate", "{{ text|truncate(20) }}|{{ text|truncate(20, true) }}|{{ text|truncate(20, end='…') }}|{{ 'short'|truncate(3) }}|{{ 'abcdefghij'|truncate(6, leeway=0) }}|{{ 'abc def ghi'|truncate(9, leeway=0) }}"),
    ("truncate-err", "{{ 'abcdef'|truncate(2) }}"),
    ("unique", "{{ ['a', 'A', 'b', 'a']|unique|list }} {{ ['a', 'A', 'b']|unique(case_sensitive=true)|list }} {{ users|unique(attribute='city')|map(attribute='name')|list }} {{ [1, 1.0, true, 2]|unique|list }}"),
    ("unique-err", "{{ [[1], [1]]|unique|list }}"),
    ("urlencode", "{{ 'a b/c?d=é&'|urlencode }} {{ {'a': 'x y', 'b': '/&'}|urlencode }} {{ [('k', 1), ('j', 'ü')]|urlencode }} {{ 42|urlencode }}"),
    ("urlize", "{{ 'see http://example.com/a?b=1, or www.example.org. mail me@example.com and (https://x.io/p) <http://a.bc> ftp://no'|urlize }}"),
    ("urlize-opts", "{{ 'go to https://example.com/very/long/path now'|urlize(15, true, '_blank') }} {{ 'x mailto:a@b.cd y'|urlize }} {{ 'tel:123 go'|urlize(extra_schemes=['tel:']) }} {{ 'a.example.com b.com'|urlize(rel='me') }}"),
    ("wordcount", "{{ text|wordcount }} {{ 'it\\'s a_b 1,2 é!'|wordcount }} {{ ''|wordcount }}"),
    ("wordwrap", "{{ text|wordwrap(20) }}|{{ text|wordwrap(30, wrapstring='<br>') }}|{{ 'supercalifragilisticexpialidocious word'|wordwrap(10) }}|{{ 'supercalifragilisticexpialidocious word'|wordwrap(10, false) }}|{{ 'a-very-long-hyphenated-word here'|wordwrap(8) }}|{{ 'x--y z'|wordwrap(3) }}|{{ 'l1 aaa bbb\\nl2 ccc'|wordwrap(5) }}|{{ 'a-b-c-d-e'|wordwrap(4, break_on_hyphens=false) }}"),
    ("xmlattr", "<p{{ {'class': 'a b', 'id': none, 'data-x': '<\"&>', 'n': 1}|xmlattr }}> <p{{ {'a': 1}|xmlattr(false) }}> [{{ {}|xmlattr }}]"),
    ("xmlattr-err", "{{ {'a b': 1}|xmlattr }}"),
    ("forceescape", "{{ '<x>'|forceescape }} {{ ('<x>'|e)|forceescape }}"),
    ("random", "{{ [7]|random }} {{ 'q'|random }} {{ []|random is defined }}"),
    ("no-filter", "{{ 1|nosuchfilter }}"),
    # --- tests
    ("tests-types", "{{ true is boolean }}{{ 1 is boolean }}{{ 1 is integer }}{{ true is integer }}{{ 1.0 is float }}{{ 1 is number }}{{ true is number }}{{ 'a' is number }}{{ 'a' is string }}{{ d is mapping }}{{ nums is mapping }}"),
    ("tests-seq", "{{ nums is sequence }}{{ 'a' is sequence }}{{ d is sequence }}{{ 1 is sequence }}{{ nums is iterable }}{{ 1 is iterable }}{{ d is iterable }}{{ (nums|map('string')) is iterable }}{{ (nums|map('string')) is sequence }}{{ missing is iterable }}"),
    ("tests-call", "{{ range is callable }}{{ 1 is callable }}{{ d.items is callable }}{{ joiner() is callable }}{{ cycler(1) is callable }}{% macro m() %}{% endmacro %}{{ m is callable }}"),
    ("tests-misc", "{{ none is none }}{{ missing is defined }}{{ missing is undefined }}{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 is false }}{{ 3 is odd }}{{ 3 is even }}{{ 3.0 is odd }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}"),
    ("tests-case", "{{ 'abc' is lower }}{{ 'aBc' is lower }}{{ 'ABC' is upper }}{{ '123' is lower }}{{ '123' is upper }}{{ 'A1' is upper }}"),
    ("tests-cmp", "{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 1 is ne 2 }}{{ 1 is lt 2 }}{{ 1 is lessthan 0 }}{{ 2 is le 2 }}{{ 3 is gt 2 }}{{ 3 is greaterthan 3 }}{{ 3 is ge 3 }}"),
    ("tests-cmp-symbols", "{{ nums|select('==', 1)|list }}{{ nums|select('!=', 1)|list }}{{ nums|select('<', 3)|list }}{{ nums|select('<=', 3)|list }}{{ nums|select('>', 3)|list }}{{ nums|select('>=', 3)|list }}"),
    ("tests-symbol-syntax", "{{ 1 is == 1 }}"),
    ("tests-in-sameas", "{{ 1 is in [1, 2] }}{{ 'a' is in 'cat' }}{{ 'k' is in {'k': 1} }}{{ none is sameas none }}{{ 1 is sameas 1 }}{{ nums is sameas nums }}{{ [] is sameas [] }}{{ true is sameas 1 }}"),
    ("tests-filter-test", "{{ 'upper' is filter }}{{ 'dictsort' is filter }}{{ 'nope' is filter }}{{ 'odd' is test }}{{ 'sameas' is test }}{{ 'upper' is test }}"),
    ("no-test", "{{ 1 is nosuchtest }}"),
    ("divisibleby-zero", "{{ 3 is divisibleby 0 }}"),
    # --- globals
    ("range", "{{ range(5)|list }} {{ range(2, 8, 3)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }} {{ range(3)|length }}"),
    ("range-too-big", "{{ range(100001)|length }}"),
    ("range-float", "{{ range(1.5)|list }}"),
    ("dict", "{{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }} {{ dict([('k', 'v')]) }} {{ dict() }}"),
    ("cycler", "{% set c = cycler('odd', 'even') %}{{ c.next() }}{{ c.next() }}{{ c.current }}{{ c.next() }}{% set _ = c.reset() %}{{ c.next() }}"),
    ("joiner", "{% set j = joiner(' | ') %}{% for x in nums %}{{ j() }}{{ x }}{% endfor %} {% set k = joiner() %}{{ k() }}{{ k() }}{{ k() }}"),
    ("namespace", "{% set ns = namespace(a=1, b=[1]) %}{% set ns.a = ns.a + 1 %}{% set ns.c = 'x' %}{{ ns.a }}{{ ns.b }}{{ ns.c }}{{ ns.missing is defined }} {{ ns }}"),
    ("namespace-dict", "{% set ns = namespace({'a': 5}, b=6) %}{{ ns.a }}{{ ns.b }}"),
    ("namespace-self", "{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns }}"),
    ("lipsum-type", "{{ lipsum() is string }}{{ lipsum(2, false).count('\\n\\n') }}{{ lipsum(1)[:3] }}"),
    # --- str methods
    ("str-methods", "{{ ' x '.strip() }}|{{ 'a-b-c'.split('-', 1) }}|{{ 'a-b-c'.rsplit('-', 1) }}|{{ '  a  b  c  '.split(None, 1) }}|{{ '  a  b  c  '.rsplit(None, 1) }}|{{ 'a\\r\\nb\\nc'.splitlines() }}|{{ 'a\\nb\\n'.splitlines(true) }}|{{ 'abcabc'.find('c') }}|{{ 'abcabc'.rfind('c') }}|{{ 'abcabc'.count('bc') }}|{{ 'héllo'.index('l') }}|{{ 'abc'.find('c', 1, 2) }}"),
    ("str-methods2", "{{ 'ab'.center(6, '*') }}|{{ 'ab'.ljust(4, '.') }}|{{ 'ab'.rjust(4) }}|{{ '-42'.zfill(6) }}|{{ 'a,b'.partition(',') }}|{{ 'a,b,c'.rpartition(',') }}|{{ 'prefix-x'.removeprefix('prefix-') }}|{{ 'Hello'.swapcase() }}|{{ 'x'.join(['1', '2']) }}|{{ 'abc'.startswith(('x', 'a')) }}|{{ 'abc'.endswith('c', 0, 2) }}|{{ 'a\\tb'.expandtabs(4) }}"),
    ("str-is", "{{ '123'.isdigit() }}{{ 'abc'.isalpha() }}{{ 'a1'.isalnum() }}{{ ' \\t'.isspace() }}{{ 'Ab'.isupper() }}{{ 'ab1'.islower() }}{{ 'Hello World'.istitle() }}{{ ''.isdigit() }}{{ 'x_1'.isidentifier() }}"),
    ("str-format", "{{ '{} {}'.format(1, 'a') }}|{{ '{1}{0}'.format('a', 'b') }}|{{ '{x}-{y!r}'.format(x=1, y='q') }}|{{ '{:>5}|{:<5}|{:^5}|{:*^7}'.format('a', 'b', 'c', 'd') }}|{{ '{:.2f} {:5d} {:05.1f} {:x} {:#b} {:,} {:e} {:%}'.format(3.14159, 42, 2.5, 255, 5, 1234567, 1234.5, 0.25) }}|{{ '{0[a]} {0[b][1]}'.format({'a': 1, 'b': [1, 2]}) }}|{{ '{:g} {:g} {:g}'.format(1e20, 0.0001, 100.0) }}|{{ '{:+d} {: d}'.format(3, 3) }}|{{ '{{}}'.format() }}"),
    ("str-format-err", "{{ '{} {}'.format(1) }}"),
    ("str-mod", "{{ '%s and %r' % ('a', 'b') }}|{{ '%d%%' % 50 }}|{{ '%.3s|%5s|%-5s|' % ('abcdef', 'x', 'y') }}|{{ '%s' % [1, 2] }}|{{ '%(a)s %(b)d' % {'a': 'x', 'b': 2} }}|{{ '%c%c' % (65, 'b') }}|{{ '%+.1e' % 12345.6789 }}|{{ '%g|%g|%G' % (0.00001, 123456789, 1e-10) }}|{{ 'abc' % () }}|{{ '%#x %#o' % (255, 8) }}"),
    ("str-mod-err", "{{ '%s %s' % ('a',) }}"),
    ("str-mod-err2", "{{ 'abc' % 5 }}"),
    ("list-methods", "{{ nums.index(5) }} {{ [1, 2, 1].count(1) }} {{ nums.copy() }} {{ d.copy() }} {{ d.get('b') }} {{ d.get('z', 0) }} {{ d.keys()|list }} {{ d.values()|list }}"),
    ("list-append", "{{ nums.append(1) }}"),
    # --- expressions and printing
    ("expr-misc", "{{ 7 % -3 }} {{ -7.5 % 2 }} {{ 7.5 // 2 }} {{ 2 ** -1 }} {{ (1, 2) + (3,) }} {{ (1,) * 3 }} {{ [1] * 2 }} {{ 'ab' * 3 }} {{ 3 * 'x' }} {{ +true }} {{ -true }} {{ 1 == 1.0 }} {{ {'a': 1} == {'a': 1} }} {{ [1, [2]] < [1, [3]] }}"),
    ("print-floats", "{{ 1e16 }} {{ 1.5e-7 }} {{ 123456789.123 }} {{ 0.1 + 0.2 }} {{ -0.0 }} {{ 1e300 * 1e10 }}"),
    ("print-repr", "{{ ['it\\'s', \"q\\\"\", 'both\\'\"', '\\n\\t\\x00\\u00e9\\u200b'] }} {{ {'k': (1,), 2: none} }}"),
    ("loop-vars", "{% for x in nums %}{{ loop.cycle('a', 'b') }}{{ loop.changed(x > 2) }}{{ loop.revindex0 }}{% if loop.previtem is defined %}<{{ loop.previtem }}{% endif %};{% endfor %}"),
    ("break-outside", "{% break %}"),
    ("break-macro", "{% macro m() %}{% break %}{% endmacro %}{% for x in [1] %}{{ m() }}{% endfor %}"),
    ("break-setblock", "{% for x in [1, 2, 3] %}{% filter upper %}a{% if x == 2 %}{% break %}{% endif %}{% endfilter %}{{ x }}{% endfor %}"),
    ("unpack-err", "{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
    ("macro-caller", "{% macro list(items) %}<ul>{% for i in items %}<li>{{ caller(i) }}</li>{% endfor %}</ul>{% endmacro %}{% call(item) list(nums[:2]) %}[{{ item }}]{% endcall %}"),
    ("recursive-loop", "{% for x in [{'n': 1, 'c': [{'n': 2, 'c': [{'n': 3, 'c': []}]}]}] recursive %}{{ x.n }}@{{ loop.depth }}{% if x.c %}({{ loop(x.c) }}){% endif %}{% endfor %}"),
    # --- Python's full Unicode case mappings and character classes
    ("case-full", "{{ 'straße ﬁx ŉ'.upper() }}|{{ 'İstanbul'.lower() }}|{{ 'straße ﬁx'.title() }}|{{ 'ß'.capitalize() }}|{{ 'Straße'.swapcase() }}|{{ 'Straße ﬁx'.casefold() }}|{{ 'ǅ'.swapcase() }}"),
    ("case-sigma", "{{ 'ΟΔΟΣ ΟΔΟΣ.'.lower() }}|{{ 'Σ'.lower() }}|{{ 'ΑΣ΄Β'.lower() }}|{{ 'ΣΑΣ'|lower }}|{{ 'ΣΑΣ ΣΑΣ'|title }}|{{ 'ΣΑΣ'.title() }}|{{ 'ΑΣ'.capitalize() }}|{{ 'ΑΣ'.swapcase() }}"),
    ("case-filters", "{{ 'straße'|upper }}|{{ 'İ'|lower }}|{{ 'ßtraße-ﬁx'|title }}|{{ 'ßx'|capitalize }}|{{ ['b', 'İ', 'a']|sort|list }}"),
    ("str-is-unicode", "{{ '²³'.isdigit() }}{{ '²'.isdecimal() }}{{ '一二三'.isnumeric() }}{{ 'Ⅻ'.isupper() }}{{ 'ª'.islower() }}{{ 'Ⅻ Ⅻ'.istitle() }}{{ '\u200b'.isprintable() }}{{ '\u00ad'.isprintable() }}{{ 'é'.isprintable() }}{{ '℘x'.isidentifier() }}{{ 'ͺ'.isidentifier() }}{{ 'a·'.isidentifier() }}"),
    ("repr-unprintable", "{{ ['a\u200bb', 'c\u00add', '\u2028', '\ue000', 'é\u0301', '\U0001f600'] }}"),
    ("macro-varargs", "{% macro m(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 3, 4, x=5) }}|{{ m(1) }}|{% macro n() %}{{ varargs|length }}{{ varargs[0] }}{% endmacro %}{{ n(7, 8) }}"),
    ("int-big-ok", "{{ 2 ** 62 }}|{{ 9223372036854775807 - 1 }}|{{ -9223372036854775807 - 1 }}|{{ (-2) ** 63 }}|{{ -3037000499 * 3037000499 }}|{{ 10 ** 18 }}"),
    # --- line endings and whitespace control
    ("crlf-text", "a\r\nb\r\n"),
    ("cr-text", "a\rb\r\r"),
    ("crlf-blocks", "x\r\n  {% if true %}\r\n  y\r\n  {% endif %}\r\nz\r\n"),
    ("crlf-string", "{{ 'a\r\nb' }}|{{ 'c\\r\\nd' }}"),
    ("crlf-comment", "{# c #}\r\nx\r\n{# d #}\ry"),
    ("crlf-raw", "{% raw %}\r\na\r\n{% endraw %}\r\nb"),
    ("crlf-strip", "a  \r\n  {%- if true -%}  \r\n b \r\n {%- endif %}\r\nc"),
    ("trailing-newline", "a\n"),
    ("trailing-newlines", "a\n\n"),
    ("lstrip-unicode-space", "a\n\u00a0\u3000{% if true %}b{% endif %}"),
    ("lstrip-var", "a\n  {{ 'b' }}\n  {# c #}\nd"),
    ("raw-newline", "{% raw %}\nx{% endraw %}\ny"),
    ("plus-marker", "a\n  {%+ if true %}b{% endif +%}\nc"),
    ("rstrip-x1c", "a\x1c{%- if true %}b{% endif %}"),
]

def main():
    e = env()
    out = []
    for name, src in CASES:
        case = {"name": name, "src": src, "ctx": D}
        try:
            case["want"] = e.from_string(src).render(**D)
        except Exception as ex:
            case["error"] = type(ex).__name__ + ": " + str(ex)
        del case["ctx"]
        out.append(case)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jinja2_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"jinja2": jinja2.__version__, "context": D, "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(out)} cases -> {path}", file=sys.stderr)

if __name__ == "__main__":
    main()
