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
	"":                 gpt2Split,
	"default":          gpt2Split,
	"gpt-2":            gpt2Split,
	"gpt2":             gpt2Split,
	"mpt":              gpt2Split,
	"olmo":             gpt2Split,
	"jais":             gpt2Split,
	"gpt-neox":         gpt2Split,
	"llama3":           llama3Split(3),
	"llama-v3":         llama3Split(3),
	"llama-bpe":        llama3Split(3),
	"falcon3":          llama3Split(3),
	"qwen2":            llama3Split(1),
	"deepseek-r1-qwen": llama3Split(1),
	"smollm":           digitsThen(gpt2Split),
	"starcoder":        digitsThen(gpt2Split),
	"refact":           digitsThen(gpt2Split),
	"command-r":        digitsThen(gpt2Split),
	"codeshell":        digitsThen(gpt2Split),
	"exaone":           digitsThen(gpt2Split),
	"minerva-7b":       digitsThen(gpt2Split),
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

// gpt2Split: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func gpt2Split(text []rune) [][]rune {
	var out [][]rune
	start, pos := 0, 0
	emit := func(end int) {
		if end > start {
			out = append(out, text[start:end])
		}
		start, pos = end, end
	}
	for pos < len(text) {
		c := text[pos]
		if c == '\'' && pos+1 < len(text) {
			n := text[pos+1]
			if n == 's' || n == 't' || n == 'm' || n == 'd' {
				emit(pos + 2)
				continue
			}
			if pos+2 < len(text) {
				n2 := text[pos+2]
				if (n == 'r' && n2 == 'e') || (n == 'v' && n2 == 'e') || (n == 'l' && n2 == 'l') {
					emit(pos + 3)
					continue
				}
			}
		}
		p2 := pos
		if c == ' ' {
			p2 = pos + 1
		}
		switch {
		case flagLetter(text, p2):
			e := p2 + 1
			for flagLetter(text, e) {
				e++
			}
			emit(e)
			continue
		case flagNumber(text, p2):
			e := p2 + 1
			for flagNumber(text, e) {
				e++
			}
			emit(e)
			continue
		case flagOther(text, p2):
			e := p2 + 1
			for flagOther(text, e) {
				e++
			}
			emit(e)
			continue
		}
		ns := 0
		for flagSpace(text, pos+ns) {
			ns++
		}
		if ns > 1 && pos+ns < len(text) {
			emit(pos + ns - 1)
			continue
		}
		if ns > 0 {
			emit(pos + ns)
			continue
		}
		emit(pos + 1)
	}
	return out
}

// llama3Split: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+  (Llama 3 with 3, Qwen2 with 1)
func llama3Split(digits int) preTokenizer {
	return func(text []rune) [][]rune {
		var out [][]rune
		start, pos := 0, 0
		emit := func(end int) {
			if end > start {
				out = append(out, text[start:end])
			}
			start, pos = end, end
		}
		for pos < len(text) {
			c := text[pos]
			if c == '\'' && pos+1 < len(text) {
				n := unicode.ToLower(text[pos+1])
				if n == 's' || n == 't' || n == 'm' || n == 'd' {
					emit(pos + 2)
					continue
				}
				if pos+2 < len(text) {
					n2 := unicode.ToLower(text[pos+2])
					if (n == 'r' && n2 == 'e') || (n == 'v' && n2 == 'e') || (n == 'l' && n2 == 'l') {
						emit(pos + 3)
						continue
					}
				}
			}
			if !(c == '\r' || c == '\n' || isNumber(c)) {
				if isLetter(c) || flagLetter(text, pos+1) {
					e := pos + 1
					for flagLetter(text, e) {
						e++
					}
					emit(e)
					continue
				}
			}
			if isNumber(c) {
				e := pos
				for flagNumber(text, e) && e-pos < digits {
					e++
				}
				emit(e)
				continue
			}
			p2 := pos
			if c == ' ' {
				p2 = pos + 1
			}
			if flagOther(text, p2) {
				e := p2 + 1
				for flagOther(text, e) {
					e++
				}
				for at(text, e) == '\r' || at(text, e) == '\n' {
					e++
				}
				emit(e)
				continue
			}
			ns, lastNL := 0, 0
			for flagSpace(text, pos+ns) {
				if r := text[pos+ns]; r == '\r' || r == '\n' {
					lastNL = pos + ns + 1
				}
				ns++
			}
			if lastNL > 0 {
				emit(lastNL)
				continue
			}
			if ns > 1 && pos+ns < len(text) {
				emit(pos + ns - 1)
				continue
			}
			if ns > 0 {
				emit(pos + ns)
				continue
			}
			emit(pos + 1)
		}
		return out
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

func preFor(name string) preTokenizer {
	if p, ok := preTokenizers[strings.ToLower(name)]; ok {
		return p
	}
	return gpt2Split
}
