package tokenizer

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Pre-tokenizers whose regexes need no look-ahead run as a pipeline of
// stages over Go's RE2 engine (linear time): each stage splits every piece
// around its matches, keeping the text between matches as pieces too, as
// llama.cpp's unicode_regex_split does with a list of expressions.

// unicodeSpace is \s as llama.cpp's Unicode tables define whitespace; RE2's
// \s is ASCII only.
const unicodeSpace = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

func compileStage(expr string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(expr, `\s`, `[`+unicodeSpace+`]`))
}

// stage is one step: a regex or a hand-written scanner.
type stage func(text []rune) [][]rune

func regexStage(expr string) stage {
	re := compileStage(expr)
	return func(text []rune) [][]rune {
		s := string(text)
		var out [][]rune
		// Pieces are sub-slices of text: byte offsets of s are turned into
		// rune offsets by counting as we go.
		last, lastR := 0, 0
		for _, m := range re.FindAllStringIndex(s, -1) {
			r0 := lastR + utf8.RuneCountInString(s[last:m[0]])
			r1 := r0 + utf8.RuneCountInString(s[m[0]:m[1]])
			if r0 > lastR {
				out = append(out, text[lastR:r0])
			}
			if r1 > r0 {
				out = append(out, text[r0:r1])
			}
			last, lastR = m[1], r1
		}
		if lastR < len(text) {
			out = append(out, text[lastR:])
		}
		return out
	}
}

// pipeline applies stages in order to every piece.
func pipeline(stages ...stage) preTokenizer {
	return func(text []rune) [][]rune {
		pieces := [][]rune{text}
		for _, st := range stages {
			var next [][]rune
			for _, p := range pieces {
				next = append(next, st(p)...)
			}
			pieces = next
		}
		return pieces
	}
}

const deepseekLetters = `[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+`

func init() {
	// llama.cpp's LLAMA_VOCAB_PRE_TYPE_DEFAULT, used for "default" and for
	// files that name no pre-tokenizer: punctuation runs split off first
	// (so "'m" is "'" + "m"), then GPT-2's rule, then digits apart from the
	// space before them, in groups of three.
	preTokenizers["default"] = pipeline(
		regexStage(`[\p{P}\$\+<=>\^~\|]+`),
		gpt2Split,
		regexStage(`\p{N}+`),
		regexStage(`[0-9][0-9][0-9]`),
	)
	preTokenizers["falcon"] = pipeline(
		regexStage(`[\p{P}\$\+<=>\^~\|`+"`"+`]+`),
		gpt2Split,
		regexStage(`[0-9][0-9][0-9]`),
	)
	preTokenizers["deepseek-llm"] = pipeline(
		regexStage(`[\r\n]`),
		regexStage(`\s?`+deepseekLetters),
		regexStage(`\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+`),
		regexStage(`\s+$`),
		regexStage(`[\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+`),
		regexStage(`\p{N}+`),
	)
	preTokenizers["deepseek-coder"] = pipeline(
		regexStage(`[\r\n]`),
		regexStage(`\s?\p{L}+`),
		regexStage(`\s?\p{P}+`),
		regexStage(`[\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+`),
		regexStage(`\p{N}`),
	)
}
