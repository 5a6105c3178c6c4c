// String filters: escaping, format, indent, truncate, xmlattr, title, tojson.

package jinja

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// isWordChar is Python's \w.
func isWordChar(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsNumber(c) }

// htmlEscape is markupsafe's escape of a str.
func htmlEscape(s string) string {
	if !strings.ContainsAny(s, `&<>"'`) {
		return s
	}
	return htmlReplacer.Replace(s)
}

var htmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

func (r *renderer) htmlEscape(s string) string {
	r.scan(len(s))
	out := htmlEscape(s)
	if len(out) != len(s) {
		r.alloc(len(out))
	}
	return out
}

// escape is markupsafe.escape: Markup stays, anything else is escaped.
func (r *renderer) escape(v any) markup {
	if m, ok := v.(markup); ok {
		return m
	}
	return markup(r.htmlEscape(r.str(v)))
}

func fEscape(r *renderer, v any, _ []any, _ *Dict) (any, error) { return r.escape(v), nil }

func fFormat(r *renderer, v any, args []any, kw *Dict) (any, error) {
	if len(args) > 0 && kw.Len() > 0 {
		return nil, errors.New("can't handle positional and keyword arguments at the same time")
	}
	var arg any = Tuple(args)
	if kw.Len() > 0 {
		arg = kw
	}
	return r.percentFormat(0, r.str(v), arg, false), nil
}

func fIndent(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_indent", args, kw, "width", "first", "blank")
	if err != nil {
		return nil, err
	}
	s := r.str(v)
	var ind string
	switch w := unmark(a.get(0, int64(4))).(type) {
	case string:
		ind = w
	default:
		n, ok := intVal(w)
		if !ok {
			return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", typeName(w))
		}
		n = max(n, 0)
		r.need(n)
		ind = strings.Repeat(" ", int(n))
	}
	first, blank := truth(a.get(1, false)), truth(a.get(2, false))
	r.scan(len(s))
	lines := splitLines(s+"\n", false)
	r.need(fixed(int64(len(lines)), int64(len(ind)+1), int64(len(s))))
	w := r.buf()
	if first {
		w.WriteString(ind)
	}
	for i, l := range lines {
		if i > 0 {
			w.WriteString("\n")
			if blank || l != "" {
				w.WriteString(ind)
			}
		}
		w.WriteString(l)
	}
	return w.String(), nil
}

func fToJSON(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("tojson", args, kw, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return nil, err
	}
	o := dumpOpts{itemSep: ", ", keySep: ": ", ensureASCII: truth(a.get(0, false)), sortKeys: truth(a.get(3, false))}
	if ind := a.get(1, nil); ind != nil {
		o.hasIndent, o.itemSep = true, ","
		switch x := unmark(ind).(type) {
		case string:
			o.indent = x
		default:
			n, ok := intVal(x)
			if !ok {
				return nil, fmt.Errorf("can't multiply sequence by non-int of type '%s'", typeName(x))
			}
			n = max(n, 0)
			r.need(n)
			o.indent = strings.Repeat(" ", int(n))
		}
	}
	if sep := a.get(2, nil); sep != nil {
		parts, err := r.iterate(sep)
		if err != nil || len(parts) != 2 {
			return nil, errors.New("separators must be a pair of strings")
		}
		i, ok1 := unmark(parts[0]).(string)
		k, ok2 := unmark(parts[1]).(string)
		if !ok1 || !ok2 {
			return nil, errors.New("separators must be a pair of strings")
		}
		o.itemSep, o.keySep = i, k
	}
	return r.jsonDumps(v, o)
}

func fTruncate(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_truncate", args, kw, "length", "killwords", "end", "leeway")
	if err != nil {
		return nil, err
	}
	s := r.str(v)
	length, ok1 := intVal(a.get(0, int64(255)))
	leeway, ok2 := intVal(a.get(3, int64(5)))
	end := r.str(a.get(2, "..."))
	if a.get(3, nil) == nil {
		leeway, ok2 = 5, true
	}
	if !ok1 || !ok2 {
		return nil, errors.New("length and leeway must be integers")
	}
	endLen := int64(utf8.RuneCountInString(end))
	if length < endLen {
		return nil, fmt.Errorf("expected length >= %d, got %d", endLen, length)
	}
	if leeway < 0 {
		return nil, fmt.Errorf("expected leeway >= 0, got %d", leeway)
	}
	r.scan(len(s))
	n := int64(utf8.RuneCountInString(s))
	if n <= length+leeway {
		return s, nil
	}
	cut := s[:runeOffsets(s, 0, length-endLen)[1]]
	if !truth(a.get(1, false)) {
		if i := strings.LastIndexByte(cut, ' '); i >= 0 {
			cut = cut[:i]
		}
	}
	r.alloc(len(cut) + len(end))
	return cut + end, nil
}

func fXMLAttr(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_xmlattr", args, kw, "autospace")
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		return nil, fmt.Errorf("'%s' object has no attribute 'items'", typeName(v))
	}
	w := r.buf()
	n := 0
	for _, k := range d.keys {
		val := d.val(k)
		if _, u := val.(Undefined); u || val == nil {
			continue
		}
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("expected string or bytes-like object, got '%s'", typeName(k))
		}
		if strings.ContainsAny(ks, " \t\n\r\f\v/>=") {
			return nil, fmt.Errorf("Invalid character in attribute name: %s", shortRepr(ks))
		}
		if n > 0 || truth(a.get(0, true)) {
			w.WriteString(" ")
		}
		n++
		w.WriteString(string(r.escape(ks)))
		w.WriteString(`="`)
		w.WriteString(string(r.escape(val)))
		w.WriteString(`"`)
	}
	if n == 0 {
		return "", nil
	}
	return w.String(), nil
}

// titleFilter is Jinja2's title filter: words start after -, whitespace
// and ([{<; each word's first character upper-cased (str.upper), the rest
// lowered (str.lower of the rest of the word, so a final sigma is the
// word's).
func titleFilter(s string) string {
	var b strings.Builder
	sep := func(c rune) bool { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || isSpace(c) }
	for s != "" {
		i := strings.IndexFunc(s, func(c rune) bool { return !sep(c) })
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		end := strings.IndexFunc(s, sep)
		if end < 0 {
			end = len(s)
		}
		word := []rune(s[:end])
		b.WriteString(pyUpper(string(word[0])))
		b.WriteString(pyLower(string(word[1:])))
		s = s[end:]
	}
	return b.String()
}
