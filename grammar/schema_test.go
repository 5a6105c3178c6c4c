package grammar

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSchemaVerdicts: schema features beyond the shared cases, each with
// strings it must accept and refuse.
func TestSchemaVerdicts(t *testing.T) {
	cases := []struct {
		schema         string
		accept, reject []string
	}{
		{`{"type":"string","format":"date"}`,
			[]string{`"2024-02-29"`, `"2000-02-29"`, `"2023-04-30"`, `"1999-12-31"`, `"0000-02-29"`},
			[]string{`"2023-02-29"`, `"1900-02-29"`, `"2023-04-31"`, `"2023-13-01"`, `"2023-00-10"`, `"2023-01-00"`}},
		{`{"type":"string","format":"time"}`, []string{`"23:59:59Z"`, `"00:00:00.123+05:30"`}, []string{`"24:00:00Z"`, `"12:00:00"`}},
		{`{"type":"string","format":"date-time"}`, []string{`"2024-01-02T03:04:05Z"`}, []string{`"2024-01-02 03:04:05Z"`}},
		{`{"type":"string","format":"uuid"}`, []string{`"123e4567-e89b-12d3-a456-426614174000"`}, []string{`"123e4567e89b12d3a456426614174000"`}},
		// A surrogate pair is one character (one code point), a lone surrogate none.
		{`{"type":"string","maxLength":2}`, []string{`"ab"`, `"\u00e9x"`, `"\n"`, `"\ud83d\ude00"`, `"\ud83d\ude00x"`}, []string{`"abc"`, `"\ud83d\ude00xy"`, `"\ud800"`, `"\ude00"`}},
		{`{"type":"string","pattern":"^\\d{3}-[A-Z]{2}$"}`, []string{`"123-AB"`}, []string{`"12-AB"`, `"123-ab"`}},
		{`{"type":"string","pattern":"ab"}`, []string{`"xxabyy"`, `"ab"`}, []string{`"a b"`}}, // unanchored: contains
		{`{"type":"string","pattern":"^a.c$"}`, []string{`"abc"`, `"a c"`}, []string{`"a\"c"`, `"ac"`}},
		{`{"type":"string","pattern":"^(?:x|yz)+$"}`, []string{`"xyzx"`}, []string{`"xy"`}},
		{`{"type":"string","pattern":"^q\"$"}`, []string{`"q\""`}, []string{`"q""`}},
		{`{"type":["string","null"],"maxLength":1}`, []string{`"a"`, `null`}, []string{`"ab"`}},
		{`{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]}`, []string{`[1, "a"]`}, []string{`[1]`, `["a", 1]`}},
		{`{"type":"array","minItems":1,"maxItems":2}`, []string{`[1]`, `[{}, "x"]`}, []string{`[]`, `[1,2,3]`}},
		{`{"$defs":{"node":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["next"]}},"$ref":"#/$defs/node"}`,
			[]string{`{"next": null}`, `{"next": {"next": null}}`}, []string{`{}`, `{"next": 1}`}},
		{`{"allOf":[{"properties":{"a":{"type":"integer"}}},{"properties":{"b":{"type":"boolean"}}}]}`, []string{`{"a": 1, "b": true}`}, []string{`{"a": 1}`}},
		{`{"type":"object","additionalProperties":{"type":"integer"}}`, []string{`{}`, `{"x": 1, "y": 2}`}, []string{`{"x": "1"}`}},
		{`{"type":"integer","minimum":-5,"exclusiveMaximum":3}`, []string{`-5`, `0`, `2`}, []string{`-6`, `3`, `01`}},
		{`true`, []string{`1`, `"x"`, `[]`}, []string{`x`}},
	}
	for _, c := range cases {
		g, err := FromSchema([]byte(c.schema))
		if err != nil {
			t.Errorf("%s: %v", c.schema, err)
			continue
		}
		for _, s := range c.accept {
			if !g.Match(s) {
				t.Errorf("%s: refused %s", c.schema, s)
			}
		}
		for _, s := range c.reject {
			if g.Match(s) {
				t.Errorf("%s: accepted %s", c.schema, s)
			}
		}
	}
}

// TestSchemaErrors: what cannot be enforced, and hostile schemas, give
// clear errors (naming the place) in bounded time, never a looser grammar.
func TestSchemaErrors(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 200) + `{}` + strings.Repeat(`}`, 200)
	cases := []struct{ schema, want string }{
		{`{"type":"number","minimum":0}`, `keyword "minimum"`},
		{`{"type":"array","items":{},"uniqueItems":true}`, `keyword "uniqueItems"`},
		{`{"type":"string","format":"email"}`, `format "email"`},
		{`{"type":"string","pattern":"^(?=a)b$"}`, `lookaround`},
		{`{"type":"string","pattern":"^(a)\\1$"}`, `escape \1`},
		{`{"not":{"type":"string"}}`, `unrecognized schema`},
		{`{"$ref":"#/$defs/missing"}`, `does not resolve`},
		{`{"$ref":"https://example.com/s.json"}`, `only local references`},
		{`{"$ref":"#"}`, `left recursion`},
		{`{"type":"integer","minimum":10,"maximum":5}`, `empty`},
		{`{"type":"string","maxLength":1e9}`, `maxLength`},
		{`{"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false}`, `required property "b"`},
		{`{"type":"stringy"}`, `unknown type`},
		{`{"type":"string"`, `unexpected end`},
		{deep, `nested deeper`},
	}
	for _, c := range cases {
		t0 := time.Now()
		_, err := FromSchema([]byte(c.schema))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.60s: error %v, want it to mention %q", c.schema, err, c.want)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%.60s: took %v", c.schema, d)
		}
	}
	// Lenient mode ignores what it cannot enforce, with a warning.
	_, warns, err := ConvertSchema([]byte(`{"type":"number","minimum":0}`), SchemaOptions{Lenient: true})
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "minimum") {
		t.Errorf("lenient: %v %q", err, warns)
	}
}

