// Expression evaluation: calls, operators, comparisons, slicing and item lookup.

package jinja

import (
	"math"
	"strings"
	"unicode/utf8"
)

// invoke calls a callable value.
func (r *renderer) invoke(line int, fn any, args []any, kw *Dict) any {
	if l, ok := fn.(*loopInfo); ok { // loop(children) in a recursive loop
		if l.recur == nil || len(args) != 1 {
			r.fail(line, "loop() takes one argument, in a recursive loop only")
		}
		return l.recur(args[0])
	}
	var c *callable
	switch f := fn.(type) {
	case *callable:
		c = f
	case *joiner:
		c = f.call()
	case Undefined:
		r.undefinedCheck(line, f)
	}
	if c == nil {
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
	r.alloc(slotBytes*len(args) + entryBytes*len(c.kwName))
	if c.star != nil { // f(*seq)
		v := r.eval(c.star, sc)
		items, err := r.iterate(v)
		if err != nil {
			r.fail(c.ln, "argument after * must be an iterable, not %s", typeName(v))
		}
		r.alloc(slotBytes * len(items))
		args = append(args, items...)
	}
	if c.starStar != nil { // f(**mapping)
		v := r.eval(c.starStar, sc)
		d, ok := v.(*Dict)
		if !ok {
			r.fail(c.ln, "argument after ** must be a mapping, not %s", typeName(v))
		}
		r.alloc(entryBytes * d.Len())
		for _, k := range d.keys {
			if _, isStr := k.(string); !isStr {
				r.fail(c.ln, "keywords must be strings")
			}
			if _, dup := kw.Get(k); dup {
				r.fail(c.ln, "got multiple values for keyword argument '%s'", k)
			}
			kw.Set(k, d.val(k))
		}
	}
	return args, kw
}

func (r *renderer) eval(x expr, sc *scope) any {
	r.step(1)
	r.enter()
	r.line = x.line()
	v := r.eval1(x, sc)
	r.leave()
	return v
}

func (r *renderer) eval1(x expr, sc *scope) any {
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
		r.alloc(slotBytes * len(x.items))
		items := make([]any, len(x.items))
		for i, e := range x.items {
			items[i] = r.eval(e, sc)
		}
		if x.tuple {
			return Tuple(items)
		}
		return items
	case *dictExpr:
		r.alloc(entryBytes * len(x.keys))
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
				if n == math.MinInt64 {
					r.fail(x.ln, "%s", errIntOverflow)
				}
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
			if b, ok := v.(bool); ok {
				n, _ := intVal(b)
				return n
			}
			if _, ok := number(v); ok {
				return v
			}
			r.undefinedCheck(x.ln, v)
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
			return r.concat(r.str(r.eval(x.l, sc)), r.str(r.eval(x.r, sc)))
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

// concat joins two strings, charged.
func (r *renderer) concat(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	r.alloc(len(a) + len(b))
	return a + b
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
		return r.equal(l, rv)
	case "!=":
		return !r.equal(l, rv)
	case "in", "not in":
		in := r.contains(line, rv, l)
		return in == (op == "in")
	}
	r.undefinedCheck(line, l, rv)
	c, err := r.compare(l, rv, op)
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
	switch c := unmark(container).(type) {
	case string:
		s, ok := unmark(x).(string)
		if !ok {
			r.undefinedCheck(line, x)
			r.fail(line, "'in <string>' requires string as left operand, not %s", typeName(x))
		}
		r.scan(len(c))
		return strings.Contains(c, s)
	case *Dict:
		if !hashable(x) {
			r.fail(line, "unhashable type: '%s'", typeName(x))
		}
		_, ok := c.Get(x)
		return ok
	case Undefined:
		return false
	}
	items, err := r.iterate(container)
	if err != nil {
		r.fail(line, "argument of type '%s' is not iterable", typeName(container))
	}
	for _, it := range items {
		if r.equal(it, x) {
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
				n, ok := intOp(op, ia, ib)
				if !ok {
					r.fail(line, "%s", errIntOverflow)
				}
				return n
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
				if aInt && bInt {
					r.fail(line, "integer division or modulo by zero")
				}
				r.fail(line, "float floor division by zero")
			}
			if aInt && bInt {
				if ia == math.MinInt64 && ib == -1 {
					r.fail(line, "%s", errIntOverflow)
				}
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
			m := math.Mod(fa, fb)
			if m != 0 && (m < 0) != (fb < 0) {
				m += fb
			}
			return m
		case "**":
			if aInt && bInt && ib >= 0 {
				n, ok := intPow(ia, ib)
				if !ok {
					r.fail(line, "%s", errIntOverflow)
				}
				return n
			}
			if fa == 0 && fb < 0 {
				r.fail(line, "0.0 cannot be raised to a negative power")
			}
			if fa < 0 && fb != math.Trunc(fb) {
				r.fail(line, "a negative number raised to a fractional power is complex, which Loom does not support")
			}
			return math.Pow(fa, fb)
		}
	}
	switch op {
	case "+":
		if ma, ok := a.(markup); ok && isText(b) { // Markup escapes what joins it
			return markup(r.concat(string(ma), string(r.escape(b))))
		}
		if mb, ok := b.(markup); ok && isText(a) {
			return markup(r.concat(string(r.escape(a)), string(mb)))
		}
		if sa, ok := a.(string); ok {
			if sb, ok := b.(string); ok {
				return r.concat(sa, sb)
			}
			r.fail(line, "can only concatenate str (not \"%s\") to str", typeName(b))
		}
		if la, ok := a.([]any); ok {
			if lb, ok := b.([]any); ok {
				r.alloc(slotBytes * (len(la) + len(lb)))
				return append(append([]any{}, la...), lb...)
			}
			r.fail(line, "can only concatenate list (not \"%s\") to list", typeName(b))
		}
		if ta, ok := a.(Tuple); ok {
			if tb, ok := b.(Tuple); ok {
				r.alloc(slotBytes * (len(ta) + len(tb)))
				return append(append(Tuple{}, ta...), tb...)
			}
			r.fail(line, "can only concatenate tuple (not \"%s\") to tuple", typeName(b))
		}
	case "*":
		seq, n, ok := repeatArgs(a, b)
		if !ok {
			break
		}
		n = max(n, 0)
		switch s := seq.(type) {
		case string, markup:
			t, _ := scalarStr(s)
			r.need(fixed(int64(len(t)), n, 0))
			r.alloc(len(t) * int(n))
			out := strings.Repeat(t, int(n))
			if _, m := s.(markup); m {
				return markup(out)
			}
			return out
		case []any, Tuple:
			l, _ := asSeq(s)
			r.need(fixed(int64(len(l))*slotBytes, n, 0))
			r.alloc(len(l) * int(n) * slotBytes)
			out := make([]any, 0, len(l)*int(n))
			for range n {
				out = append(out, l...)
			}
			if _, t := s.(Tuple); t {
				return Tuple(out)
			}
			return out
		}
	case "%":
		if s, ok := a.(string); ok {
			return r.percentFormat(line, s, b, false)
		}
		if m, ok := a.(markup); ok {
			return markup(r.percentFormat(line, string(m), b, true))
		}
	}
	r.fail(line, "unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
	return nil
}

// errIntOverflow: Loom's integers are 64-bit where Python's are unbounded,
// so a result that does not fit fails instead of wrapping around.
const errIntOverflow = "integer overflow: the result does not fit in 64 bits"

// intOp is a+b, a-b or a*b, and whether it fits in an int64.
func intOp(op string, a, b int64) (int64, bool) {
	switch op {
	case "+":
		c := a + b
		return c, (c > a) == (b > 0)
	case "-":
		c := a - b
		return c, (c < a) == (b > 0)
	}
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	return c, c/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
}

// intPow is a**b (b ≥ 0), and whether it fits in an int64.
func intPow(a, b int64) (int64, bool) {
	switch {
	case b == 0 || a == 1:
		return 1, true
	case a == 0:
		return 0, true
	case a == -1:
		if b%2 == 0 {
			return 1, true
		}
		return -1, true
	}
	res := int64(1)
	for range b { // |a| ≥ 2: overflows within 64 steps
		var ok bool
		if res, ok = intOp("*", res, a); !ok {
			return 0, false
		}
	}
	return res, true
}

func isText(v any) bool {
	switch v.(type) {
	case string, markup:
		return true
	}
	return false
}

// repeatArgs recognizes seq * n and n * seq.
func repeatArgs(a, b any) (any, int64, bool) {
	isSeq := func(v any) bool {
		switch v.(type) {
		case string, markup, []any, Tuple:
			return true
		}
		return false
	}
	if isSeq(a) {
		if n, ok := intVal(b); ok {
			return a, n, true
		}
	}
	if isSeq(b) {
		if n, ok := intVal(a); ok {
			return b, n, true
		}
	}
	return nil, 0, false
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

func (r *renderer) slice(x *sliceExpr, sc *scope) any {
	obj := unmark(r.eval(x.obj, sc))
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
			r.fail(x.ln, "slice indices must be integers or None or have an __index__ method")
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
	var runes []rune
	s, isStr := obj.(string)
	var n int64
	switch o := obj.(type) {
	case string:
		r.scan(len(o))
		r.alloc(4 * utf8.RuneCountInString(o))
		runes = []rune(o)
		n = int64(len(runes))
	case []any:
		items = o
		n = int64(len(o))
	case Tuple:
		items = o
		n = int64(len(o))
	case Undefined:
		r.undefinedCheck(x.ln, o)
	default:
		r.fail(x.ln, "'%s' object is not subscriptable", typeName(obj))
	}
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
	count := int64(0)
	if step > 0 && hi > lo {
		count = (hi - lo + step - 1) / step
	} else if step < 0 && lo > hi {
		count = (lo - hi + (-step) - 1) / (-step)
	}
	if isStr {
		if step == 1 { // a substring: no copy
			return string(runes[lo : lo+count])
		}
		sb := r.buf()
		for k, i := int64(0), lo; k < count; k, i = k+1, i+step {
			sb.WriteRune(runes[i])
		}
		_ = s
		return sb.String()
	}
	r.alloc(slotBytes * int(count))
	out := make([]any, 0, count)
	for k, i := int64(0), lo; k < count; k, i = k+1, i+step {
		out = append(out, items[i])
	}
	if _, ok := obj.(Tuple); ok {
		return Tuple(out)
	}
	return out
}

// runeAt is s[i] for a Python index i (negative: from the end), walking
// from the nearer end; the walk is charged.
func (r *renderer) runeAt(s string, i int64) (string, bool) {
	if i < 0 {
		for k := len(s); k > 0; {
			_, size := utf8.DecodeLastRuneInString(s[:k])
			if i++; i == 0 {
				r.scan(len(s) - k)
				return s[k-size : k], true
			}
			k -= size
		}
		r.scan(len(s))
		return "", false
	}
	for k := 0; k < len(s); {
		_, size := utf8.DecodeRuneInString(s[k:])
		if i == 0 {
			r.scan(k)
			return s[k : k+size], true
		}
		i--
		k += size
	}
	r.scan(len(s))
	return "", false
}

func (r *renderer) getitem(line int, obj, key any) any {
	switch o := unmark(obj).(type) {
	case Undefined:
		r.undefinedCheck(line, o)
	case *Dict:
		if v, ok := o.Get(key); ok {
			return v
		}
		if ks, ok := key.(string); ok {
			return r.getattr(line, obj, ks)
		}
		return Undefined{Name: shortRepr(key)}
	case []any, Tuple, string:
		if ks, ok := key.(string); ok {
			return r.getattr(line, obj, ks)
		}
		i, ok := intVal(key)
		if !ok {
			return Undefined{}
		}
		if s, isStr := o.(string); isStr {
			c, ok := r.runeAt(s, i)
			if !ok {
				return Undefined{}
			}
			return c
		}
		items, _ := asSeq(o)
		n := int64(len(items))
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
	case *loopInfo, *cycler:
		if ks, ok := key.(string); ok {
			return r.getattr(line, obj, ks)
		}
	}
	return Undefined{}
}
