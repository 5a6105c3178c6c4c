package grammar

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// fuzzLimits keep one fuzz execution small; the limits themselves are
// what is under test (they must stop every input cleanly).
var fuzzLimits = Limits{
	MaxBytes:      1 << 16,
	MaxElements:   1 << 15,
	MaxRepeat:     1000,
	MaxStacks:     1 << 12,
	MaxStackDepth: 1000,
	MaxStepWork:   1 << 16,
	MaxCallWork:   1 << 20,
	MaxMemory:     16 << 20,
}

var fuzzIndex = sync.OnceValue(func() *Index {
	// A small synthetic vocabulary: every single byte (so any text can be
	// spelled), JSON and bracket pieces, multi-byte characters, their
	// fragments (tokens that split a UTF-8 character), escapes and an
	// end-of-generation token (the last id).
	var pieces [][]byte
	for b := 0; b < 256; b++ {
		pieces = append(pieces, []byte{byte(b)})
	}
	for _, p := range []string{
		`{"`, `":`, `": "`, `", "`, `"}`, `},`, `[{`, `]}`, `true`, `false`, `null`, `123`, `-0.5e+3`,
		`\n`, `\"`, `\u`, `\ud83d`, `\ude80`, `\ud83d\ude80`, `\u00e9`, "é", "€", "😀", "\xc3", "\xe2\x82", "\xf0\x9f", "\x98\x80", "\xa9",
		"aaaa", "aa", "ab", "abc", "((((", "))))", "()", "[[", "]]", "  ", "\n\t", "2024-01-02", "T12:00:00Z",
	} {
		pieces = append(pieces, []byte(p))
	}
	pieces = append(pieces, []byte("</s>"))
	return NewIndex(pieces, []int32{int32(len(pieces) - 1)})
})

// FuzzMatcher: grammars (GBNF text, or JSON Schemas when schema is set)
// from the fuzz input, then generation driven by the input bytes: at each
// step the mask is computed and checked against Allows and AcceptToken,
// and an allowed token is accepted. No input may panic, hang, overflow the
// stack or grow the matcher's caches past MaxMemory.
func FuzzMatcher(f *testing.F) {
	for _, s := range []struct {
		src    string
		schema bool
		input  string
	}{
		{`root ::= (("a"{0,1000}){0,1000}){0,1000}`, false, "aaaa"},
		{`root ::= ((("a"{0,100}){0,100}){0,100})`, false, "aaaaaaaaaaaa"},
		{`root ::= "x" ((("a"{0,100}){0,100}){0,100}) "y"`, false, "\x00\x01\x02\x03\x04\x05\x06"},
		{`root ::= "(" root ")" | ""`, false, "\x28\x28\x28\x28\x28\x28\x28\x28\x28\x28\x28\x28\x28\x28\x28\x28"},
		{`root ::= "a" root "b" | "a" root "c" | ""`, false, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{`root ::= [^"\\] | "\\" ["\\/bfnrt] | x` + "\nx ::= \"\\u\" [0-9a-fA-F]{4}", false, "\xff\xfe\xfd"},
		{`root ::= "a" | [b-d]+ x{2,3}` + "\nx ::= . [^\\x00]", false, "abc"},
		{`root ::= ("a" | "b")* "c"?`, false, "abcabc"},
		{`root ::= "\u00e9" [\U0001F600-\U0001F64F]`, false, "\x10\x20"},
		{`{"type":"string","pattern":"^((((a{0,100}){0,100}){0,100}){0,100})$"}`, true, "aaaa"},
		{`{"type":"string","pattern":"^\\d{3}-[A-Z]{2}$"}`, true, "0123456789"},
		{`{"type":"object","properties":{"a":{"type":"integer","minimum":3},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["a"]}`, true, "\x00\x10\x20\x30\x40"},
		{`{"type":"object","properties":{"ab":{"type":"integer"}},"additionalProperties":{"type":"string"}}`, true, "abcdefgh"},
		{`{"type":"array","items":{"type":"string","format":"date"},"maxItems":3}`, true, "\x01\x02\x03"},
		{`{"type":"string","maxLength":3}`, true, "\xf0\xf1\xf2\xf3\xf4"},
		{`{"type":"object"}`, true, "\x80\x81\x82\x83\x84\x85"},
		{`{"$defs":{"n":{"type":"object","properties":{"next":{"anyOf":[{"$ref":"#/$defs/n"},{"type":"null"}]}}}},"$ref":"#/$defs/n"}`, true, "\x00\x00\x00\x00\x00\x00\x00\x00"},
	} {
		f.Add(s.src, s.schema, []byte(s.input))
	}
	f.Fuzz(func(t *testing.T, src string, schema bool, input []byte) {
		t0 := time.Now()
		var g *Grammar
		var err error
		if schema {
			text, _, cerr := ConvertSchema([]byte(src), SchemaOptions{Lenient: true})
			if cerr != nil {
				return
			}
			g, err = ParseLimits(text, fuzzLimits)
		} else {
			g, err = ParseLimits(src, fuzzLimits)
		}
		if err != nil {
			return
		}
		ix := fuzzIndex()
		eog := int32(ix.Size() - 1)
		mt := g.NewMatcher()
		bit := func(mask []uint64, id int32) bool { return mask[id>>6]&(1<<(id&63)) != 0 }
		for step, b := range input {
			if step >= 48 {
				break
			}
			mask := mt.Mask(ix)
			if mt.m.mem > fuzzLimits.MaxMemory {
				t.Fatalf("caches hold %d bytes", mt.m.mem)
			}
			if err := mt.Err(); err != nil {
				if !errors.Is(err, ErrLimit) {
					t.Fatalf("Err is not a limit: %v", err)
				}
				return
			}
			if bit(mask, eog) != mt.Complete() {
				t.Fatalf("step %d: end of generation allowed %v, complete %v", step, bit(mask, eog), mt.Complete())
			}
			var ok []int32
			for id := int32(0); id < eog; id++ {
				if bit(mask, id) {
					ok = append(ok, id)
				}
			}
			// A refused token: Allows and AcceptToken agree, state kept.
			if id := int32(b) % int32(ix.Size()); id != eog && !bit(mask, id) {
				if mt.Allows(ix, id) {
					t.Fatalf("step %d: token %q not in the mask but allowed", step, ix.pieces[id])
				}
				if err := mt.AcceptToken(ix, id); err == nil {
					t.Fatalf("step %d: token %q not in the mask but accepted", step, ix.pieces[id])
				}
			}
			if len(ok) == 0 {
				return
			}
			id := ok[int(b)%len(ok)]
			if !mt.Allows(ix, id) {
				t.Fatalf("step %d: token %q in the mask but not allowed", step, ix.pieces[id])
			}
			if err := mt.AcceptToken(ix, id); err != nil {
				t.Fatalf("step %d: token %q in the mask but refused: %v", step, ix.pieces[id], err)
			}
		}
		// The limits bound each call to milliseconds here; this only
		// catches a hang (generously: the machine may be loaded).
		if d := time.Since(t0); d > 20*time.Second {
			t.Fatalf("took %v", d)
		}
	})
}
