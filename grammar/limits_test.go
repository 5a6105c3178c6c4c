package grammar

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// limitOf returns the name of the limit err reports, "" if none.
func limitOf(err error) string {
	var le *LimitError
	if errors.As(err, &le) && errors.Is(err, ErrLimit) {
		return le.Limit
	}
	return ""
}

// withSmallStack runs f with the Go stack bounded to 32 MiB, so that
// recursion on input-controlled depth fails the test (the default bound
// is 1 GB, which hides it) instead of passing slowly.
func withSmallStack(t *testing.T, f func()) {
	t.Helper()
	old := debug.SetMaxStack(32 << 20)
	defer debug.SetMaxStack(old)
	f()
}

func index(pieces ...string) *Index {
	ps := make([][]byte, len(pieces))
	for i, p := range pieces {
		ps[i] = []byte(p)
	}
	return NewIndex(ps, nil)
}

func allowed(ix *Index, mask []uint64) []string {
	var out []string
	for id, p := range ix.pieces {
		if mask[id>>6]&(1<<(id&63)) != 0 {
			out = append(out, string(p))
		}
	}
	return out
}

// TestLimitNestedRepetition: nested optional repetitions multiply the
// parse stacks one character can reach; they used to overflow the Go
// stack in expand (a fatal error that ends the whole server) or grow past
// 20 GB. Now Parse refuses them at once, naming MaxStacks, or (where the
// stacks multiply only as input comes) the matcher refuses the input.
func TestLimitNestedRepetition(t *testing.T) {
	withSmallStack(t, func() {
		for _, src := range []string{
			`root ::= (("a"{0,1000}){0,1000}){0,1000}`,
			`root ::= "x" (("a"{0,1000}){0,1000}){0,1000} "y"`, // the blow-up only after "x"
			`root ::= (("a"?){0,300}){0,300}`,
			`root ::= x{0,10}` + "\n" + `x ::= (("a"{0,100}){0,100}){0,100}` + "\n",
		} {
			t0 := time.Now()
			_, err := Parse(src)
			if limitOf(err) != "MaxStacks" || !strings.Contains(err.Error(), "MaxStacks") {
				t.Errorf("%s: %v, want a MaxStacks *LimitError", src, err)
			}
			if d := time.Since(t0); d > time.Second {
				t.Errorf("%s: took %v", src, d)
			}
		}
		for _, pat := range []string{`^((((a{0,100}){0,100}){0,100}){0,100})$`, `((a{0,1000}){0,1000}){0,1000}`} {
			_, err := FromSchema([]byte(`{"type":"string","pattern":` + fmt.Sprintf("%q", pat) + `}`))
			if limitOf(err) != "MaxStacks" {
				t.Errorf("pattern %s: %v, want a MaxStacks *LimitError", pat, err)
			}
		}
		// Three levels of {0,100}: 10^4 stacks for the first character,
		// within the limit, but the ways to split the input among the
		// levels grow with every "a": the matcher refuses the input once
		// they pass MaxStacks, in bounded time and memory.
		g, err := Parse(`root ::= ((("a"{0,100}){0,100}){0,100})`)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		mt := g.NewMatcher()
		err = mt.Accept([]byte(strings.Repeat("a", 100)))
		if limitOf(err) != "MaxStacks" {
			t.Errorf("3 × {0,100}: %v, want a MaxStacks *LimitError", err)
		}
		if d := time.Since(t0); d > 2*time.Second || mt.m.mem > 64<<20 {
			t.Errorf("3 × {0,100}: took %v, %d bytes", d, mt.m.mem)
		}
		if !g.Match("aa") {
			t.Error("3 × {0,100}: refused aa")
		}
	})
	// Below the limit such grammars work; a lower limit refuses them.
	src := `root ::= ("a"{0,100}){0,100} "b"`
	g, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Match("aaab") || !g.Match("b") || g.Match("aaa") {
		t.Error("nested repetition under the limit: wrong verdicts")
	}
	if _, err := ParseLimits(src, Limits{MaxStacks: 50}); limitOf(err) != "MaxStacks" {
		t.Errorf("MaxStacks 50: %v", err)
	}
}

