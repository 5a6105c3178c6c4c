package jinja

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Limits bound what a template may do; exceeding one is an error naming
// the line, never a hang or an unbounded allocation.
type Limits struct {
	MaxOutput     int // bytes rendered (default 8 MiB)
	MaxIterations int // loop iterations and filter items over the whole render (default 1,000,000)
	MaxCallDepth  int // nested macro calls (default 64)
	MaxRange      int // items of one range() (default 100,000)
}

func (l Limits) withDefaults() Limits {
	if l.MaxOutput <= 0 {
		l.MaxOutput = 8 << 20
	}
	if l.MaxIterations <= 0 {
		l.MaxIterations = 1_000_000
	}
	if l.MaxCallDepth <= 0 {
		l.MaxCallDepth = 64
	}
	if l.MaxRange <= 0 {
		l.MaxRange = 100_000
	}
	return l
}

// Template is a parsed template, safe for concurrent renders.
type Template struct {
	body []node
	// Limits apply to every render (zero fields: defaults).
	Limits Limits
}

// Parse parses a template. Errors name the line.
func Parse(src string) (*Template, error) {
	body, err := parse(src)
	if err != nil {
		return nil, err
	}
	return &Template{body: body}, nil
}

// Render renders t with vars (template values: see DecodeJSON and FromGo).
// Now is the time strftime_now formats (zero: the clock).
func (t *Template) Render(vars *Dict, now time.Time) (out string, err error) {
	if now.IsZero() {
		now = time.Now()
	}
	r := &renderer{lim: t.Limits.withDefaults(), now: now}
	r.root = &scope{vars: map[string]any{}}
	if vars != nil {
		for _, k := range vars.keys {
			if s, ok := k.(string); ok {
				r.root.vars[s] = vars.vals[k]
			}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(*Error)
			if !ok {
				panic(p)
			}
			out, err = "", e
		}
	}()
	r.nodes(t.body, r.root)
	return r.out.String(), nil
}

type scope struct {
	vars   map[string]any
	parent *scope
}

func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

type renderer struct {
	lim   Limits
	now   time.Time
	root  *scope
	out   strings.Builder
	base  int // bytes held by enclosing capture buffers
	iters int
	depth int
}

// Loop control travels as a panic value through the body of a loop.
type loopCtl int

const (
	ctlBreak loopCtl = iota
	ctlContinue
)

