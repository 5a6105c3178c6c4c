package jinja

import (
	"fmt"
	"strconv"
	"strings"
)

// Expressions.
type (
	expr      interface{ line() int }
	pos       struct{ ln int }
	constExpr struct {
		pos
		v any
	}
	nameExpr struct {
		pos
		name string
	}
	listExpr struct {
		pos
		items []expr
		tuple bool
	}
	dictExpr struct {
		pos
		keys, vals []expr
	}
	attrExpr struct {
		pos
		obj  expr
		name string
	}
	itemExpr struct {
		pos
		obj, key expr
	}
	sliceExpr struct {
		pos
		obj, start, stop, step expr // nil: omitted
	}
	callExpr struct {
		pos
		fn             expr
		args           []expr
		kwName         []string
		kwVal          []expr
		star, starStar expr // f(*args, **kwargs); nil: none
	}
	filterExpr struct {
		pos
		name string
		arg  expr // nil inside a {% filter %} block
		call callExpr
	}
	testExpr struct {
		pos
		name   string
		arg    expr
		call   callExpr
		negate bool
	}
	unaryExpr struct {
		pos
		op string // "-", "+", "not"
		x  expr
	}
	binExpr struct {
		pos
		op   string
		l, r expr
	}
	compareExpr struct {
		pos
		first expr
		ops   []string
		rest  []expr
	}
	condExpr struct {
		pos
		test, then, els expr // els nil: undefined
	}
)

func (p pos) line() int { return p.ln }

// Statements.
type (
	node     interface{}
	textNode struct{ s string }
	outNode  struct {
		pos
		x expr
	}
	ifNode struct {
		pos
		conds  []expr
		bodies [][]node
		els    []node
	}
	forNode struct {
		pos
		target    []string // one name or an unpacking tuple
		iter      expr
		cond      expr
		recursive bool
		body, els []node
	}
	setNode struct {
		pos
		target []string // names, or [ns, attr] with attr set
		attr   bool
		x      expr
	}
	setBlockNode struct {
		pos
		name    string
		filters []filterExpr
		body    []node
	}
	macroNode struct {
		pos
		name     string
		params   []string
		defaults []expr // aligned with params; nil: required
		body     []node
	}
	callBlockNode struct {
		pos
		call     *callExpr
		params   []string
		defaults []expr
		body     []node
	}
	filterBlockNode struct {
		pos
		filters []filterExpr
		body    []node
	}
	withNode struct {
		pos
		names []string
		vals  []expr
		body  []node
	}
	breakNode    struct{ pos }
	continueNode struct{ pos }
)

type parser struct {
	toks       []token
	i          int
	depth      int // nesting: blocks, subexpressions and operator chains
	loops      int // enclosing for loops (in the current macro)
	noCondExpr bool
}

// normalizeNewlines does what Jinja2's lexer does to a template first:
// every \r\n and lone \r become \n (newline_sequence) and one trailing
// newline is dropped (keep_trailing_newline is off in transformers).
func normalizeNewlines(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

func parse(src string) ([]node, error) {
	toks, err := lex(normalizeNewlines(src))
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	var body []node
	err = catch(func() {
		var end string
		body, end = p.body()
		if end != "" {
			p.fail("unexpected '%s'", end)
		}
	})
	return body, err
}

// parseError carries an *Error or a *LimitError through panics inside
// the parser.
type parseError struct{ err error }

func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(parseError)
			if !ok {
				panic(r)
			}
			err = pe.err
		}
	}()
	f()
	return nil
}

func (p *parser) cur() token  { return p.toks[p.i] }
func (p *parser) peek() token { return p.toks[min(p.i+1, len(p.toks)-1)] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if p.i < len(p.toks)-1 {
		p.i++
	}
	return t
}

func (p *parser) fail(format string, args ...any) {
	panic(parseError{&Error{Line: p.cur().line, Msg: fmt.Sprintf(format, args...)}})
}

func (p *parser) tooDeep() {
	panic(parseError{&LimitError{Line: p.cur().line, Limit: "MaxNesting", Max: maxNesting}})
}

func (p *parser) isOp(v string) bool   { t := p.cur(); return t.kind == tOp && t.val == v }
func (p *parser) isName(v string) bool { t := p.cur(); return t.kind == tName && t.val == v }