// TestLimitStackDepth: a stack's depth grows with the input's nesting; it
// is bounded by MaxStackDepth. Past it, the next opening character is
// refused (Accept names the limit, Mask leaves the token out) while
// closing ones still work.
func TestLimitStackDepth(t *testing.T) {
	g, err := ParseLimits(`root ::= "(" root ")" | ""`, Limits{MaxStackDepth: 50})
	if err != nil {
		t.Fatal(err)
	}
	ix := index("(", ")", "()", "((")
	mt := g.NewMatcher()
	if err := mt.Accept([]byte(strings.Repeat("(", 49))); err != nil {
		t.Fatalf("49 deep: %v", err)
	}
	err = mt.Accept([]byte("("))
	if limitOf(err) != "MaxStackDepth" {
		t.Fatalf("50 deep: %v, want a MaxStackDepth *LimitError", err)
	}
	if err := mt.Accept([]byte("(")); limitOf(err) != "MaxStackDepth" { // cached refusal, same error
		t.Fatalf("50 deep again: %v", err)
	}
	if got := allowed(ix, mt.Mask(ix)); strings.Join(got, " ") != ")" || mt.Err() != nil {
		t.Errorf("mask at the limit: %q (err %v), want only )", got, mt.Err())
	}
	if err := mt.Accept([]byte(strings.Repeat(")", 49))); err != nil || !mt.Complete() {
		t.Errorf("closing: %v", err)
	}
	// The default bound holds however long the input: a million opening
	// parentheses are refused past 10000, in bounded memory and time.
	g, err = Parse(`root ::= "(" root ")" | ""`)
	if err != nil {
		t.Fatal(err)
	}
	mt = g.NewMatcher()
	t0 := time.Now()
	err = mt.Accept([]byte(strings.Repeat("(", 1_000_000)))
	if limitOf(err) != "MaxStackDepth" || !strings.Contains(err.Error(), "byte 9999 ") {
		t.Errorf("a million deep: %v", err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("a million deep: took %v", d)
	}
	// A grammar whose expansion alone opens too many references is refused.
	var b strings.Builder
	b.WriteString("root ::= r0\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "r%d ::= r%d \"x\"\n", i, i+1)
	}
	b.WriteString("r20000 ::= \"y\"\n")
	withSmallStack(t, func() {
		if _, err := Parse(b.String()); limitOf(err) != "MaxStackDepth" {
			t.Errorf("20000 nested references: %v", err)
		}
	})
}

