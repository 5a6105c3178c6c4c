package tokenizer

import (
	"strings"
	"unicode"
)

// Pre-tokenizers split text into words before BPE merges. GPT-2-family
// regexes use look-ahead (\s+(?!\S)), which Go's regexp lacks, so each is a
// hand-written scanner over code points that follows llama.cpp's own custom
// implementations (unicode_regex_split_custom_gpt2/_llama3) rule for rule:
// no regex engine, no backtracking, linear time.

type preTokenizer func(text []rune) [][]rune

var preTokenizers = map[string]preTokenizer{
	"gpt-2":                    gpt2Split,
	"gpt2":                     gpt2Split,
	"mpt":                      gpt2Split,
	"olmo":                     gpt2Split,
	"jais":                     gpt2Split,
	"gpt-neox":                 gpt2Split,
	"llama3":                   llama3Split(3),
	"llama-v3":                 llama3Split(3),
	"llama-bpe":                llama3Split(3),
	"falcon3":                  llama3Split(3),
	"falcon-h1":                llama3Split(3),
	"midm-2.0":                 llama3Split(3),
	"lfm2":                     llama3Split(3),
	"qwen2":                    llama3Split(1),
	"deepseek-r1-qwen":         llama3Split(1),
	"qwen35":                   qwen35Split,
	"smollm":                   digitsThen(gpt2Split),
	"starcoder":                digitsThen(gpt2Split),
	"refact":                   digitsThen(gpt2Split),
	"command-r":                digitsThen(gpt2Split),
	"codeshell":                digitsThen(gpt2Split),
	"exaone":                   digitsThen(gpt2Split),
	"minerva-7b":               digitsThen(gpt2Split),
	"gpt-4o":                   o200kSplit(true, 3),
	"llama4":                   o200kSplit(true, 3),
	"kanana2":                  o200kSplit(true, 3),
	"talkie":                   o200kSplit(true, 3),
	"minimax-m2":               o200kSplit(true, 3),
	"tekken":                   o200kSplit(false, 1),
	"gemma4":                   newlineSplit,
	"granite-embed-multi-311m": newlineSplit,
}

func isLetter(r rune) bool { return unicode.IsLetter(r) }
func isNumber(r rune) bool { return unicode.IsNumber(r) }
func isSpace(r rune) bool  { return unicode.IsSpace(r) }

// at returns text[i], or -1 past the end.
func at(text []rune, i int) rune {
	if i < 0 || i >= len(text) {
		return -1
	}
	return text[i]
}

func flagLetter(text []rune, i int) bool { r := at(text, i); return r >= 0 && isLetter(r) }
func flagNumber(text []rune, i int) bool { r := at(text, i); return r >= 0 && isNumber(r) }
func flagSpace(text []rune, i int) bool  { r := at(text, i); return r >= 0 && isSpace(r) }
func flagOther(text []rune, i int) bool {
	r := at(text, i)
	return r >= 0 && !isSpace(r) && !isLetter(r) && !isNumber(r)
}

// scan splits text into the tokens that match(text, pos) finds one after
// another; match returns the end of the token starting at pos (> pos).
func scan(text []rune, match func(text []rune, pos int) int) [][]rune {
	var out [][]rune
	for pos := 0; pos < len(text); {
		end := match(text, pos)
		out = append(out, text[pos:end])
		pos = end
	}
	return out
}

