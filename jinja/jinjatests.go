// Jinja tests (the "is" operator): the registry and its helpers.

package jinja

import (
	"errors"
	"fmt"
)

// testFn is a test (`x is name(args)`).
type testFn func(r *renderer, v any, args []any) (bool, error)

var tests map[string]testFn

func isType(f func(any) bool) testFn {
	return func(_ *renderer, v any, _ []any) (bool, error) { return f(v), nil }
}

func init() {
	cmp := func(op string) testFn {
		return func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, fmt.Errorf("test takes one argument (%d given)", len(args))
			}
			return r.compareOp(0, op, v, args[0]), nil
		}
	}
	mod2 := func(want int64) testFn {
		return func(r *renderer, v any, args []any) (bool, error) {
			return r.equal(r.arith(0, "%", unmark(v), int64(2)), want), nil
		}
	}
	tests = map[string]testFn{
		"defined":   isType(func(v any) bool { _, u := v.(Undefined); return !u }),
		"undefined": isType(func(v any) bool { _, u := v.(Undefined); return u }),
		"none":      isType(func(v any) bool { return v == nil }),
		"boolean":   isType(func(v any) bool { _, ok := v.(bool); return ok }),
		"true":      isType(func(v any) bool { b, ok := v.(bool); return ok && b }),
		"false":     isType(func(v any) bool { b, ok := v.(bool); return ok && !b }),
		"integer":   isType(func(v any) bool { _, ok := v.(int64); return ok }),
		"float":     isType(func(v any) bool { _, ok := v.(float64); return ok }),
		"number": isType(func(v any) bool {
			switch v.(type) {
			case int64, float64, bool:
				return true
			}
			return false
		}),
		"string":  isType(isText),
		"mapping": isType(func(v any) bool { _, ok := v.(*Dict); return ok }),
		"escaped": isType(func(v any) bool { _, ok := v.(markup); return ok }),
		"iterable": isType(func(v any) bool {
			switch v.(type) {
			case string, markup, []any, Tuple, *Dict, *generator, Undefined, *loopInfo:
				return true
			}
			return false
		}),
		"sequence": isType(func(v any) bool {
			switch v.(type) {
			case string, markup, []any, Tuple, *Dict, Undefined:
				return true
			}
			return false
		}),
		"callable": isType(func(v any) bool {
			switch v.(type) {
			case *callable, *joiner, *loopInfo, Undefined:
				return true
			}
			return false
		}),
		"filter": isType(func(v any) bool { s, ok := unmark(v).(string); _, f := filters[s]; return ok && f }),
		"test":   isType(func(v any) bool { s, ok := unmark(v).(string); _, f := tests[s]; return ok && f }),
		"sameas": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("sameas takes one argument")
			}
			return sameAs(v, args[0]), nil
		},
		"odd":  mod2(1),
		"even": mod2(0),
		"divisibleby": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("divisibleby takes one argument")
			}
			return r.equal(r.arith(0, "%", unmark(v), unmark(args[0])), int64(0)), nil
		},
		"lower": func(r *renderer, v any, _ []any) (bool, error) { return strIs(r.str(v), "islower"), nil },
		"upper": func(r *renderer, v any, _ []any) (bool, error) { return strIs(r.str(v), "isupper"), nil },
		"eq":    cmp("=="), "equalto": cmp("=="), "==": cmp("=="),
		"ne": cmp("!="), "!=": cmp("!="),
		"lt": cmp("<"), "lessthan": cmp("<"), "<": cmp("<"),
		"le": cmp("<="), "<=": cmp("<="),
		"gt": cmp(">"), "greaterthan": cmp(">"), ">": cmp(">"),
		"ge": cmp(">="), ">=": cmp(">="),
		"in": func(r *renderer, v any, args []any) (bool, error) {
			if len(args) != 1 {
				return false, errors.New("in takes one argument")
			}
			return r.contains(0, args[0], v), nil
		},
	}
}

// sameAs approximates Python's `is`: singletons, small ints and equal
// strings are the same object; containers only when they are.
func sameAs(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y && x >= -5 && x <= 256
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && len(x) > 0 && &x[0] == &y[0]
	case *Dict, *Namespace, *callable, *generator, *loopInfo, *cycler, *joiner:
		return a == b
	}
	return false
}

func (r *renderer) test(x *testExpr, sc *scope) bool {
	t, ok := tests[x.name]
	if !ok {
		r.fail(x.ln, "No test named '%s'.", x.name)
	}
	v := r.eval(x.arg, sc)
	args, _ := r.args(&x.call, sc)
	r.line = x.ln
	res, err := t(r, v, args)
	if err != nil {
		r.fail(x.ln, "%v", err)
	}
	return res
}
