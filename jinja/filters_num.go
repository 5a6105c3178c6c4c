// Numeric filters and Python-compatible int/float conversions.

package jinja

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

func fFilesize(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_filesizeformat", args, kw, "binary")
	if err != nil {
		return nil, err
	}
	b, ok := toFloat(v)
	if !ok {
		return nil, fmt.Errorf("could not convert %s to float: %s", typeName(v), shortRepr(v))
	}
	binary := truth(a.get(0, false))
	base := 1000.0
	prefixes := []string{"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"}
	if binary {
		base = 1024
		prefixes = []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"}
	}
	switch {
	case b == 1:
		return "1 Byte", nil
	case b < base:
		if math.IsNaN(b) || math.IsInf(b, 0) {
			return nil, errors.New("cannot convert float to integer")
		}
		return fmt.Sprintf("%d Bytes", int64(b)), nil
	}
	var unit float64
	for i, p := range prefixes {
		unit = math.Pow(base, float64(i+2))
		if b < unit {
			return strconv.FormatFloat(base*b/unit, 'f', 1, 64) + " " + p, nil
		}
	}
	return pyFixed(base*b/unit, 1) + " " + prefixes[len(prefixes)-1], nil
}

// pyFixed is Python's f"{x:.{prec}f}".
func pyFixed(x float64, prec int) string {
	switch {
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	case math.IsNaN(x):
		return "nan"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// toFloat is Python's float(v).
func toFloat(v any) (float64, bool) {
	switch x := unmark(v).(type) {
	case bool, int64, float64:
		return number(x)
	case string:
		return parsePyFloat(x)
	}
	return 0, false
}

// parsePyFloat parses Python float() text: surrounding whitespace,
// underscores between digits, inf/nan/infinity, no hex.
func parsePyFloat(s string) (float64, bool) {
	s = strings.TrimFunc(s, isSpace)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '_' {
			if i == 0 || i == len(body)-1 || !isDigit(body[i-1]) || !isDigit(body[i+1]) {
				return 0, false
			}
			continue
		}
		if !isDigit(c) && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true // Python: inf for huge, 0 for tiny
		}
		return 0, false
	}
	return f, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// toInt is Jinja2's do_int conversion (false: use the default).
func toInt(v any, base int64) (int64, bool) {
	switch x := unmark(v).(type) {
	case int64:
		return x, true
	case bool:
		return intVal(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) >= 1<<63 {
			return 0, false
		}
		return int64(x), true
	case string:
		if n, ok := parsePyInt(x, base); ok {
			return n, true
		}
		if f, ok := parsePyFloat(x); ok && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 1<<63 {
			return int64(f), true
		}
	}
	return 0, false
}

// parsePyInt is Python's int(s, base).
func parsePyInt(s string, base int64) (int64, bool) {
	s = strings.TrimFunc(s, isSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	lower := strings.ToLower(s)
	prefixed := func(p string, b int64) bool {
		return strings.HasPrefix(lower, p) && (base == b || base == 0)
	}
	switch {
	case prefixed("0x", 16), prefixed("0o", 8), prefixed("0b", 2):
		base = map[byte]int64{'x': 16, 'o': 8, 'b': 2}[lower[1]]
		s = strings.TrimPrefix(s[2:], "_")
	case base == 0:
		base = 10
		if strings.Trim(s, "0_") == "" && s != "" {
			return 0, true
		}
		if strings.HasPrefix(s, "0") {
			return 0, false
		}
	}
	if base < 2 || base > 36 || s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), int(base), 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func fRound(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_round", args, kw, "precision", "method")
	if err != nil {
		return nil, err
	}
	prec, ok := intVal(a.get(0, int64(0)))
	if !ok {
		return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
	}
	method := a.get(1, "common")
	if method != "common" && method != "ceil" && method != "floor" {
		return nil, errors.New("method must be common, ceil or floor")
	}
	f, ok := number(v)
	if !ok {
		return nil, fmt.Errorf("type %s doesn't define __round__ method", typeName(v))
	}
	if method == "common" {
		if n, isInt := intVal(v); isInt { // round(int, n) is an int
			if prec >= 0 {
				return n, nil
			}
			if prec < -18 {
				return int64(0), nil
			}
			p := int64(math.Pow10(int(-prec)))
			q := n / p
			rem := n - q*p
			if rem < 0 {
				q--
				rem += p
			}
			if 2*rem > p || (2*rem == p && q%2 != 0) {
				q++
			}
			return q * p, nil
		}
		return roundHalfEven(f, int(prec)), nil
	}
	p := math.Pow(10, float64(prec))
	if method == "ceil" {
		return math.Ceil(f*p) / p, nil
	}
	return math.Floor(f*p) / p, nil
}

// roundHalfEven is Python's round(x, digits) for a float: the correctly
// rounded decimal.
func roundHalfEven(x float64, digits int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if digits >= 0 {
		if digits > 330 {
			return x
		}
		f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', digits, 64), 64)
		return f
	}
	if digits < -330 {
		return math.Copysign(0, x)
	}
	p := math.Pow(10, float64(-digits))
	return math.RoundToEven(x/p) * p
}

func absInt(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