// contraction matches 's 't 're 've 'm 'll 'd at pos (any case when fold),
// returning its end or 0.
func contraction(text []rune, pos int, fold bool) int {
	if text[pos] != '\'' || pos+1 >= len(text) {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	n := lower(text[pos+1])
	if n == 's' || n == 't' || n == 'm' || n == 'd' {
		return pos + 2
	}
	if pos+2 < len(text) {
		n2 := lower(text[pos+2])
		if (n == 'r' && n2 == 'e') || (n == 'v' && n2 == 'e') || (n == 'l' && n2 == 'l') {
			return pos + 3
		}
	}
	return 0
}

// runEnd is the end of the run of code points from e on that satisfy f.
func runEnd(text []rune, e int, f func([]rune, int) bool) int {
	for f(text, e) {
		e++
	}
	return e
}

// spaceEnd: \s+(?!\S)|\s+ at pos — a whitespace run leaves its last space
// to the next token when a non-space follows; anything else is one code
// point ("no match" in llama.cpp advances by one).
func spaceEnd(text []rune, pos int) int {
	ns := runEnd(text, pos, flagSpace) - pos
	switch {
	case ns > 1 && pos+ns < len(text):
		return pos + ns - 1
	case ns > 0:
		return pos + ns
	}
	return pos + 1
}

// gpt2Classes are the runs " ?X+" of the GPT-2 regex, in its order.
var gpt2Classes = []func([]rune, int) bool{flagLetter, flagNumber, flagOther}

// gpt2Split: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func gpt2Split(text []rune) [][]rune {
	return scan(text, func(text []rune, pos int) int {
		if e := contraction(text, pos, false); e > 0 {
			return e
		}
		p2 := pos
		if text[pos] == ' ' {
			p2 = pos + 1
		}
		for _, class := range gpt2Classes {
			if class(text, p2) {
				return runEnd(text, p2+1, class)
			}
		}
		return spaceEnd(text, pos)
	})
}

// llama3Split: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+  (Llama 3 with 3, Qwen2 with 1)
func llama3Split(digits int) preTokenizer { return llama3Like(digits, flagLetter, flagOther) }

// qwen35Split is Qwen2's split with letter runs that take combining marks
// too (llama.cpp's Qwen3.5 regex): [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and
// ' '?[^\s\p{L}\p{M}\p{N}]+[\r\n]*.
var qwen35Split = llama3Like(1, flagLetterMark, flagOtherNoMark)

func flagLetterMark(text []rune, i int) bool {
	r := at(text, i)
	return r >= 0 && (isLetter(r) || unicode.IsMark(r))
}

func flagOtherNoMark(text []rune, i int) bool {
	return flagOther(text, i) && !unicode.IsMark(at(text, i))
}

// llama3Like is llama3Split with letter runs of the code points letter
// accepts and punctuation runs of those other accepts.
func llama3Like(digits int, letter, other func([]rune, int) bool) preTokenizer {
	return func(text []rune) [][]rune {
		return scan(text, func(text []rune, pos int) int {
			c := text[pos]
			if e := contraction(text, pos, true); e > 0 {
				return e
			}
			if !(c == '\r' || c == '\n' || isNumber(c)) && (letter(text, pos) || letter(text, pos+1)) {
				return runEnd(text, pos+1, letter)
			}
			if isNumber(c) {
				e := pos
				for flagNumber(text, e) && e-pos < digits {
					e++
				}
				return e
			}
			p2 := pos
			if c == ' ' {
				p2 = pos + 1
			}
			if other(text, p2) {
				e := runEnd(text, p2+1, other)
				for at(text, e) == '\r' || at(text, e) == '\n' {
					e++
				}
				return e
			}
			// \s*[\r\n]+ : a whitespace run up to its last newline.
			lastNL := 0
			for e := pos; flagSpace(text, e); e++ {
				if r := text[e]; r == '\r' || r == '\n' {
					lastNL = e + 1
				}
			}
			if lastNL > 0 {
				return lastNL
			}
			return spaceEnd(text, pos)
		})
	}
}

// digitsThen first isolates every digit (\p{N}), then applies next to the
// text between digits (StarCoder, SmolLM).
func digitsThen(next preTokenizer) preTokenizer {
	return func(text []rune) [][]rune {
		var out [][]rune
		start := 0
		for i, r := range text {
			if isNumber(r) {
				if i > start {
					out = append(out, next(text[start:i])...)
				}
				out = append(out, text[i:i+1])
				start = i + 1
			}
		}
		if start < len(text) {
			out = append(out, next(text[start:])...)
		}
		return out
	}
}

