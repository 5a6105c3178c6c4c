package jinja

import (
	"strings"
	"unicode"
)

// Python's str case mappings and character classes, as CPython implements
// them (Objects/unicodeobject.c, Objects/unicodectype.c): full case
// mappings (ß upper-cases to "SS", İ lower-cases to "i̇"), the final-sigma
// rule of lower(), and the derived properties Uppercase, Lowercase and
// Cased rather than the bare categories. unicode_tables.go holds what Go's
// unicode package lacks.

// pyIsUpper is Py_UNICODE_ISUPPER: the Uppercase property (Lu and
// Other_Uppercase).
func pyIsUpper(c rune) bool { return unicode.IsUpper(c) || unicode.Is(unicode.Other_Uppercase, c) }

// pyIsLower is Py_UNICODE_ISLOWER: the Lowercase property (Ll and
// Other_Lowercase).
func pyIsLower(c rune) bool { return unicode.IsLower(c) || unicode.Is(unicode.Other_Lowercase, c) }

// pyIsCased is _PyUnicode_IsCased: Uppercase, Lowercase or Lt.
func pyIsCased(c rune) bool { return pyIsUpper(c) || pyIsLower(c) || unicode.IsTitle(c) }

// pyIsCaseIgnorable is _PyUnicode_IsCaseIgnorable: Mn, Me, Cf, Lm, Sk, or
// Word_Break MidLetter, MidNumLet or Single_Quote.
func pyIsCaseIgnorable(c rune) bool {
	switch c {
	case '\'', '.', ':', 0xb7, 0x387, 0x55f, 0x5f4, 0x2018, 0x2019, 0x2024, 0x2027, 0xfe13, 0xfe52, 0xfe55, 0xff07, 0xff0e, 0xff1a:
		return true
	}
	return unicode.In(c, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// pyIsDigit is str.isdigit for one character (Numeric_Type Decimal or
// Digit).
func pyIsDigit(c rune) bool { return unicode.IsDigit(c) || unicode.Is(digitNotDecimal, c) }

// pyIsNumeric is str.isnumeric for one character (any Numeric_Type).
func pyIsNumeric(c rune) bool { return unicode.IsNumber(c) || unicode.Is(numericNotN, c) }

// pyIsPrintable is Py_UNICODE_ISPRINTABLE: a space, or a character outside
// the categories C* and Z* (unassigned characters are not printable).
func pyIsPrintable(c rune) bool {
	return c == ' ' || unicode.In(c, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// xidStartNot and xidContinueNot are the characters of ID_Start and
// ID_Continue that are not in XID_Start and XID_Continue (UAX #31, NFKC
// closure), and otherIDStart the ID_Start characters Go's tables miss.
var (
	xidStartNot    = []rune{0x37a, 0xe33, 0xeb3, 0x309b, 0x309c, 0xfc5e, 0xfc5f, 0xfc60, 0xfc61, 0xfc62, 0xfc63, 0xfdfa, 0xfdfb, 0xfe70, 0xfe72, 0xfe74, 0xfe76, 0xfe78, 0xfe7a, 0xfe7c, 0xfe7e, 0xff9e, 0xff9f}
	xidContinueNot = []rune{0x37a, 0x309b, 0x309c, 0xfc5e, 0xfc5f, 0xfc60, 0xfc61, 0xfc62, 0xfc63, 0xfdfa, 0xfdfb, 0xfe70, 0xfe72, 0xfe74, 0xfe76, 0xfe78, 0xfe7a, 0xfe7c, 0xfe7e}
)

// pyIsXIDStart is _PyUnicode_IsXidStart.
func pyIsXIDStart(c rune) bool {
	if !(unicode.In(c, unicode.L, unicode.Nl, unicode.Other_ID_Start)) || unicode.In(c, unicode.Pattern_Syntax, unicode.Pattern_White_Space) {
		return false
	}
	for _, x := range xidStartNot {
		if c == x {
			return false
		}
	}
	return true
}

// pyIsXIDContinue is _PyUnicode_IsXidContinue.
func pyIsXIDContinue(c rune) bool {
	if !(unicode.In(c, unicode.L, unicode.Nl, unicode.Other_ID_Start, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Other_ID_Continue)) ||
		unicode.In(c, unicode.Pattern_Syntax, unicode.Pattern_White_Space) {
		return false
	}
	for _, x := range xidContinueNot {
		if c == x {
			return false
		}
	}
	return true
}

// Full case mappings of one character.

func writeUpper(b *strings.Builder, c rune) {
	if s, ok := upperFull[c]; ok {
		b.WriteString(s)
		return
	}
	b.WriteRune(unicode.ToUpper(c))
}

func writeTitle(b *strings.Builder, c rune) {
	if s, ok := titleFull[c]; ok {
		b.WriteString(s)
		return
	}
	b.WriteRune(unicode.ToTitle(c))
}

// writeLower is lower_ucs4: rs[i] lower-cased, a capital sigma by its
// context (final sigma).
func writeLower(b *strings.Builder, rs []rune, i int) {
	c := rs[i]
	if c == 0x3a3 {
		b.WriteRune(sigma(rs, i))
		return
	}
	if s, ok := lowerFull[c]; ok {
		b.WriteString(s)
		return
	}
	b.WriteRune(unicode.ToLower(c))
}

// sigma is handle_capital_sigma: Σ lower-cases to ς at the end of a word
// (after a cased letter, and not before one, case-ignorable characters
// skipped), to σ elsewhere.
func sigma(rs []rune, i int) rune {
	j := i - 1
	for j >= 0 && pyIsCaseIgnorable(rs[j]) {
		j--
	}
	final := j >= 0 && pyIsCased(rs[j])
	if final {
		j = i + 1
		for j < len(rs) && pyIsCaseIgnorable(rs[j]) {
			j++
		}
		final = j == len(rs) || !pyIsCased(rs[j])
	}
	if final {
		return 0x3c2
	}
	return 0x3c3
}

// isASCII reports whether s is ASCII, whose case mappings are Go's.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// pyUpper is str.upper.
func pyUpper(s string) string {
	if isASCII(s) {
		return strings.ToUpper(s)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		writeUpper(&b, c)
	}
	return b.String()
}

// pyLower is str.lower.
func pyLower(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := range rs {
		writeLower(&b, rs, i)
	}
	return b.String()
}

// pyCasefold is str.casefold: full case folding (ß folds to "ss").
func pyCasefold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, c := range s {
		if f, ok := foldFull[c]; ok {
			b.WriteString(f)
		} else if l, ok := lowerFull[c]; ok {
			b.WriteString(l)
		} else {
			b.WriteRune(unicode.ToLower(c))
		}
	}
	return b.String()
}

// title is str.title: a character after a cased one is lower-cased, any
// other title-cased.
func title(s string) string {
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	prevCased := false
	for i, c := range rs {
		if prevCased {
			writeLower(&b, rs, i)
		} else {
			writeTitle(&b, c)
		}
		prevCased = pyIsCased(c)
	}
	return b.String()
}

// capitalize is str.capitalize: the first character title-cased, the
// rest lower-cased.
func capitalize(s string) string {
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, c := range rs {
		if i == 0 {
			writeTitle(&b, c)
		} else {
			writeLower(&b, rs, i)
		}
	}
	return b.String()
}

// pySwapcase is str.swapcase: Uppercase characters lower-cased, Lowercase
// ones upper-cased, the rest (title-case letters among them) kept.
func pySwapcase(s string) string {
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, c := range rs {
		switch {
		case pyIsUpper(c):
			writeLower(&b, rs, i)
		case pyIsLower(c):
			writeUpper(&b, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