func (p *parser) skipOp(v string) bool {
	if p.isOp(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) skipName(v string) bool {
	if p.isName(v) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expectOp(v string) {
	if !p.skipOp(v) {
		p.fail("expected '%s', got %s", v, p.cur())
	}
}

func (p *parser) expectKind(k tokKind, what string) token {
	if p.cur().kind != k {
		p.fail("expected %s, got %s", what, p.cur())
	}
	return p.next()
}

func (p *parser) name() string { return p.expectKind(tName, "a name").val }

// enter and leave count nesting: each recursive production and each
// link of an operator chain (a + b + c nests as ((a + b) + c)), so that
// the tree the evaluator walks is never deeper than about 2*maxNesting.
func (p *parser) enter() {
	if p.depth++; p.depth > maxNesting {
		p.tooDeep()
	}
}
func (p *parser) leave() { p.depth-- }

// chain counts one more link of an operator chain; the caller undoes its
// links with p.depth -= links when the chain ends.
func (p *parser) chain(links *int) {
	*links++
	p.enter()
}

// body parses nodes until an end tag (returned by name: "endif", "else", …)
// or the end of the template ("").
func (p *parser) body() ([]node, string) {
	p.enter()
	defer p.leave()
	var out []node
	for {
		t := p.cur()
		switch t.kind {
		case tEOF:
			return out, ""
		case tData:
			p.next()
			out = append(out, &textNode{t.val})
		case tVarBegin:
			p.next()
			x := p.expr()
			p.expectKind(tVarEnd, "'}}'")
			out = append(out, &outNode{pos{t.line}, x})
		case tBlockBegin:
			p.next()
			kw := p.cur()
			if kw.kind != tName {
				p.fail("expected a statement, got %s", kw)
			}
			switch kw.val {
			case "endif", "else", "elif", "endfor", "endmacro", "endset", "endcall", "endfilter", "endwith", "endgeneration":
				return out, kw.val
			}
			p.next()
			out = append(out, p.statement(kw))
		default:
			p.fail("unexpected %s", t)
		}
	}
}

func (p *parser) blockEnd() { p.expectKind(tBlockEnd, "'%}'") }

// until parses a body that must end with one of the given tags.
func (p *parser) until(ends ...string) ([]node, string) {
	body, end := p.body()
	for _, e := range ends {
		if e == end {
			p.next() // the end keyword
			return body, end
		}
	}
	if end == "" {
		p.fail("missing {%% %s %%}", ends[len(ends)-1])
	}
	p.fail("unexpected '%s' (expected %v)", end, ends)
	return nil, ""
}

func (p *parser) statement(kw token) node {
	at := pos{kw.line}
	switch kw.val {
	case "if":
		n := &ifNode{pos: at}
		for {
			n.conds = append(n.conds, p.expr())
			p.blockEnd()
			body, end := p.until("elif", "else", "endif")
			n.bodies = append(n.bodies, body)
			switch end {
			case "elif":
				continue
			case "else":
				p.blockEnd()
				n.els, _ = p.until("endif")
			}
			p.blockEnd()
			return n
		}
	case "for":
		n := &forNode{pos: at}
		n.target = p.targetNames()
		if !p.skipName("in") {
			p.fail("expected 'in', got %s", p.cur())
		}
		n.iter = p.noCond(func() expr { return p.tupleExpr(true) })
		if p.skipName("if") {
			n.cond = p.expr()
		}
		n.recursive = p.skipName("recursive")
		p.blockEnd()
		var end string
		p.loops++
		n.body, end = p.until("else", "endfor")
		p.loops--
		if end == "else" {
			p.blockEnd()
			n.els, _ = p.until("endfor")
		}
		p.blockEnd()
		return n
	case "set":
		first := p.name()
		if p.isOp(".") { // namespace attribute
			p.next()
			attr := p.name()
			p.expectOp("=")
			n := &setNode{pos: at, target: []string{first, attr}, attr: true, x: p.tupleExpr(true)}
			p.blockEnd()
			return n
		}
		names := []string{first}
		for p.skipOp(",") {
			names = append(names, p.name())
		}
		if p.skipOp("=") {
			n := &setNode{pos: at, target: names, x: p.tupleExpr(true)}
			p.blockEnd()
			return n
		}
		if len(names) != 1 {
			p.fail("a block set assigns one name")
		}
		n := &setBlockNode{pos: at, name: first}
		for p.skipOp("|") {
			n.filters = append(n.filters, p.filterCall(nil))
		}
		p.blockEnd()
		n.body, _ = p.until("endset")
		p.blockEnd()
		return n
	case "macro":
		n := &macroNode{pos: at, name: p.name()}
		n.params, n.defaults = p.signature()
		p.blockEnd()
		n.body = p.macroBody("endmacro")
		p.skipName(n.name)
		p.blockEnd()
		return n
	case "call":
		n := &callBlockNode{pos: at}
		if p.isOp("(") {
			n.params, n.defaults = p.signature()
		}
		c, ok := p.expr().(*callExpr)
		if !ok {
			p.fail("{%% call %%} needs a macro call")
		}
		n.call = c
		p.blockEnd()
		n.body = p.macroBody("endcall")
		p.blockEnd()
		return n
	case "filter":
		n := &filterBlockNode{pos: at}
		n.filters = append(n.filters, p.filterCall(nil))
		for p.skipOp("|") {
			n.filters = append(n.filters, p.filterCall(nil))
		}
		p.blockEnd()
		n.body, _ = p.until("endfilter")
		p.blockEnd()
		return n
	case "with":
		n := &withNode{pos: at}
		for !(p.cur().kind == tBlockEnd) {
			if len(n.names) > 0 {
				p.expectOp(",")
			}
			n.names = append(n.names, p.name())
			p.expectOp("=")
			n.vals = append(n.vals, p.expr())
		}
		p.blockEnd()
		n.body, _ = p.until("endwith")
		p.blockEnd()
		return n
	case "generation": // transformers' extension: renders its body
		p.blockEnd()
		body, _ := p.until("endgeneration")
		p.blockEnd()
		return &withNode{pos: at, body: body}
	case "break", "continue":
		if p.loops == 0 {
			p.fail("'%s' outside loop", kw.val)
		}
		p.blockEnd()
		if kw.val == "break" {
			return &breakNode{at}
		}
		return &continueNode{at}
	case "include", "import", "from", "extends", "block":
		p.fail("{%% %s %%} is not available to chat templates (no file access)", kw.val)
	}
	p.fail("unknown statement '%s'", kw.val)
	return nil
}

// macroBody parses the body of a macro or call block: a function of its
// own, where break and continue cannot reach an enclosing loop.
func (p *parser) macroBody(end string) []node {
	saved := p.loops
	p.loops = 0
	body, _ := p.until(end)
	p.loops = saved
	return body
}

// targetNames parses a for loop's target: a name or names separated by
// commas (optionally in parentheses).
func (p *parser) targetNames() []string {
	paren := p.skipOp("(")
	names := []string{p.name()}
	for p.skipOp(",") {
		if paren && p.isOp(")") {
			break
		}
		names = append(names, p.name())
	}
	if paren {
		p.expectOp(")")
	}
	return names
}

// signature parses (a, b=default, …).
func (p *parser) signature() ([]string, []expr) {
	var names []string
	var defs []expr
	p.expectOp("(")
	for !p.skipOp(")") {
		if len(names) > 0 {
			p.expectOp(",")
			if p.skipOp(")") {
				break
			}
		}
		names = append(names, p.name())
		var d expr
		if p.skipOp("=") {
			d = p.expr()
		}
		defs = append(defs, d)
	}
	return names, defs
}

// tupleExpr parses an expression or an unparenthesized tuple (a, b).
func (p *parser) tupleExpr(allowTuple bool) expr {
	at := pos{p.cur().line}
	x := p.expr()
	if !allowTuple || !p.isOp(",") {
		return x
	}
	items := []expr{x}
	for p.skipOp(",") {
		if p.cur().kind == tBlockEnd || p.cur().kind == tVarEnd || p.isOp(")") {
			break
		}
		items = append(items, p.expr())
	}
	return &listExpr{at, items, true}
}

// noCond parses with conditional expressions off (a for loop's iterable,
// where "if" starts the loop filter).
func (p *parser) noCond(f func() expr) expr {
	saved := p.noCondExpr
	p.noCondExpr = true
	defer func() { p.noCondExpr = saved }()
	return f()
}

func (p *parser) expr() expr {
	p.enter()
	links := 0
	defer func() { p.depth -= 1 + links }()
	x := p.or()
	for p.isName("if") && !p.noCondExpr {
		at := pos{p.cur().line}
		p.chain(&links)
		p.next()
		test := p.or()
		var els expr
		if p.skipName("else") {
			els = p.expr()
		}
		x = &condExpr{at, test, x, els}
	}
	return x
}

func (p *parser) or() expr {
	links := 0
	defer func() { p.depth -= links }()
	x := p.and()
	for p.isName("or") {
		p.chain(&links)
		at := pos{p.next().line}
		x = &binExpr{at, "or", x, p.and()}
	}
	return x
}

func (p *parser) and() expr {
	links := 0
	defer func() { p.depth -= links }()
	x := p.not()
	for p.isName("and") {
		p.chain(&links)
		at := pos{p.next().line}
		x = &binExpr{at, "and", x, p.not()}
	}
	return x
}

func (p *parser) not() expr {
	if p.isName("not") {
		at := pos{p.next().line}
		p.enter()
		defer p.leave()
		return &unaryExpr{at, "not", p.not()}
	}
	return p.compare()
}

func (p *parser) compare() expr {
	at := pos{p.cur().line}
	first := p.math1()
	var opsl []string
	var rest []expr
	for {
		t := p.cur()
		switch {
		case t.kind == tOp && (t.val == "==" || t.val == "!=" || t.val == "<" || t.val == "<=" || t.val == ">" || t.val == ">="):
			p.next()
			opsl = append(opsl, t.val)
		case p.isName("in"):
			p.next()
			opsl = append(opsl, "in")
		case p.isName("not") && p.peek().kind == tName && p.peek().val == "in":
			p.next()
			p.next()
			opsl = append(opsl, "not in")
		default:
			if len(opsl) == 0 {
				return first
			}
			return &compareExpr{at, first, opsl, rest}
		}
		rest = append(rest, p.math1())
	}
}

func (p *parser) math1() expr {
	links := 0
	defer func() { p.depth -= links }()
	x := p.concat()
	for p.isOp("+") || p.isOp("-") {
		p.chain(&links)
		t := p.next()
		x = &binExpr{pos{t.line}, t.val, x, p.concat()}
	}
	return x
}

func (p *parser) concat() expr {
	links := 0
	defer func() { p.depth -= links }()
	x := p.math2()
	for p.isOp("~") {
		p.chain(&links)
		t := p.next()
		x = &binExpr{pos{t.line}, "~", x, p.math2()}
	}
	return x
}

func (p *parser) math2() expr {
	links := 0
	defer func() { p.depth -= links }()
	x := p.pow()
	for p.isOp("*") || p.isOp("/") || p.isOp("//") || p.isOp("%") {
		p.chain(&links)
		t := p.next()
		x = &binExpr{pos{t.line}, t.val, x, p.pow()}
	}
	return x
}

func (p *parser) pow() expr {
	links := 0
	defer func() { p.depth -= links }()
	x := p.unary(true)
	for p.isOp("**") {
		p.chain(&links)
		t := p.next()
		x = &binExpr{pos{t.line}, "**", x, p.unary(true)}
	}
	return x
}

func (p *parser) unary(withFilter bool) expr {
	p.enter()
	defer p.leave()
	var x expr
	if p.isOp("-") || p.isOp("+") {
		t := p.next()
		x = &unaryExpr{pos{t.line}, t.val, p.unary(false)}
	} else {
		x = p.postfix(p.primary())
	}
	if withFilter {
		x = p.filters(x)
	}
	return x
}

func (p *parser) primary() expr {
	t := p.cur()
	at := pos{t.line}
	switch t.kind {
	case tName:
		p.next()
		switch t.val {
		case "true", "True":
			return &constExpr{at, true}
		case "false", "False":
			return &constExpr{at, false}
		case "none", "None":
			return &constExpr{at, nil}
		}
		return &nameExpr{at, t.val}
	case tString:
		p.next()
		if p.cur().kind != tString {
			return &constExpr{at, t.val}
		}
		var s strings.Builder // adjacent literals concatenate
		s.WriteString(t.val)
		for p.cur().kind == tString {
			s.WriteString(p.next().val)
		}
		return &constExpr{at, s.String()}
	case tInt:
		p.next()
		v, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil { // Python's ints are unbounded: the nearest float
			f, _ := strconv.ParseFloat(t.val, 64)
			return &constExpr{at, f}
		}
		return &constExpr{at, v}
	case tFloat:
		p.next()
		v, _ := strconv.ParseFloat(t.val, 64)
		return &constExpr{at, v}
	case tOp:
		switch t.val {
		case "(":
			p.next()
			saved := p.noCondExpr
			p.noCondExpr = false
			defer func() { p.noCondExpr = saved }()
			if p.skipOp(")") {
				return &listExpr{at, nil, true}
			}
			x := p.expr()
			if p.isOp(",") {
				items := []expr{x}
				for p.skipOp(",") {
					if p.isOp(")") {
						break
					}
					items = append(items, p.expr())
				}
				x = &listExpr{at, items, true}
			}
			p.expectOp(")")
			return x
		case "[":
			p.next()
			var items []expr
			for !p.skipOp("]") {
				if len(items) > 0 {
					p.expectOp(",")
					if p.skipOp("]") {
						break
					}
				}
				items = append(items, p.expr())
			}
			return &listExpr{at, items, false}
		case "{":
			p.next()
			d := &dictExpr{pos: at}
			for !p.skipOp("}") {
				if len(d.keys) > 0 {
					p.expectOp(",")
					if p.skipOp("}") {
						break
					}
				}
				d.keys = append(d.keys, p.expr())
				p.expectOp(":")
				d.vals = append(d.vals, p.expr())
			}
			return d
		}
	}
	p.fail("unexpected %s", t)
	return nil
}

func (p *parser) postfix(x expr) expr {
	links := 0
	defer func() { p.depth -= links }()
	for {
		t := p.cur()
		if p.isOp(".") || p.isOp("[") || p.isOp("(") {
			p.chain(&links)
		}
		switch {
		case p.isOp("."):
			p.next()
			n := p.cur()
			if n.kind == tInt {
				p.next()
				v, _ := strconv.ParseInt(n.val, 10, 64)
				x = &itemExpr{pos{t.line}, x, &constExpr{pos{t.line}, v}}
				continue
			}
			x = &attrExpr{pos{t.line}, x, p.name()}
		case p.isOp("["):
			p.next()
			x = p.subscript(x, pos{t.line})
			p.expectOp("]")
		case p.isOp("("):
			x = p.call(x)
		default:
			return x
		}
	}
}

func (p *parser) subscript(obj expr, at pos) expr {
	var parts [3]expr
	k := 0
	isSlice := false
	for {
		if p.isOp(":") {
			p.next()
			isSlice = true
			if k++; k > 2 {
				p.fail("too many ':' in a slice")
			}
			continue
		}
		if p.isOp("]") {
			break
		}
		if parts[k] != nil {
			p.fail("unexpected %s in a subscript", p.cur())
		}
		parts[k] = p.expr()
	}
	if !isSlice {
		if parts[0] == nil {
			p.fail("empty subscript")
		}
		return &itemExpr{at, obj, parts[0]}
	}
	return &sliceExpr{at, obj, parts[0], parts[1], parts[2]}
}

func (p *parser) call(fn expr) *callExpr {
	c := &callExpr{pos: pos{p.cur().line}, fn: fn}
	p.callArgs(c)
	return c
}

func (p *parser) callArgs(c *callExpr) {
	p.expectOp("(")
	for !p.skipOp(")") {
		if len(c.args)+len(c.kwName) > 0 || c.star != nil || c.starStar != nil {
			p.expectOp(",")
			if p.skipOp(")") {
				break
			}
		}
		if p.isOp("**") {
			p.next()
			if c.starStar != nil {
				p.fail("only one ** argument is allowed")
			}
			c.starStar = p.expr()
			continue
		}
		if p.isOp("*") {
			p.next()
			if c.star != nil || c.starStar != nil {
				p.fail("invalid syntax for function call expression")
			}
			c.star = p.expr()
			continue
		}
		if c.starStar != nil {
			p.fail("invalid syntax for function call expression")
		}
		if p.cur().kind == tName && p.peek().kind == tOp && p.peek().val == "=" {
			c.kwName = append(c.kwName, p.next().val)
			p.next()
			c.kwVal = append(c.kwVal, p.expr())
			continue
		}
		if len(c.kwName) > 0 {
			p.fail("positional argument after keyword argument")
		}
		c.args = append(c.args, p.expr())
	}
}

// filters parses "| filter" and "is test" chains after x.
func (p *parser) filters(x expr) expr {
	links := 0
	defer func() { p.depth -= links }()
	for {
		if p.isOp("|") || p.isName("is") || p.isOp("(") {
			p.chain(&links)
		}
		switch {
		case p.isOp("|"):
			p.next()
			f := p.filterCall(x)
			x = &f
		case p.isName("is"):
			t := p.next()
			n := &testExpr{pos: pos{t.line}, arg: x, negate: p.skipName("not")}
			n.name = p.dotted()
			switch c := p.cur(); {
			case p.isOp("("):
				p.callArgs(&n.call)
			case (c.kind == tName || c.kind == tString || c.kind == tInt || c.kind == tFloat || p.isOp("[") || p.isOp("{")) &&
				!p.isName("else") && !p.isName("or") && !p.isName("and") && !p.isName("is") && !p.isName("if"):
				n.call.args = []expr{p.postfix(p.primary())}
			}
			x = n
		case p.isOp("("):
			x = p.call(x)
		default:
			return x
		}
	}
}

func (p *parser) dotted() string {
	n := p.name()
	for p.isOp(".") && p.peek().kind == tName {
		p.next()
		n += "." + p.name()
	}
	return n
}

func (p *parser) filterCall(arg expr) filterExpr {
	f := filterExpr{pos: pos{p.cur().line}, arg: arg}
	f.name = p.dotted()
	if p.isOp("(") {
		p.callArgs(&f.call)
	}
	return f
}