func (r *renderer) fail(line int, format string, args ...any) {
	panic(&Error{Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (r *renderer) write(line int, s string) {
	if r.base+r.out.Len()+len(s) > r.lim.MaxOutput {
		r.fail(line, "output exceeds %d bytes", r.lim.MaxOutput)
	}
	r.out.WriteString(s)
}

func (r *renderer) tick(line, n int) {
	if r.iters += n; r.iters > r.lim.MaxIterations {
		r.fail(line, "more than %d loop iterations", r.lim.MaxIterations)
	}
}

// capture renders body into a string (block set, filter and call blocks,
// macro calls); the output limit counts the enclosing buffers too.
func (r *renderer) capture(body []node, sc *scope) string {
	saved := r.out
	r.base += saved.Len()
	r.out = strings.Builder{}
	defer func() { r.out = saved; r.base -= saved.Len() }()
	r.nodes(body, sc)
	return r.out.String()
}

func (r *renderer) nodes(body []node, sc *scope) {
	for _, n := range body {
		r.node(n, sc)
	}
}

func (r *renderer) node(n node, sc *scope) {
	switch n := n.(type) {
	case *textNode:
		r.write(0, n.s)
	case *outNode:
		r.write(n.ln, str(r.eval(n.x, sc)))
	case *ifNode:
		for i, c := range n.conds {
			if truth(r.eval(c, sc)) {
				r.nodes(n.bodies[i], sc)
				return
			}
		}
		r.nodes(n.els, sc)
	case *forNode:
		r.forLoop(n, sc, r.eval(n.iter, sc), 0)
	case *setNode:
		v := r.eval(n.x, sc)
		if n.attr {
			obj, _ := sc.lookup(n.target[0])
			ns, ok := obj.(*Namespace)
			if !ok {
				r.fail(n.ln, "cannot assign attribute on non-namespace object")
			}
			ns.d.Set(n.target[1], v)
			return
		}
		r.assign(n.ln, sc, n.target, v)
	case *setBlockNode:
		var v any = r.capture(n.body, sc)
		for _, f := range n.filters {
			v = r.filter(&f, v, sc)
		}
		sc.vars[n.name] = v
	case *macroNode:
		sc.vars[n.name] = r.macro(n.name, n.params, n.defaults, n.body, sc)
	case *callBlockNode:
		caller := r.macro("caller", n.params, n.defaults, n.body, sc)
		fn := r.eval(n.call.fn, sc)
		args, kw := r.args(n.call, sc)
		kw.Set("caller", caller)
		r.write(n.ln, str(r.invoke(n.ln, fn, args, kw)))
	case *filterBlockNode:
		var v any = r.capture(n.body, sc)
		for _, f := range n.filters {
			v = r.filter(&f, v, sc)
		}
		r.write(n.ln, str(v))
	case *withNode:
		inner := &scope{vars: map[string]any{}, parent: sc}
		for i, name := range n.names {
			inner.vars[name] = r.eval(n.vals[i], sc)
		}
		r.nodes(n.body, inner)
	case *breakNode:
		panic(ctlBreak)
	case *continueNode:
		panic(ctlContinue)
	default:
		r.fail(0, "unknown node %T", n)
	}
}

// assign binds names (unpacking a sequence when there are several).
func (r *renderer) assign(line int, sc *scope, names []string, v any) {
	if len(names) == 1 {
		sc.vars[names[0]] = v
		return
	}
	items, err := iterate(v)
	if err != nil {
		r.fail(line, "cannot unpack: %v", err)
	}
	if len(items) != len(names) {
		r.fail(line, "cannot unpack %d values into %d names", len(items), len(names))
	}
	for i, name := range names {
		sc.vars[name] = items[i]
	}
}

// loopInfo is the loop variable.
type loopInfo struct {
	items  []any
	i      int
	depth0 int
	recur  func(v any) string
	last   any
	lastOK bool
}

func (r *renderer) forLoop(n *forNode, sc *scope, seq any, depth int) string {
	items, err := iterate(seq)
	if err != nil {
		r.fail(n.ln, "%v", err)
	}
	inner := &scope{vars: map[string]any{}, parent: sc}
	if n.cond != nil { // filtered before the loop: loop.length counts what passes
		var kept []any
		for _, it := range items {
			r.tick(n.ln, 1)
			r.assign(n.ln, inner, n.target, it)
			if truth(r.eval(n.cond, inner)) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	if len(items) == 0 {
		r.nodes(n.els, sc)
		return ""
	}
	li := &loopInfo{items: items, depth0: depth}
	if n.recursive {
		li.recur = func(v any) string {
			if r.depth++; r.depth > r.lim.MaxCallDepth {
				r.fail(n.ln, "recursion deeper than %d", r.lim.MaxCallDepth)
			}
			defer func() { r.depth-- }()
			saved := r.out
			r.base += saved.Len()
			r.out = strings.Builder{}
			defer func() { r.out = saved; r.base -= saved.Len() }()
			r.forLoop(n, sc, v, depth+1)
			return r.out.String()
		}
	}
	inner.vars["loop"] = li
	for i, it := range items {
		r.tick(n.ln, 1)
		li.i = i
		r.assign(n.ln, inner, n.target, it)
		if stop := r.loopBody(n.body, inner); stop {
			break
		}
	}
	return ""
}

// loopBody runs one iteration; it reports a break.
func (r *renderer) loopBody(body []node, sc *scope) (stop bool) {
	defer func() {
		if p := recover(); p != nil {
			ctl, ok := p.(loopCtl)
			if !ok {
				panic(p)
			}
			stop = ctl == ctlBreak
		}
	}()
	r.nodes(body, sc)
	return false
}

// macro makes a callable that renders body with its parameters bound.
func (r *renderer) macro(name string, params []string, defaults []expr, body []node, def *scope) *callable {
	return &callable{name: name, fn: func(r *renderer, args []any, kw *Dict) (any, error) {
		if r.depth++; r.depth > r.lim.MaxCallDepth {
			return nil, fmt.Errorf("macro calls nested deeper than %d", r.lim.MaxCallDepth)
		}
		defer func() { r.depth-- }()
		sc := &scope{vars: map[string]any{}, parent: def}
		var varargs []any
		for i, a := range args {
			if i < len(params) {
				sc.vars[params[i]] = a
			} else {
				varargs = append(varargs, a)
			}
		}
		extra := NewDict()
		for _, k := range kw.keys {
			ks, _ := k.(string)
			found := false
			for _, p := range params {
				if p == ks {
					found = true
				}
			}
			if found {
				if _, dup := sc.vars[ks]; dup {
					return nil, fmt.Errorf("macro '%s' got multiple values for argument '%s'", name, ks)
				}
				sc.vars[ks] = kw.vals[k]
			} else if ks == "caller" {
				sc.vars["caller"] = kw.vals[k]
			} else {
				extra.Set(k, kw.vals[k])
			}
		}
		for i, p := range params {
			if _, ok := sc.vars[p]; ok {
				continue
			}
			if defaults[i] != nil {
				sc.vars[p] = r.eval(defaults[i], sc)
			} else {
				sc.vars[p] = Undefined{Name: p}
			}
		}
		sc.vars["varargs"] = append([]any{}, varargs...)
		sc.vars["kwargs"] = extra
		return r.capture(body, sc), nil
	}}
}

// invoke calls a callable value.
func (r *renderer) invoke(line int, fn any, args []any, kw *Dict) any {
	if l, ok := fn.(*loopInfo); ok { // loop(children) in a recursive loop
		if l.recur == nil || len(args) != 1 {
			r.fail(line, "loop() takes one argument, in a recursive loop only")
		}
		return l.recur(args[0])
	}
	c, ok := fn.(*callable)
	if !ok {
		if u, isU := fn.(Undefined); isU {
			r.fail(line, "'%s' is undefined", u.Name)
		}
		r.fail(line, "'%s' object is not callable", typeName(fn))
	}
	v, err := c.fn(r, args, kw)
	if err != nil {
		if e, ok := err.(*Error); ok {
			panic(e)
		}
		r.fail(line, "%v", err)
	}
	return v
}

func (r *renderer) args(c *callExpr, sc *scope) ([]any, *Dict) {
	args := make([]any, len(c.args))
	for i, a := range c.args {
		args[i] = r.eval(a, sc)
	}
	kw := NewDict()
	for i, k := range c.kwName {
		kw.Set(k, r.eval(c.kwVal[i], sc))
	}
	return args, kw
}

func (r *renderer) eval(x expr, sc *scope) any {
	switch x := x.(type) {
	case *constExpr:
		return x.v
	case *nameExpr:
		if v, ok := sc.lookup(x.name); ok {
			return v
		}
		if g, ok := globals[x.name]; ok {
			return g
		}
		return Undefined{Name: x.name}
	case *listExpr:
		items := make([]any, len(x.items))
		for i, e := range x.items {
			items[i] = r.eval(e, sc)
		}
		if x.tuple {
			return Tuple(items)
		}
		return items
	case *dictExpr:
		d := NewDict()
		for i, k := range x.keys {
			kv := r.eval(k, sc)
			if !hashable(kv) {
				r.fail(x.ln, "unhashable type: '%s'", typeName(kv))
			}
			d.Set(kv, r.eval(x.vals[i], sc))
		}
		return d
	case *attrExpr:
		return r.getattr(x.ln, r.eval(x.obj, sc), x.name)
	case *itemExpr:
		return r.getitem(x.ln, r.eval(x.obj, sc), r.eval(x.key, sc))
	case *sliceExpr:
		return r.slice(x, sc)
	case *callExpr:
		fn := r.eval(x.fn, sc)
		args, kw := r.args(x, sc)
		return r.invoke(x.ln, fn, args, kw)
	case *filterExpr:
		return r.filter(x, r.eval(x.arg, sc), sc)
	case *testExpr:
		v := r.test(x, sc)
		return v != x.negate
	case *unaryExpr:
		v := r.eval(x.x, sc)
		switch x.op {
		case "not":
			return !truth(v)
		case "-":
			switch n := v.(type) {
			case int64:
				return -n
			case float64:
				return -n
			case bool:
				if n {
					return int64(-1)
				}
				return int64(0)
			}
			r.undefinedCheck(x.ln, v)
			r.fail(x.ln, "bad operand type for unary -: '%s'", typeName(v))
		case "+":
			if _, ok := number(v); ok {
				return v
			}
			r.fail(x.ln, "bad operand type for unary +: '%s'", typeName(v))
		}
	case *binExpr:
		switch x.op {
		case "and":
			l := r.eval(x.l, sc)
			if !truth(l) {
				return l
			}
			return r.eval(x.r, sc)
		case "or":
			l := r.eval(x.l, sc)
			if truth(l) {
				return l
			}
			return r.eval(x.r, sc)
		case "~":
			return str(r.eval(x.l, sc)) + str(r.eval(x.r, sc))
		}
		return r.arith(x.ln, x.op, r.eval(x.l, sc), r.eval(x.r, sc))
	case *compareExpr:
		l := r.eval(x.first, sc)
		for i, op := range x.ops {
			rv := r.eval(x.rest[i], sc)
			if !r.compareOp(x.ln, op, l, rv) {
				return false
			}
			l = rv
		}
		return true
	case *condExpr:
		if truth(r.eval(x.test, sc)) {
			return r.eval(x.then, sc)
		}
		if x.els == nil {
			return Undefined{}
		}
		return r.eval(x.els, sc)
	}
	r.fail(x.line(), "cannot evaluate %T", x)
	return nil
}

// undefinedCheck fails on an Undefined operand as Jinja's Undefined does.
func (r *renderer) undefinedCheck(line int, vs ...any) {
	for _, v := range vs {
		if u, ok := v.(Undefined); ok {
			if u.Name == "" {
				r.fail(line, "undefined value used in an expression")
			}
			r.fail(line, "'%s' is undefined", u.Name)
		}
	}
}

func (r *renderer) compareOp(line int, op string, l, rv any) bool {
	switch op {
	case "==":
		return equal(l, rv)
	case "!=":
		return !equal(l, rv)
	case "in", "not in":
		in := r.contains(line, rv, l)
		return in == (op == "in")
	}
	r.undefinedCheck(line, l, rv)
	c, err := compare(l, rv, op)
	if err != nil {
		r.fail(line, "%v", err)
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// contains is Python's `x in container`.
func (r *renderer) contains(line int, container, x any) bool {
	switch c := container.(type) {
	case string:
		s, ok := x.(string)
		if !ok {
			r.undefinedCheck(line, x)
			r.fail(line, "'in <string>' requires string as left operand, not %s", typeName(x))
		}
		return strings.Contains(c, s)
	case *Dict:
		_, ok := c.Get(x)
		return ok
	case Undefined:
		return false
	}
	items, err := iterate(container)
	if err != nil {
		r.fail(line, "argument of type '%s' is not iterable", typeName(container))
	}
	for _, it := range items {
		if equal(it, x) {
			return true
		}
	}
	return false
}

func (r *renderer) arith(line int, op string, a, b any) any {
	r.undefinedCheck(line, a, b)
	ia, aInt := intVal(a)
	ib, bInt := intVal(b)
	fa, aNum := number(a)
	fb, bNum := number(b)
	if aNum && bNum {
		switch op {
		case "+", "-", "*":
			if aInt && bInt {
				switch op {
				case "+":
					return ia + ib
				case "-":
					return ia - ib
				}
				return ia * ib
			}
			switch op {
			case "+":
				return fa + fb
			case "-":
				return fa - fb
			}
			return fa * fb
		case "/":
			if fb == 0 {
				r.fail(line, "division by zero")
			}
			return fa / fb
		case "//", "%":
			if fb == 0 {
				r.fail(line, "integer division or modulo by zero")
			}
			if aInt && bInt {
				q := ia / ib
				if (ia%ib != 0) && ((ia < 0) != (ib < 0)) {
					q--
				}
				if op == "//" {
					return q
				}
				return ia - q*ib
			}
			q := math.Floor(fa / fb)
			if op == "//" {
				return q
			}
			return fa - q*fb
		case "**":
			if aInt && bInt && ib >= 0 {
				res := int64(1)
				for range min(ib, 64) {
					res *= ia
				}
				return res
			}
			return math.Pow(fa, fb)
		}
	}
	switch op {
	case "+":
		if sa, ok := a.(string); ok {
			if sb, ok := b.(string); ok {
				r.grow(line, len(sa)+len(sb))
				return sa + sb
			}
			r.fail(line, "can only concatenate str (not \"%s\") to str", typeName(b))
		}
		if la, ok := a.([]any); ok {
			if lb, ok := b.([]any); ok {
				r.grow(line, 16*(len(la)+len(lb)))
				return append(append([]any{}, la...), lb...)
			}
			r.fail(line, "can only concatenate list (not \"%s\") to list", typeName(b))
		}
		if ta, ok := a.(Tuple); ok {
			if tb, ok := b.(Tuple); ok {
				return append(append(Tuple{}, ta...), tb...)
			}
		}
	case "*":
		if s, n, ok := repeatArgs(a, b); ok {
			if n > 0 && len(s) > 0 && n > int64(r.lim.MaxOutput/len(s)) {
				r.grow(line, r.lim.MaxOutput+1)
			}
			return strings.Repeat(s, int(max(n, 0)))
		}
		if l, ok := a.([]any); ok && bInt {
			if ib > 0 && len(l) > 0 && ib > int64(r.lim.MaxOutput/(16*len(l))) {
				r.grow(line, r.lim.MaxOutput+1)
			}
			var out []any
			for range max(ib, 0) {
				out = append(out, l...)
			}
			return out
		}
	case "%":
		if s, ok := a.(string); ok {
			return r.percentFormat(line, s, b)
		}
	}
	r.fail(line, "unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	return nil
}

// grow fails before a value would exceed the output limit.
func (r *renderer) grow(line, n int) {
	if n > r.lim.MaxOutput {
		r.fail(line, "a value of %d bytes exceeds the output limit of %d", n, r.lim.MaxOutput)
	}
}

func repeatArgs(a, b any) (string, int64, bool) {
	if s, ok := a.(string); ok {
		if n, ok := intVal(b); ok {
			return s, n, true
		}
	}
	if s, ok := b.(string); ok {
		if n, ok := intVal(a); ok {
			return s, n, true
		}
	}
	return "", 0, false
}

func intVal(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// percentFormat is Python's str % args for %s, %d, %r and %%.
func (r *renderer) percentFormat(line int, f string, arg any) string {
	args := []any{arg}
	if t, ok := arg.(Tuple); ok {
		args = t
	}
	var b strings.Builder
	k := 0
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			b.WriteByte(f[i])
			continue
		}
		if i++; i >= len(f) {
			r.fail(line, "incomplete format")
		}
		if f[i] == '%' {
			b.WriteByte('%')
			continue
		}
		if k >= len(args) {
			r.fail(line, "not enough arguments for format string")
		}
		switch f[i] {
		case 's':
			b.WriteString(str(args[k]))
		case 'r':
			b.WriteString(repr(args[k]))
		case 'd', 'i':
			n, ok := number(args[k])
			if !ok {
				r.fail(line, "%%d format: a real number is required, not %s", typeName(args[k]))
			}
			fmt.Fprintf(&b, "%d", int64(n))
		default:
			r.fail(line, "unsupported format character '%c'", f[i])
		}
		k++
	}
	if k < len(args) {
		r.fail(line, "not all arguments converted during string formatting")
	}
	return b.String()
}

func (r *renderer) slice(x *sliceExpr, sc *scope) any {
	obj := r.eval(x.obj, sc)
	idx := func(e expr) (int64, bool) {
		if e == nil {
			return 0, false
		}
		v := r.eval(e, sc)
		if v == nil {
			return 0, false
		}
		n, ok := intVal(v)
		if !ok {
			r.fail(x.ln, "slice indices must be integers or None, not %s", typeName(v))
		}
		return n, true
	}
	start, hasStart := idx(x.start)
	stop, hasStop := idx(x.stop)
	step, hasStep := idx(x.step)
	if !hasStep {
		step = 1
	}
	if step == 0 {
		r.fail(x.ln, "slice step cannot be zero")
	}
	var items []any
	s, isStr := obj.(string)
	var runes []rune
	switch o := obj.(type) {
	case string:
		runes = []rune(o)
		items = make([]any, len(runes))
	case []any:
		items = o
	case Tuple:
		items = o
	case Undefined:
		r.undefinedCheck(x.ln, o)
	default:
		r.fail(x.ln, "'%s' object is not subscriptable", typeName(obj))
	}
	n := int64(len(items))
	norm := func(v int64, has bool, def int64) int64 {
		if !has {
			return def
		}
		if v < 0 {
			v += n
			if v < 0 {
				if step < 0 {
					return -1
				}
				return 0
			}
		}
		if v >= n {
			if step < 0 {
				return n - 1
			}
			return n
		}
		return v
	}
	var lo, hi int64
	if step > 0 {
		lo, hi = norm(start, hasStart, 0), norm(stop, hasStop, n)
	} else {
		lo, hi = norm(start, hasStart, n-1), norm(stop, hasStop, -1)
	}
	var out []any
	var sb strings.Builder
	for i := lo; (step > 0 && i < hi) || (step < 0 && i > hi); i += step {
		if isStr {
			sb.WriteRune(runes[i])
		} else {
			out = append(out, items[i])
		}
	}
	_ = s
	if isStr {
		return sb.String()
	}
	if _, ok := obj.(Tuple); ok {
		return Tuple(out)
	}
	if out == nil {
		out = []any{}
	}
	return out
}

func (r *renderer) getitem(line int, obj, key any) any {
	switch o := obj.(type) {
	case Undefined:
		r.undefinedCheck(line, o)
	case *Dict:
		if v, ok := o.Get(key); ok {
			return v
		}
		if ks, ok := key.(string); ok {
			return r.getattr(line, obj, ks)
		}
		return Undefined{Name: repr(key)}
	case []any, Tuple, string:
		if ks, ok := key.(string); ok {
			return r.getattr(line, obj, ks)
		}
		i, ok := intVal(key)
		if !ok {
			return Undefined{}
		}
		var n int64
		if s, isStr := o.(string); isStr {
			rs := []rune(s)
			n = int64(len(rs))
			if i < 0 {
				i += n
			}
			if i < 0 || i >= n {
				return Undefined{}
			}
			return string(rs[i])
		}
		items, _ := asSeq(o)
		n = int64(len(items))
		if i < 0 {
			i += n
		}
		if i < 0 || i >= n {
			return Undefined{}
		}
		return items[i]
	case *Namespace:
		if ks, ok := key.(string); ok {
			if v, ok := o.d.Get(ks); ok {
				return v
			}
		}
	case *loopInfo:
		if ks, ok := key.(string); ok {
			return r.getattr(line, obj, ks)
		}
	}
	return Undefined{}
}
