package grammar

import (
	"strconv"
	"strings"
)

// intRange is an integer interval, either end optional.
type intRange struct {
	lo, hi       int64
	hasLo, hasHi bool
}

// buildMinMaxInt spells the integers of r digit by digit, as llama.cpp's
// _build_min_max_int does: no leading zeros, at most decimalsLeft digits
// where a side is unbounded. Its recursion (and uniform's, and
// sameLengthAtLeast's) goes one level per digit: the schema converter
// admits bounds up to 1e15 only, so at most 16 levels, and the GBNF it
// writes nests as many parentheses, within Parse's MaxNesting.
func buildMinMaxInt(r intRange, out *strings.Builder, decimalsLeft int, topLevel bool) {
	digitRange := func(from, to byte) {
		out.WriteByte('[')
		out.WriteByte(from)
		if from != to {
			out.WriteByte('-')
			out.WriteByte(to)
		}
		out.WriteByte(']')
	}
	moreDigits := func(lo, hi int) { // hi < 0: unbounded
		out.WriteString("[0-9]")
		if lo == hi && lo == 1 {
			return
		}
		out.WriteString("{" + strconv.Itoa(lo))
		if hi != lo {
			out.WriteString(",")
			if hi >= 0 {
				out.WriteString(strconv.Itoa(hi))
			}
		}
		out.WriteString("}")
	}
	var uniform func(from, to string)
	uniform = func(from, to string) {
		i := 0
		for i < len(from) && i < len(to) && from[i] == to[i] {
			i++
		}
		if i > 0 {
			out.WriteString(`"` + from[:i] + `"`)
		}
		if i < len(from) && i < len(to) {
			if i > 0 {
				out.WriteString(" ")
			}
			subLen := len(from) - i - 1
			if subLen > 0 {
				fromSub, toSub := from[i+1:], to[i+1:]
				zeros, nines := strings.Repeat("0", subLen), strings.Repeat("9", subLen)
				toReached := false
				out.WriteString("(")
				if fromSub == zeros {
					digitRange(from[i], to[i]-1)
					out.WriteString(" ")
					moreDigits(subLen, subLen)
				} else {
					out.WriteString("[" + from[i:i+1] + "] (")
					uniform(fromSub, nines)
					out.WriteString(")")
					if from[i] < to[i]-1 {
						out.WriteString(" | ")
						if toSub == nines {
							digitRange(from[i]+1, to[i])
							toReached = true
						} else {
							digitRange(from[i]+1, to[i]-1)
						}
						out.WriteString(" ")
						moreDigits(subLen, subLen)
					}
				}
				if !toReached {
					out.WriteString(" | ")
					digitRange(to[i], to[i])
					out.WriteString(" ")
					uniform(zeros, toSub)
				}
				out.WriteString(")")
			} else {
				out.WriteString("[" + from[i:i+1] + "-" + to[i:i+1] + "]")
			}
		}
	}
	if r.hasLo && r.hasHi {
		lo, hi := r.lo, r.hi
		if lo < 0 && hi < 0 {
			out.WriteString(`"-" (`)
			buildMinMaxInt(intRange{lo: -hi, hi: -lo, hasLo: true, hasHi: true}, out, decimalsLeft, true)
			out.WriteString(")")
			return
		}
		if lo < 0 {
			out.WriteString(`"-" (`)
			buildMinMaxInt(intRange{lo: 0, hi: -lo, hasLo: true, hasHi: true}, out, decimalsLeft, true)
			out.WriteString(") | ")
			lo = 0
		}
		minS, maxS := strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)
		for digits := len(minS); digits < len(maxS); digits++ {
			uniform(minS, strings.Repeat("9", digits))
			minS = "1" + strings.Repeat("0", digits)
			out.WriteString(" | ")
		}
		uniform(minS, maxS)
		return
	}
	less := max(decimalsLeft-1, 1)
	if r.hasLo {
		// Numbers ≥ lo. (llama.cpp's recursion here drops the leading
		// zeros of the remaining digits, so with minimum 608 it accepts
		// 68; this construction is exact.)
		lo := r.lo
		if lo < 0 {
			out.WriteString(`"-" (`)
			buildMinMaxInt(intRange{lo: 0, hi: -lo, hasLo: true, hasHi: true}, out, decimalsLeft, true)
			out.WriteString(") | [0] | [1-9] ")
			moreDigits(0, decimalsLeft-1)
			return
		}
		atLeast(strconv.FormatInt(lo, 10), out, decimalsLeft)
		return
	}
	if r.hasHi {
		hi := r.hi
		if hi >= 0 {
			if topLevel {
				out.WriteString(`"-" [1-9] `)
				moreDigits(0, less)
				out.WriteString(" | ")
			}
			buildMinMaxInt(intRange{lo: 0, hi: hi, hasLo: true, hasHi: true}, out, decimalsLeft, true)
		} else {
			out.WriteString(`"-" (`)
			atLeast(strconv.FormatInt(-hi, 10), out, decimalsLeft)
			out.WriteString(")")
		}
	}
}

// atLeast spells the numbers (no leading zeros, at most maxDigits digits)
// not below min, a non-negative decimal: longer numbers, or numbers of
// min's length that are not smaller digit by digit.
func atLeast(min string, out *strings.Builder, maxDigits int) {
	if min == "0" {
		out.WriteString("[0] | [1-9] [0-9]{0," + strconv.Itoa(maxDigits-1) + "}")
		return
	}
	var alts []string
	if n := len(min); n < maxDigits {
		alts = append(alts, "[1-9] [0-9]{"+strconv.Itoa(n)+","+strconv.Itoa(maxDigits-1)+"}")
	}
	alts = append(alts, sameLengthAtLeast(min))
	out.WriteString(strings.Join(alts, " | "))
}

// sameLengthAtLeast spells the digit strings of len(r) digits that are ≥ r.
func sameLengthAtLeast(r string) string {
	first, rest := r[0], r[1:]
	var alts []string
	if first < '9' {
		a := "[" + string(first+1) + "-9]"
		if len(rest) > 0 {
			a += " [0-9]{" + strconv.Itoa(len(rest)) + "}"
		}
		alts = append(alts, a)
	}
	eq := `"` + string(first) + `"`
	if len(rest) > 0 {
		eq += " " + sameLengthAtLeast(rest)
	}
	alts = append(alts, eq)
	return "(" + strings.Join(alts, " | ") + ")"
}