// TestLimitAmbiguous: an ambiguous grammar doubles its stacks with every
// character; MaxStacks stops it (it used to run for minutes).
func TestLimitAmbiguous(t *testing.T) {
	g, err := Parse(`root ::= "a" root "b" | "a" root "c" | ""`)
	if err != nil {
		t.Fatal(err)
	}
	mt := g.NewMatcher()
	t0 := time.Now()
	err = mt.Accept([]byte(strings.Repeat("a", 40)))
	if limitOf(err) != "MaxStacks" {
		t.Errorf("40 a's: %v, want a MaxStacks *LimitError", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	if !g.Match("aabc") || g.Match("aab") {
		t.Error("short input: wrong verdicts")
	}
}

// TestLimitWork: MaxStepWork refuses one expensive character (cached like
// any refusal); MaxCallWork and MaxMemory fail a call as a whole, and Mask
// then reports it through Err instead of returning a partial mask.
func TestLimitWork(t *testing.T) {
	alts := make([]string, 100)
	for i := range alts {
		alts[i] = fmt.Sprintf(`"%c%d"`, 'a'+i%26, i)
	}
	src := `root ::= "x" (` + strings.Join(alts, " | ") + `) | "y"`
	g, err := ParseLimits(src, Limits{MaxStepWork: 50})
	if err != nil {
		t.Fatal(err)
	}
	mt := g.NewMatcher()
	if err := mt.Accept([]byte("x")); limitOf(err) != "MaxStepWork" {
		t.Errorf("step work: %v", err)
	}
	if !g.Match("y") {
		t.Error("cheap input refused")
	}
	// A grammar whose very start is over a limit is refused by Parse.
	if _, err := ParseLimits(`root ::= `+strings.Join(alts, " | "), Limits{MaxStepWork: 50}); limitOf(err) != "MaxStepWork" {
		t.Errorf("start over the step work: %v", err)
	}

	paren := `root ::= "(" root ")" | ""`
	g, err = ParseLimits(paren, Limits{MaxCallWork: 100})
	if err != nil {
		t.Fatal(err)
	}
	mt = g.NewMatcher()
	if err := mt.Accept([]byte(strings.Repeat("(", 200))); limitOf(err) != "MaxCallWork" {
		t.Errorf("call work: %v", err)
	}
	for i := 0; i < 200; i++ { // the same input, a call per byte: within budget
		if err := mt.Accept([]byte("(")); err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
	}
	var pieces []string
	for n := 1; n <= 300; n++ {
		pieces = append(pieces, strings.Repeat("(", n))
	}
	ix := index(append(pieces, ")")...)
	mask := mt.Mask(ix)
	if len(allowed(ix, mask)) != 0 || limitOf(mt.Err()) != "MaxCallWork" {
		t.Errorf("mask over the call budget: %d tokens, err %v", len(allowed(ix, mask)), mt.Err())
	}
	mt.Reset()
	if mt.Err() != nil {
		t.Errorf("after Reset: %v", mt.Err())
	}

	g, err = ParseLimits(paren, Limits{MaxMemory: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	mt = g.NewMatcher()
	var depth int
	for depth = 0; depth < 10000; depth++ {
		if err = mt.Accept([]byte("(")); err != nil {
			break
		}
		if mt.m.mem > 1<<16 {
			t.Fatalf("depth %d: %d bytes cached", depth, mt.m.mem)
		}
	}
	if limitOf(err) != "MaxMemory" {
		t.Errorf("memory: %v at depth %d", err, depth)
	}
}

// TestLimitNoRecursion: long chains of rules and deep input are handled
// with explicit work lists, within a 32 MiB Go stack.
func TestLimitNoRecursion(t *testing.T) {
	withSmallStack(t, func() {
		const n = 100000
		var b strings.Builder
		b.WriteString("root ::= r0 \"!\"\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "r%d ::= r%d\n", i, i+1) // tail references: no stack growth
		}
		fmt.Fprintf(&b, "r%d ::= \"y\" | \"\"\n", n)
		lim := Limits{MaxBytes: 8 << 20}
		g, err := ParseLimits(b.String(), lim)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Match("y!") || !g.Match("!") || g.Match("yy!") {
			t.Error("chain: wrong verdicts")
		}
		// Left recursion at the end of a long chain is still found.
		if _, err := ParseLimits(strings.Replace(b.String(), `"y" | ""`, `r0 "y"`, 1), lim); err == nil || !strings.Contains(err.Error(), "left recursion") {
			t.Errorf("left recursion: %v", err)
		}
		deep := strings.Repeat("[", 9000) + strings.Repeat("]", 9000)
		g, err = Parse(`root ::= "[" root? "]"`)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Match(deep) {
			t.Error("deep input refused")
		}
	})
}

// optionalSchema has n optional string properties.
func optionalSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestSchemaLinear: a schema of N optional properties converts and parses
// with work linear in N (the conversion used to build every
// alternative's chain of optional suffixes anew, and the parser's
// nullability pass repeated per rule: 0.9 s at N = 1000, 16.9 s at 4000).
func TestSchemaLinear(t *testing.T) {
	work := func(n int) (convert, parse int) {
		b := NewBuilder(SchemaOptions{})
		if _, err := b.AddSchema("", []byte(optionalSchema(n))); err != nil {
			t.Fatal(err)
		}
		g, err := Parse(b.Text())
		if err != nil {
			t.Fatal(err)
		}
		if n == 4000 {
			if !g.Match(`{"p3": "x", "p3999": "y"}`) || !g.Match(`{}`) || g.Match(`{"p3999": "y", "p3": "x"}`) {
				t.Error("4000 properties: wrong verdicts")
			}
		}
		return b.c.work, g.flat.work
	}
	c1, p1 := work(1000)
	c4, p4 := work(4000)
	t.Logf("conversion work %d → %d, parse analysis %d → %d", c1, c4, p1, p4)
	if c4 > 5*c1 || p4 > 5*p1 {
		t.Errorf("4× the properties cost %.1f× the conversion and %.1f× the analysis, want about 4×", float64(c4)/float64(c1), float64(p4)/float64(p1))
	}
	// Past the output bound the conversion stops with a clear error.
	_, err := FromSchema([]byte(optionalSchema(40000)))
	if limitOf(err) != "MaxSchemaOutput" {
		t.Errorf("40000 properties: %v", err)
	}
}

// TestSchemaLimits: other hostile schemas end in a *LimitError or a clear
// error, never a crash.
func TestSchemaLimits(t *testing.T) {
	var chain strings.Builder
	chain.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&chain, `"d%d":{"$ref":"#/$defs/d%d"},`, i, i+1)
	}
	chain.WriteString(`"d300":{"type":"integer"}}}`)
	wide := `{"anyOf":[` + strings.Repeat(`{"type":"integer"},`, MaxSchemaVisits) + `{}]}`
	cases := []struct{ schema, limit, msg string }{
		{chain.String(), "MaxSchemaDepth", ""},
		{strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200), "MaxJSONDepth", ""},
		{wide, "MaxSchemaVisits", ""},
		{`{"$defs":{"a":{"$ref":"#/$defs/a"}},"allOf":[{"$ref":"#/$defs/a"}]}`, "", "refers back to itself"},
		{`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"allOf":[{"$ref":"#/$defs/a"}]}`, "", "refers back to itself"},
	}
	// Pattern groups nest up to 32 deep (the GBNF made from them stays
	// within Parse's nesting limit of 64).
	nested := func(n int) string {
		return `{"type":"string","pattern":"^` + strings.Repeat("(x|", n) + "a" + strings.Repeat(")", n) + `$"}`
	}
	if g, err := FromSchema([]byte(nested(32))); err != nil || !g.Match(`"a"`) || !g.Match(`"x"`) || g.Match(`"xa"`) {
		t.Errorf("pattern nested 32 deep: %v", err)
	}
	cases = append(cases, struct{ schema, limit, msg string }{nested(33), "", "nested deeper than 32"})
	withSmallStack(t, func() {
		for _, c := range cases {
			_, err := FromSchema([]byte(c.schema))
			if c.limit != "" && (limitOf(err) != c.limit || !strings.Contains(err.Error(), c.limit)) {
				t.Errorf("%.50s: %v, want a %s *LimitError", c.schema, err, c.limit)
			}
			if c.msg != "" && (err == nil || !strings.Contains(err.Error(), c.msg)) {
				t.Errorf("%.50s: %v, want %q", c.schema, err, c.msg)
			}
		}
	})
}

// TestSchemaAdditionalKeys: keys outside the properties, with long and
// prefix-sharing property names (the excluded-keys trie used to nest a
// parenthesis per character, past the parser's nesting limit at 64).
func TestSchemaAdditionalKeys(t *testing.T) {
	long := strings.Repeat("k", 100)
	schema := `{"type":"object","properties":{"ab":{"type":"integer"},"` + long + `":{"type":"integer"},"q\"":{"type":"integer"}},"additionalProperties":{"type":"string"}}`
	g, err := FromSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc  string
		want bool
	}{
		{`{"ab": 1}`, true}, {`{"ab": "x"}`, false},
		{`{"a": "x"}`, true}, {`{"abc": "x"}`, true}, {`{"x": "y"}`, true}, {`{"": "y"}`, true},
		{`{"` + long + `": 1}`, true}, {`{"` + long + `": "s"}`, false},
		{`{"` + long[:99] + `": "s"}`, true}, {`{"` + long + `x": "s"}`, true},
		{`{"q\"": 1}`, true}, {`{"q\"": "s"}`, false}, {`{"q": "s"}`, true},
		{`{"a\": "s"}`, false}, // not JSON: the key may not end in a lone backslash
	} {
		if got := g.Match(c.doc); got != c.want {
			t.Errorf("%s: got %v, want %v", c.doc, got, c.want)
		}
	}
}

