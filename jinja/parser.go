// Statement AST nodes, the parser core, and statement parsing.

package jinja

import (
	"fmt"
	"strings"
)

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
