// Expression AST nodes and the expression parser (precedence climbing, postfix, filters, calls).

package jinja

import (
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