// TestSurrogatePairs: JSON strings may spell a character outside the BMP
// as a UTF-16 surrogate pair escape; lone surrogates are not characters.
func TestSurrogatePairs(t *testing.T) {
	accept := []string{`"\ud83d\ude80"`, `"\uD83D\uDE80"`, `"a\ud83d\ude80b"`, `"\udbff\udfff"`, `"\ud800\udc00"`, `"\/"`, `"\u00e9\ud7ff\ue000"`}
	reject := []string{`"\ud83d"`, `"\ude80"`, `"\ud83d\u0041"`, `"\ud83dx"`, `"\ude80\ud83d"`, `"\ud83d\ud83d"`, `"\ud83d\\ude80"`, `"\ud83d\ude8"`}
	for _, schema := range []string{`{"type":"string"}`, `{"type":"array","items":{"type":"string"}}`, `{"type":"string","minLength":1,"maxLength":3}`} {
		g, err := FromSchema([]byte(schema))
		if err != nil {
			t.Fatal(err)
		}
		wrap := func(s string) string {
			if strings.HasPrefix(schema, `{"type":"array"`) {
				return "[" + s + "]"
			}
			return s
		}
		for _, s := range accept {
			if !g.Match(wrap(s)) {
				t.Errorf("%s: refused %s", schema, s)
			}
		}
		for _, s := range reject {
			if g.Match(wrap(s)) {
				t.Errorf("%s: accepted %s", schema, s)
			}
		}
	}
	g, err := FromSchema([]byte(AnyJSONObject))
	if err != nil {
		t.Fatal(err)
	}
	if !g.Match(`{"\ud83d\ude80": "\ud83d\ude80"}`) || g.Match(`{"\ud83d": 1}`) {
		t.Error("object keys: wrong verdicts")
	}
}

