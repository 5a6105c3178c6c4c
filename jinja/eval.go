// Template rendering: Parse/Render, scopes, and statement execution (output, if, for, set, macro, call, filter, with).

package jinja

import (
	"fmt"
	"strings"
	"time"
)

// Template is a parsed template, safe for concurrent renders.
type Template struct {
	body []node
	// Limits apply to every render (zero fields: defaults).
	Limits Limits
}

// Parse parses a template. Errors name the line; a template nested deeper
// than the parser allows fails with a *LimitError (MaxNesting).
func Parse(src string) (*Template, error) {
	body, err := parse(src)
	if err != nil {
		return nil, err
	}
	return &Template{body: body}, nil
}

// Render renders t with vars (template values: see DecodeJSON and FromGo).
// Now is the time strftime_now formats (zero: the clock). A template
// error is an *Error; a render stopped by t.Limits is a *LimitError
// (errors.Is(err, ErrLimit)).
func (t *Template) Render(vars *Dict, now time.Time) (out string, err error) {
	if now.IsZero() {
		now = time.Now()
	}
	r := &renderer{budget: budget{lim: t.Limits.withDefaults()}, now: now}
	r.root = &scope{vars: map[string]any{}}
	if vars != nil {
		for _, k := range vars.keys {
			if s, ok := k.(string); ok {
				r.root.vars[s] = vars.val(k)
			}
		}
	}
	defer func() {
		if p := recover(); p != nil {
			switch e := p.(type) {
			case *Error:
				out, err = "", e
			case *LimitError:
				out, err = "", e
			default:
				panic(p)
			}
		}
	}()
	r.nodes(t.body, r.root)
	if statsHook != nil {
		statsHook(r.steps, r.bytes)
	}
	return r.out.String(), nil
}

// statsHook, set by tests, sees what each render spent.
var statsHook func(steps, bytes int)

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
	budget
	now  time.Time
	root *scope
	out  strings.Builder
	base int // bytes held by enclosing capture buffers
}

// buf is a string builder charged to the render's budget.
func (r *renderer) buf() *sbuf { return &sbuf{b: &r.budget} }

// Loop control travels as a panic value through the body of a loop (the
// parser allows break and continue only there, never through a macro).
type loopCtl int

const (
	ctlBreak loopCtl = iota
	ctlContinue
)

func (r *renderer) fail(line int, format string, args ...any) {
	if line == 0 {
		line = r.line
	}
	panic(&Error{Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (r *renderer) write(line int, s string) {
	if len(s) > r.lim.MaxOutput-r.base-r.out.Len() {
		r.line = line
		r.exceed("MaxOutput", r.lim.MaxOutput)
	}
	r.alloc(len(s))
	r.out.WriteString(s)
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
	r.enter()
	for _, n := range body {
		r.node(n, sc)
	}
	r.leave()
}

func (r *renderer) node(n node, sc *scope) {
	r.step(1)
	switch n := n.(type) {
	case *textNode:
		r.write(0, n.s)
	case *outNode:
		r.write(n.ln, r.str(r.eval(n.x, sc)))
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
			if _, had := ns.d.Get(n.target[1]); !had {
				r.alloc(entryBytes)
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
		r.write(n.ln, r.str(r.invoke(n.ln, fn, args, kw)))
	case *filterBlockNode:
		var v any = r.capture(n.body, sc)
		for _, f := range n.filters {
			v = r.filter(&f, v, sc)
		}
		r.write(n.ln, r.str(v))
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
	items, err := r.iterate(v)
	if err != nil {
		r.fail(line, "cannot unpack non-iterable %s object", typeName(v))
	}
	if len(items) != len(names) {
		if len(items) > len(names) {
			r.fail(line, "too many values to unpack (expected %d)", len(names))
		}
		r.fail(line, "not enough values to unpack (expected %d, got %d)", len(names), len(items))
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
	items, err := r.iterate(seq)
	if err != nil {
		r.fail(n.ln, "%v", err)
	}
	inner := &scope{vars: map[string]any{}, parent: sc}
	if n.cond != nil { // filtered before the loop: loop.length counts what passes
		var kept []any
		for _, it := range items {
			r.step(1)
			r.assign(n.ln, inner, n.target, it)
			if truth(r.eval(n.cond, inner)) {
				kept = append(kept, it)
			}
		}
		r.alloc(slotBytes * len(kept))
		items = kept
	}
	if len(items) == 0 {
		r.nodes(n.els, sc)
		return ""
	}
	li := &loopInfo{items: items, depth0: depth}
	if n.recursive {
		li.recur = func(v any) string {
			r.call()
			defer r.ret()
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
		r.step(1)
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
	nest := r.nest
	defer func() {
		if p := recover(); p != nil {
			ctl, ok := p.(loopCtl)
			if !ok {
				panic(p)
			}
			r.nest = nest // the frames the panic left
			stop = ctl == ctlBreak
		}
	}()
	r.nodes(body, sc)
	return false
}

// macro makes a callable that renders body with its parameters bound.
func (r *renderer) macro(name string, params []string, defaults []expr, body []node, def *scope) *callable {
	return &callable{name: name, fn: func(r *renderer, args []any, kw *Dict) (any, error) {
		r.call()
		defer r.ret()
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
				sc.vars[ks] = kw.val(k)
			} else if ks == "caller" {
				sc.vars["caller"] = kw.val(k)
			} else {
				extra.Set(k, kw.val(k))
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
		r.alloc(slotBytes*(len(varargs)+len(params)) + entryBytes*extra.Len())
		sc.vars["varargs"] = append(Tuple{}, varargs...) // a tuple, as Python passes *args
		sc.vars["kwargs"] = extra
		return r.capture(body, sc), nil
	}}
}