// o200kSplit follows llama.cpp's GPT-4o (o200k) regex, and with
// contractions off and single digits its tekken regex:
//
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|
//	[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|…)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// llama.cpp has no custom splitter for it: std::regex (ECMAScript,
// backtracking, first alternative that matches) runs it over a "collapsed"
// text in which every non-ASCII code point is one byte standing for its
// category. So case is ASCII case only: [^a-z] and [^A-Z] both hold for
// every non-ASCII letter ("upper" is A-Z or non-ASCII, "lower" a-z or
// non-ASCII), which is not the Unicode case the original regex means
// ("ÉCOLE" splits as "É" "COLE"). The scanner below is the result of that
// backtracking, worked out per alternative:
//   - letters (optionally after one [^\r\n\p{L}\p{N}]): the run of
//     "upper" letters, then, if an ASCII lowercase letter follows, the run of
//     "lower" letters after it; otherwise the run up to and including its
//     last non-ASCII letter; if it has none (all A-Z), the whole A-Z run
//     (the second alternative); then a contraction if one follows;
//   - \p{N}{1,digits};  ' '?[^\s\p{L}\p{N}]+[\r\n/]*;  then the whitespace
//     rules of Llama 3 (\s*[\r\n]+ to the last newline, \s+(?!\S), \s+).
func o200kSplit(contractions bool, digits int) preTokenizer {
	return func(text []rune) [][]rune {
		return scan(text, func(text []rune, pos int) int {
			c := text[pos]
			q := pos
			if c != '\r' && c != '\n' && !isLetter(c) && !isNumber(c) && flagLetter(text, pos+1) {
				q = pos + 1
			}
			if flagLetter(text, q) {
				e := camelEnd(text, q)
				if contractions && e < len(text) {
					if ce := contraction(text, e, true); ce > 0 {
						e = ce
					}
				}
				return e
			}
			if isNumber(c) {
				e := pos
				for flagNumber(text, e) && e-pos < digits {
					e++
				}
				return e
			}
			p2 := pos
			if c == ' ' && flagOther(text, pos+1) {
				p2 = pos + 1
			}
			if flagOther(text, p2) {
				e := runEnd(text, p2+1, flagOther)
				for r := at(text, e); r == '\r' || r == '\n' || r == '/'; r = at(text, e) {
					e++
				}
				return e
			}
			lastNL := 0
			for e := pos; flagSpace(text, e); e++ {
				if r := text[e]; r == '\r' || r == '\n' {
					lastNL = e + 1
				}
			}
			if lastNL > 0 {
				return lastNL
			}
			return spaceEnd(text, pos)
		})
	}
}

// camelEnd is the end of ((?=\p{L})[^a-z])*((?=\p{L})[^A-Z])+ at q (a
// letter), or of the all-A-Z run when that fails (see o200kSplit).
func camelEnd(text []rune, q int) int {
	k := q
	for r := at(text, k); r >= 0 && isLetter(r) && !(r >= 'a' && r <= 'z'); r = at(text, k) {
		k++
	}
	if r := at(text, k); r >= 'a' && r <= 'z' {
		for r := at(text, k); r >= 0 && isLetter(r) && !(r >= 'A' && r <= 'Z'); r = at(text, k) {
			k++
		}
		return k
	}
	for j := k - 1; j >= q; j-- {
		if text[j] >= 0x80 {
			return j + 1
		}
	}
	return k
}

// newlineSplit: [^\n]+|[\n]+ — runs of newlines and runs of anything else
// (Gemma 4: the merges run over whole lines).
func newlineSplit(text []rune) [][]rune {
	var out [][]rune
	for start := 0; start < len(text); {
		nl := text[start] == '\n'
		e := start + 1
		for e < len(text) && (text[e] == '\n') == nl {
			e++
		}
		out = append(out, text[start:e])
		start = e
	}
	return out
}

// preFor returns the pre-tokenizer for tokenizer.ggml.pre; a file without
// one gets llama.cpp's "default" (as llama.cpp does, with a warning).
func preFor(name string) preTokenizer {
	if p, ok := preTokenizers[strings.ToLower(name)]; ok {
		return p
	}
	return preTokenizers["default"]
}