// TestGBNFEscapes: exactly llama.cpp's escapes (b4748 parse_char, checked
// with its llama-gbnf-validator): \x \u \U with exactly 2, 4, 8 hex
// digits; \t \r \n \\ \" \[ \]; every other escape is an error.
func TestGBNFEscapes(t *testing.T) {
	cases := []struct {
		src, input string
		want       string // accept, reject or error
	}{
		{`root ::= "\x41"`, "A", "accept"},
		{`root ::= [\x41]`, "A", "accept"},
		{`root ::= "\xff"`, "\u00ff", "accept"},
		{`root ::= "\x41\x42"`, "AB", "accept"},
		{`root ::= [\x41-\x43]`, "B", "accept"},
		{`root ::= "\u0041"`, "A", "accept"},
		{`root ::= [\u00e9]`, "é", "accept"},
		{`root ::= "\U00000041"`, "A", "accept"},
		{`root ::= "\U0001F600"`, "😀", "accept"},
		{`root ::= "\t"`, "\t", "accept"},
		{`root ::= [\t]`, "\t", "accept"},
		{`root ::= "\r"`, "\r", "accept"},
		{`root ::= "\n"`, "\n", "accept"},
		{`root ::= [\n]`, "\n", "accept"},
		{`root ::= "\\"`, `\`, "accept"},
		{`root ::= [\\]`, `\`, "accept"},
		{`root ::= "\""`, `"`, "accept"},
		{`root ::= [\"]`, `"`, "accept"},
		{`root ::= "\["`, `[`, "accept"},
		{`root ::= [\[]`, `[`, "accept"},
		{`root ::= "\]"`, `]`, "accept"},
		{`root ::= [\]]`, `]`, "accept"},
		{`root ::= "\t"`, "A", "reject"},
		{`root ::= [a-]`, "-", "accept"}, // a '-' before ']' is literal
		{`root ::= [-a]`, "-", "accept"},
		{`root ::= "\x4"`, "", "error"},
		{`root ::= [\x4]`, "", "error"},
		{`root ::= "\x4G"`, "", "error"},
		{`root ::= "a\x`, "", "error"},
		{`root ::= "\u041"`, "", "error"},
		{`root ::= [\u041]`, "", "error"},
		{`root ::= "\U0041"`, "", "error"},
		{`root ::= [\U0041]`, "", "error"},
		{`root ::= "\X41"`, "", "error"},
	}
	for _, c := range []byte(`-/^abfev0'{}.|( `) {
		cases = append(cases,
			struct{ src, input, want string }{`root ::= "\` + string(c) + `"`, "", "error"},
			struct{ src, input, want string }{`root ::= [\` + string(c) + `]`, "", "error"},
		)
	}
	cases = append(cases, struct{ src, input, want string }{`root ::= [a\-z]`, "", "error"}, struct{ src, input, want string }{`root ::= "\`, "", "error"})
	for _, c := range cases {
		g, err := Parse(c.src)
		got := "error"
		if err == nil {
			got = "reject"
			if g.Match(c.input) {
				got = "accept"
			}
		}
		if got != c.want {
			t.Errorf("%s on %q: %s (%v), want %s", c.src, c.input, got, err, c.want)
		}
	}
}

// collidingSchema has n integer properties whose names all escape to the
// same rule name ("a" and a non-ASCII letter), each with its own minimum.
func collidingSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"a%c":{"type":"integer","minimum":%d}`, rune(0x100+i), i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// TestSchemaCollidingNames: rules whose names escape alike get numeric
// suffixes; finding the next free one used to rescan from 0 (1000 such
// properties took 19 s to convert, 4000 over ten minutes).
func TestSchemaCollidingNames(t *testing.T) {
	work := func(n int) int {
		b := NewBuilder(SchemaOptions{})
		if _, err := b.AddSchema("", []byte(collidingSchema(n))); err != nil {
			t.Fatal(err)
		}
		return b.c.work
	}
	w1, w4 := work(1000), work(4000)
	if w4 > 5*w1 {
		t.Errorf("4× the properties cost %.1f× the work", float64(w4)/float64(w1))
	}
	g, err := FromSchema([]byte(collidingSchema(300)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc  string
		want bool
	}{{`{"a` + string(rune(0x100+7)) + `": 7}`, true}, {`{"a` + string(rune(0x100+7)) + `": 6}`, false}, {`{"a` + string(rune(0x100+299)) + `": 299}`, true}, {`{"a` + string(rune(0x100+299)) + `": 298}`, false}} {
		if g.Match(c.doc) != c.want {
			t.Errorf("%s: got %v", c.doc, !c.want)
		}
	}
}

// TestSchemaRefNames: a $ref's rule is named after the reference, but a
// rule of that name made for something else is not taken for it
// (llama.cpp's converter reuses it, accepting other values altogether).
func TestSchemaRefNames(t *testing.T) {
	cases := []struct {
		schema         string
		accept, reject []string
	}{
		{`{"type":"object","properties":{"foo":{"type":"string","maxLength":3},"bar":{"$ref":"#/$defs/foo"}},"required":["foo","bar"],"$defs":{"foo":{"type":"integer"}}}`,
			[]string{`{"foo": "x", "bar": 1}`}, []string{`{"foo": "x", "bar": "y"}`, `{"foo": 1, "bar": 1}`}},
		{`{"type":"object","properties":{"node":{"type":"string","maxLength":3},"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
			[]string{`{"node": "abc", "tree": {"kids": [{}, {"kids": []}]}}`}, []string{`{"tree": {"kids": ["abc"]}}`, `{"tree": "abc"}`}},
		{`{"$defs":{"string":{"type":"integer"}},"type":"array","items":{"$ref":"#/$defs/string"}}`, []string{`[1, 2]`}, []string{`["a"]`}},
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

// TestSchemaQuadratic: inputs that made the converter's work grow with
// the product of two sizes of the schema now fail fast or stay linear.
func TestSchemaQuadratic(t *testing.T) {
	// A type list is split into one subschema per type, each copying the
	// other keywords: only the seven JSON types, each once.
	var keys strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&keys, `"k%d":1,`, i)
	}
	types := `{` + keys.String() + `"type":[` + strings.TrimSuffix(strings.Repeat(`"null",`, 20000), ",") + `]}`
	// allOf entries that each follow a long $ref chain.
	var chain strings.Builder
	chain.WriteString(`{"$defs":{`)
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&chain, `"d%d":{"$ref":"#/$defs/d%d"},`, i, i+1)
	}
	chain.WriteString(`"d2000":{"properties":{"a":{"type":"integer"}}}},"allOf":[` + strings.TrimSuffix(strings.Repeat(`{"$ref":"#/$defs/d0"},`, 2000), ",") + `]}`)
	for _, c := range []struct{ schema, want string }{{types, "listed twice"}, {chain.String(), "MaxSchemaVisits"}} {
		t0 := time.Now()
		_, _, err := ConvertSchema([]byte(c.schema), SchemaOptions{Lenient: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40s: %v, want %q", c.schema, err, c.want)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("%.40s: took %v", c.schema, d)
		}
		if len(err.Error()) > 1000 {
			t.Errorf("%.40s: a %d-byte error", c.schema, len(err.Error()))
		}
	}
	if _, err := FromSchema([]byte(`{"type":["string","null"],"maxLength":2}`)); err != nil {
		t.Error(err)
	}
}
