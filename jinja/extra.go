package jinja

import (
	"errors"
	"fmt"
	"html"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file holds the filters whose Python code is longest: pprint,
// striptags, urlencode, urlize and wordwrap, each a port of the code
// Jinja2 3.1 calls.

// pformat is pprint.pformat(v) (width 80, dicts sorted).
func (r *renderer) pformat(v any) string {
	w := r.buf()
	r.ppFormat(w, v, 0, 0, 0)
	return w.String()
}

// ppRepr is pprint's _safe_repr: repr with dict keys sorted.
func (r *renderer) ppRepr(v any, depth int) string {
	w := r.buf()
	r.ppWriteRepr(w, v, depth)
	return w.String()
}

func (r *renderer) ppWriteRepr(w *sbuf, v any, depth int) {
	if depth > maxValueDepth {
		r.exceed("MaxNesting", maxValueDepth)
	}
	r.step(1)
	switch x := v.(type) {
	case []any, Tuple:
		l, _ := asSeq(x)
		open, close := seqBrackets(x, len(l))
		w.WriteString(open)
		for i, e := range l {
			if i > 0 {
				w.WriteString(", ")
			}
			r.ppWriteRepr(w, e, depth+1)
		}
		w.WriteString(close)
	case *Dict:
		w.WriteByte('{')
		for i, k := range r.ppSortedKeys(x) {
			if i > 0 {
				w.WriteString(", ")
			}
			r.ppWriteRepr(w, k, depth+1)
			w.WriteString(": ")
			r.ppWriteRepr(w, x.val(k), depth+1)
		}
		w.WriteByte('}')
	default:
		r.writeRepr(w, v, depth, nil)
	}
}

// ppSortedKeys sorts as pprint's _safe_key: by value, else by type name.
func (r *renderer) ppSortedKeys(d *Dict) []any {
	ks := append([]any(nil), d.keys...)
	r.step(len(ks) * (1 + bitsLen(len(ks))))
	sort.SliceStable(ks, func(i, j int) bool {
		c, err := r.compare(ks[i], ks[j], "<")
		if err != nil {
			return typeName(ks[i]) < typeName(ks[j])
		}
		return c < 0
	})
	return ks
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

func (r *renderer) ppFormat(w *sbuf, v any, indent, allowance, level int) {
	if level > maxValueDepth {
		r.exceed("MaxNesting", maxValueDepth)
	}
	rep := r.ppRepr(v, level)
	maxWidth := 80 - indent - allowance
	if runeLen(rep) <= maxWidth {
		w.WriteString(rep)
		return
	}
	level++
	switch x := v.(type) {
	case *Dict:
		w.WriteByte('{')
		if x.Len() > 0 {
			ind := indent + 1
			keys := r.ppSortedKeys(x)
			for i, k := range keys {
				last := i == len(keys)-1
				kr := r.ppRepr(k, level)
				w.WriteString(kr)
				w.WriteString(": ")
				a := 1
				if last {
					a = allowance + 1
				}
				r.ppFormat(w, x.val(k), ind+runeLen(kr)+2, a, level)
				if !last {
					w.WriteString(",\n" + strings.Repeat(" ", ind))
				}
			}
		}
		w.WriteByte('}')
		return
	case []any, Tuple:
		l, _ := asSeq(x)
		open, end := seqBrackets(x, len(l))
		w.WriteString(open)
		ind := indent + 1
		for i, e := range l {
			if i > 0 {
				w.WriteString(",\n" + strings.Repeat(" ", ind))
			}
			a := 1
			if i == len(l)-1 {
				a = allowance + len(end)
			}
			r.ppFormat(w, e, ind, a, level)
		}
		w.WriteString(end)
		return
	case string:
		r.ppStr(w, x, indent, allowance, level)
		return
	}
	w.WriteString(rep)
}

var ppWordRe = regexp.MustCompile(`\S*\s*`)

func (r *renderer) ppStr(w *sbuf, s string, indent, allowance, level int) {
	if s == "" {
		w.WriteString("''")
		return
	}
	lines := splitLines(s, true)
	if level == 1 {
		indent++
		allowance++
	}
	maxWidth := 80 - indent
	maxWidth1 := maxWidth
	var chunks []string
	var rep string
	for i, line := range lines {
		r.scan(len(line))
		rep = pyQuote(line)
		if i == len(lines)-1 {
			maxWidth1 -= allowance
		}
		if runeLen(rep) <= maxWidth1 {
			chunks = append(chunks, rep)
			continue
		}
		parts := ppWordRe.FindAllString(line, -1)
		if len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		maxWidth2 := maxWidth
		current := ""
		for j, part := range parts {
			candidate := current + part
			if j == len(parts)-1 && i == len(lines)-1 {
				maxWidth2 -= allowance
			}
			if runeLen(pyQuote(candidate)) > maxWidth2 {
				if current != "" {
					chunks = append(chunks, pyQuote(current))
				}
				current = part
			} else {
				current = candidate
			}
		}
		if current != "" {
			chunks = append(chunks, pyQuote(current))
		}
	}
	if len(chunks) == 1 {
		w.WriteString(rep)
		return
	}
	if level == 1 {
		w.WriteByte('(')
	}
	for i, c := range chunks {
		if i > 0 {
			w.WriteString("\n" + strings.Repeat(" ", indent))
		}
		w.WriteString(c)
	}
	if level == 1 {
		w.WriteByte(')')
	}
}

// striptags is Markup(s).striptags(): comments, then tags removed,
// whitespace collapsed, entities unescaped.
func (r *renderer) striptags(s string) string {
	r.scan(len(s))
	cut := func(s, open, close string) string {
		var b strings.Builder
		for {
			i := strings.Index(s, open)
			if i < 0 {
				break
			}
			j := strings.Index(s[i+len(open):], close)
			if j < 0 {
				break
			}
			b.WriteString(s[:i])
			s = s[i+len(open)+j+len(close):]
		}
		b.WriteString(s)
		return b.String()
	}
	s = cut(s, "<!--", "-->")
	s = cut(s, "<", ">")
	s = strings.Join(strings.FieldsFunc(s, isSpace), " ")
	out := html.UnescapeString(s)
	r.alloc(len(out))
	return out
}

// urlQuote is Jinja2's url_quote: urllib's quote_from_bytes with "/" safe
// (or, for query strings, nothing safe and spaces as "+").
func urlQuote(s string, forQS bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-', c == '~':
			b.WriteByte(c)
		case c == '/' && !forQS:
			b.WriteByte(c)
		case c == ' ' && forQS:
			b.WriteByte('+')
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func (r *renderer) urlencode(v any) (any, error) {
	switch x := v.(type) {
	case string, markup, nil, bool, int64, float64:
		s := r.str(x)
		r.scan(len(s))
		out := urlQuote(s, false)
		r.alloc(len(out))
		return out, nil
	}
	var pairs []any
	if d, ok := v.(*Dict); ok {
		for _, k := range d.keys {
			pairs = append(pairs, Tuple{k, d.val(k)})
		}
	} else {
		items, err := r.iterate(v)
		if err != nil {
			s := r.str(v)
			return urlQuote(s, false), nil
		}
		pairs = items
	}
	w := r.buf()
	for i, p := range pairs {
		kv, err := r.iterate(p)
		if err != nil || len(kv) != 2 {
			return nil, errors.New("urlencode needs a mapping or (key, value) pairs")
		}
		if i > 0 {
			w.WriteByte('&')
		}
		w.WriteString(urlQuote(r.str(kv[0]), true))
		w.WriteByte('=')
		w.WriteString(urlQuote(r.str(kv[1]), true))
	}
	return w.String(), nil
}

// Python's \w is Unicode; RE2's is ASCII: spell it out.
const pyW = `[\p{L}\p{N}_]`

var (
	urlizeHTTP = regexp.MustCompile(`(?i)^(` +
		`(https?://|www\.)((` + `[\p{L}\p{N}_%-]` + `+\.)+)?([a-z]{2,63}|xn--[\p{L}\p{N}_%]{2,59})` +
		`|([\p{L}\p{N}_%-]{2,63}\.)+(com|net|int|edu|gov|org|info|mil)` +
		`|(https?://)((([\d]{1,3})(\.[\d]{1,3}){3})|(\[([\da-f]{0,4}:){2}([\da-f]{0,4}:?){1,6}\]))` +
		`)(?::[\d]{1,5})?(?:[/?#]\S*)?$`)
	urlizeEmail  = regexp.MustCompile(`^\S+@` + pyW + `[\p{L}\p{N}_.-]*\.` + pyW + `+$`)
	urlizeScheme = regexp.MustCompile(`^([\p{L}\p{N}_.+-]{2,}:(/){0,2})$`)
)

func fUrlize(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_urlize", args, kw, "trim_url_limit", "nofollow", "target", "rel", "extra_schemes")
	if err != nil {
		return nil, err
	}
	relParts := map[string]bool{"noopener": true}
	if rel := a.get(3, nil); rel != nil {
		for _, p := range strings.FieldsFunc(r.str(rel), isSpace) {
			relParts[p] = true
		}
	}
	if truth(a.get(1, false)) {
		relParts["nofollow"] = true
	}
	var rels []string
	for p := range relParts {
		rels = append(rels, p)
	}
	slices.Sort(rels)
	relAttr := ` rel="` + htmlEscape(strings.Join(rels, " ")) + `"`
	targetAttr := ""
	if t := a.get(2, nil); t != nil && truth(t) {
		targetAttr = ` target="` + htmlEscape(r.str(t)) + `"`
	}
	var schemes []string
	if es := a.get(4, nil); es != nil {
		items, err := r.iterate(es)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			s := r.str(it)
			if !urlizeScheme.MatchString(s) {
				return nil, fmt.Errorf("%s is not a valid URI scheme prefix.", shortRepr(s))
			}
			schemes = append(schemes, s)
		}
	}
	limit := int64(-1)
	if l := a.get(0, nil); l != nil {
		n, ok := intVal(l)
		if !ok {
			return nil, errors.New("trim_url_limit must be an integer")
		}
		limit = n
	}
	trim := func(x string) string {
		if limit >= 0 && int64(runeLen(x)) > limit {
			return x[:runeOffsets(x, 0, limit)[1]] + "..."
		}
		return x
	}
	text := htmlEscape(r.str(v))
	r.step(2 * len(text)) // regular expressions per word
	w := r.buf()
	for _, word := range splitKeepSpace(text) {
		r.step(1)
		if word == "" || isSpace(firstRune(word)) {
			w.WriteString(word)
			continue
		}
		// head: ^([(<]|&lt;)+ ; tail: ([)>.,\n]|&gt;)+$ (its tokens parse
		// unambiguously from the end).
		h := 0
		for h < len(word) {
			if word[h] == '(' || word[h] == '<' {
				h++
			} else if strings.HasPrefix(word[h:], "&lt;") {
				h += 4
			} else {
				break
			}
		}
		head, middle := word[:h], word[h:]
		t := len(middle)
		for t > 0 {
			if strings.IndexByte(")>.,\n", middle[t-1]) >= 0 {
				t--
			} else if strings.HasSuffix(middle[:t], "&gt;") {
				t -= 4
			} else {
				break
			}
		}
		middle, tail := middle[:t], middle[t:]
		for _, pair := range [][2]string{{"(", ")"}, {"<", ">"}, {"&lt;", "&gt;"}} {
			startCount := strings.Count(middle, pair[0])
			if startCount <= strings.Count(middle, pair[1]) {
				continue
			}
			// Move as many as possible from the tail to balance: up to
			// and including the k-th closer, in one step.
			end := 0
			for range min(startCount, strings.Count(tail, pair[1])) {
				end += strings.Index(tail[end:], pair[1]) + len(pair[1])
			}
			middle += tail[:end]
			tail = tail[end:]
		}
		switch {
		case urlizeHTTP.MatchString(middle):
			if strings.HasPrefix(middle, "https://") || strings.HasPrefix(middle, "http://") {
				middle = `<a href="` + middle + `"` + relAttr + targetAttr + `>` + trim(middle) + `</a>`
			} else {
				middle = `<a href="https://` + middle + `"` + relAttr + targetAttr + `>` + trim(middle) + `</a>`
			}
		case strings.HasPrefix(middle, "mailto:") && urlizeEmail.MatchString(middle[7:]):
			middle = `<a href="` + middle + `">` + middle[7:] + `</a>`
		case strings.Contains(middle, "@") && !strings.HasPrefix(middle, "www.") && !strings.HasPrefix(middle, "@") &&
			!strings.Contains(middle, ":") && urlizeEmail.MatchString(middle):
			middle = `<a href="mailto:` + middle + `">` + middle + `</a>`
		default:
			for _, sch := range schemes {
				if middle != sch && strings.HasPrefix(middle, sch) {
					middle = `<a href="` + middle + `"` + relAttr + targetAttr + `>` + middle + `</a>`
				}
			}
		}
		w.WriteString(head + middle + tail)
	}
	return w.String(), nil
}

func firstRune(s string) rune {
	c, _ := utf8.DecodeRuneInString(s)
	return c
}

// splitKeepSpace is re.split(r"(\s+)", s): words and the runs of
// whitespace between them.
func splitKeepSpace(s string) []string {
	var out []string
	start, inSpace := 0, false
	for i, c := range s {
		sp := isSpace(c)
		if i > start && sp != inSpace {
			out = append(out, s[start:i])
			start = i
		}
		inSpace = sp
	}
	out = append(out, s[start:])
	if len(out) > 0 && isSpace(firstRune(out[0])) {
		out = append([]string{""}, out...)
	}
	return out
}

func fWordwrap(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_wordwrap", args, kw, "width", "break_long_words", "wrapstring", "break_on_hyphens")
	if err != nil {
		return nil, err
	}
	width, ok := intVal(a.get(0, int64(79)))
	if !ok {
		return nil, errors.New("width must be an integer")
	}
	if width <= 0 {
		return nil, fmt.Errorf("invalid width %d (must be > 0)", width)
	}
	wrap := "\n"
	if ws := a.get(2, nil); ws != nil {
		wrap = r.str(ws)
	}
	breakLong, breakHyph := truth(a.get(1, true)), truth(a.get(3, true))
	s := r.str(v)
	r.step(2 * len(s)) // chunks, lines: a few allocations per word
	w := r.buf()
	for i, line := range splitLines(s, false) {
		if i > 0 {
			w.WriteString(wrap)
		}
		for j, l := range textWrap([]rune(line), int(min(width, int64(len(line)+1))), breakLong, breakHyph) {
			if j > 0 {
				w.WriteString(wrap)
			}
			w.WriteString(l)
		}
	}
	return w.String(), nil
}

// textWrap is textwrap.wrap(line, width, expand_tabs=False,
// replace_whitespace=False, ...).
func textWrap(text []rune, width int, breakLong, breakHyph bool) []string {
	var chunks [][]rune
	if breakHyph {
		chunks = wordsep(text)
	} else {
		for i := 0; i < len(text); {
			j := i + 1
			ws := wrapSpace(text[i])
			for j < len(text) && wrapSpace(text[j]) == ws {
				j++
			}
			chunks = append(chunks, text[i:j])
			i = j
		}
	}
	blank := func(c []rune) bool {
		for _, x := range c {
			if !isSpace(x) {
				return false
			}
		}
		return true
	}
	slices.Reverse(chunks)
	var lines []string
	for len(chunks) > 0 {
		var cur [][]rune
		curLen := 0
		if blank(chunks[len(chunks)-1]) && len(lines) > 0 {
			chunks = chunks[:len(chunks)-1]
		}
		for len(chunks) > 0 {
			l := len(chunks[len(chunks)-1])
			if curLen+l > width {
				break
			}
			cur = append(cur, chunks[len(chunks)-1])
			chunks = chunks[:len(chunks)-1]
			curLen += l
		}
		if len(chunks) > 0 && len(chunks[len(chunks)-1]) > width {
			space := max(width-curLen, 1)
			if breakLong {
				chunk := chunks[len(chunks)-1]
				end := space
				if breakHyph && len(chunk) > space {
					h := -1
					for k := min(space, len(chunk)) - 1; k >= 0; k-- {
						if chunk[k] == '-' {
							h = k
							break
						}
					}
					if h > 0 && slices.ContainsFunc(chunk[:h], func(c rune) bool { return c != '-' }) {
						end = h + 1
					}
				}
				cur = append(cur, chunk[:end])
				chunks[len(chunks)-1] = chunk[end:]
			} else if len(cur) == 0 {
				cur = append(cur, chunks[len(chunks)-1])
				chunks = chunks[:len(chunks)-1]
			}
		}
		if len(cur) > 0 && blank(cur[len(cur)-1]) {
			cur = cur[:len(cur)-1]
		}
		if len(cur) > 0 {
			var b strings.Builder
			for _, c := range cur {
				b.WriteString(string(c))
			}
			lines = append(lines, b.String())
		}
	}
	return lines
}

// wrapSpace is textwrap's whitespace: \t \n \v \f \r and space.
func wrapSpace(c rune) bool { return c == ' ' || c >= '\t' && c <= '\r' }

func isLetterW(c rune) bool   { return isWordChar(c) && !unicode.IsDigit(c) }
func isWordPunct(c rune) bool { return isWordChar(c) || strings.ContainsRune(`!"'&.,?`, c) }

// wordsep splits as textwrap's wordsep_re: runs of whitespace, em-dashes
// between words, and words broken after their hyphens.
func wordsep(t []rune) [][]rune {
	at := func(i int) rune {
		if i < 0 || i >= len(t) {
			return -1
		}
		return t[i]
	}
	dashes := func(i int) int { // length of the run of '-' at i
		n := 0
		for i+n < len(t) && t[i+n] == '-' {
			n++
		}
		return n
	}
	var out [][]rune
	for i := 0; i < len(t); {
		if wrapSpace(t[i]) {
			j := i
			for j < len(t) && wrapSpace(t[j]) {
				j++
			}
			out = append(out, t[i:j])
			i = j
			continue
		}
		if t[i] == '-' && i > 0 && isWordPunct(t[i-1]) {
			if n := dashes(i); n >= 2 && i+n < len(t) && isWordChar(t[i+n]) {
				out = append(out, t[i:i+n])
				i += n
				continue
			}
		}
		end := len(t)
		for j := i + 1; j <= len(t); j++ {
			// hyphenated word: t[j-1] ... then '-' at j
			if j < len(t) && t[j] == '-' && !wrapSpace(t[j]) {
				lb := (isLetterW(at(j-2)) && isLetterW(at(j-1))) ||
					(isLetterW(at(j-3)) && at(j-2) == '-' && isLetterW(at(j-1)))
				la := isLetterW(at(j+1)) && (isLetterW(at(j+2)) || at(j+2) == '-' && isLetterW(at(j+3)))
				if lb && la {
					end = j + 1
					break
				}
			}
			if j == len(t) || wrapSpace(t[j]) {
				end = j
				break
			}
			if isWordPunct(at(j-1)) && dashes(j) >= 2 && isWordChar(at(j+dashes(j))) {
				end = j
				break
			}
		}
		out = append(out, t[i:end])
		i = end
	}
	return out
}

// seqBrackets are how Python's repr opens and closes a list, or a tuple of
// n items (a one-item tuple ends ",)").
func seqBrackets(x any, n int) (open, end string) {
	if _, t := x.(Tuple); !t {
		return "[", "]"
	}
	if n == 1 {
		return "(", ",)"
	}
	return "(", ")"
}