// TestGrammarHostile: hostile grammars are refused or bounded.
func TestGrammarHostile(t *testing.T) {
	cases := []struct{ src, want string }{
		{`root ::= root "a"`, "left recursion"},
		{`root ::= a` + "\n" + `a ::= b a` + "\n" + `b ::= "x"?`, "left recursion"},
		{`root ::= "a"{0,100000}`, "limit"},
		{`root ::= "` + strings.Repeat("a", 200) + `"{10000}`, "elements"},
		{`root ::= ` + strings.Repeat("(", 100) + `"a"` + strings.Repeat(")", 100), "nested deeper"},
		{`root ::= "a`, "line 1, column"},
		{`root ::= [a-`, "end of input"},
		{`root ::= "\q"`, "unknown escape"},
		{`root ::= x`, `undefined rule "x"`},
		{`root ::= "a" {2,1}`, "below the minimum"},
		{`root ::= "a"` + "\n" + `root ::= "b"`, "defined twice"},
		{`root ::= *`, "expecting an item"},
		{"root ::= \"a\"\n\n  x", "expecting ::="},
	}
	for _, c := range cases {
		t0 := time.Now()
		_, err := Parse(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.50q: error %v, want it to mention %q", c.src, err, c.want)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%.50q: took %v", c.src, d)
		}
	}
	// A deeply recursive grammar matches deep input without blowing up.
	g, err := Parse(`root ::= "[" root? "]"`)
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	if !g.Match(deep) || g.Match(deep+"]") {
		t.Error("deep nesting")
	}
}

// FuzzParse: no input makes the parser panic or hang, and what parses can
// be matched.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`root ::= "a" | [b-d]+ x{2,3}` + "\nx ::= . [^\\x00]", `root ::= ("a" | "b")* "c"?`, `root ::= "\u00e9" [\U0001F600-\U0001F64F]`} {
		f.Add(s, "abc")
	}
	f.Fuzz(func(t *testing.T, src, input string) {
		g, err := ParseLimits(src, Limits{MaxElements: 1 << 14, MaxRepeat: 100})
		if err != nil {
			return
		}
		g.Match(input)
	})
}

// FuzzSchema: no schema makes the converter panic, and what converts parses.
func FuzzSchema(f *testing.F) {
	for _, s := range []string{`{"type":"object","properties":{"a":{"type":"integer","minimum":3}},"required":["a"]}`,
		`{"anyOf":[{"$ref":"#/$defs/x"},{"enum":[1,"a",null]}],"$defs":{"x":{"type":"string","pattern":"^a+$"}}}`,
		`{"type":"array","items":{"type":"string","format":"date"},"maxItems":3}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		text, _, err := ConvertSchema([]byte(schema), SchemaOptions{Lenient: true})
		if err != nil {
			return
		}
		if _, err := ParseLimits(text, Limits{}); err != nil && !strings.Contains(err.Error(), "left recursion") && !errors.Is(err, ErrLimit) {
			t.Fatalf("converted grammar does not parse: %v\n%s", err, text)
		}
	})
}

// TestIntegerRanges: integer bounds are exact, checked by brute force
// around each bound (every integer, leading zeros and signs).
func TestIntegerRanges(t *testing.T) {
	bounds := []int64{-100000, -9999, -1000, -608, -123, -10, -9, -1, 0, 1, 2, 5, 9, 10, 42, 99, 100, 456, 608, 999, 1000, 12345}
	type rng struct {
		lo, hi       int64
		hasLo, hasHi bool
	}
	var rs []rng
	for _, a := range bounds {
		rs = append(rs, rng{lo: a, hasLo: true}, rng{hi: a, hasHi: true})
		for _, b := range bounds {
			if a <= b {
				rs = append(rs, rng{a, b, true, true})
			}
		}
	}
	for _, r := range rs {
		s := `{"type":"integer"`
		if r.hasLo {
			s += fmt.Sprintf(`,"minimum":%d`, r.lo)
		}
		if r.hasHi {
			s += fmt.Sprintf(`,"maximum":%d`, r.hi)
		}
		s += "}"
		g, err := FromSchema([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		probe := []int64{}
		for _, b := range []int64{r.lo, r.hi} {
			for d := int64(-25); d <= 25; d++ {
				probe = append(probe, b+d)
			}
			probe = append(probe, b*10, b*10+7, b/10, -b)
		}
		for _, n := range probe {
			want := (!r.hasLo || n >= r.lo) && (!r.hasHi || n <= r.hi)
			if got := g.Match(strconv.FormatInt(n, 10)); got != want {
				t.Fatalf("%s: %d: got %v, want %v", s, n, got, want)
			}
			if n > 0 && g.Match("0"+strconv.FormatInt(n, 10)) {
				t.Fatalf("%s: accepted a leading zero: 0%d", s, n)
			}
		}
	}
}

// TestUTF8WellFormed: the matcher takes only well-formed UTF-8, whatever
// the grammar's classes allow.
func TestUTF8WellFormed(t *testing.T) {
	g, err := Parse(`root ::= .*`)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xed\x9f\xbf", "\xf4\x8f\xbf\xbf"} {
		if !g.Match(s) {
			t.Errorf("refused well-formed %q", s)
		}
	}
	for _, s := range []string{"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf0\x80\x80\x80", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\x80", "\xe2\x82"} {
		if g.Match(s) {
			t.Errorf("accepted ill-formed %q", s)
		}
	}
}
