// Sequence filters: length, dictsort, groupby, min/max, map, select/reject, batch, slice, sort, sum, unique.

package jinja

import (
	"errors"
	"fmt"
	"slices"
)

func fLength(r *renderer, v any, _ []any, _ *Dict) (any, error) {
	n, err := r.length(v)
	return int64(n), err
}

func fDictsort(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_dictsort", args, kw, "case_sensitive", "by", "reverse")
	if err != nil {
		return nil, err
	}
	d, ok := v.(*Dict)
	if !ok {
		if u, isU := v.(Undefined); isU {
			r.undefinedCheck(0, u)
		}
		return nil, fmt.Errorf("'%s' object has no attribute 'items'", typeName(v))
	}
	pos := 0
	switch by := a.get(1, "key"); by {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, errors.New(`You can only sort by either "key" or "value"`)
	}
	lower := !truth(a.get(0, false))
	r.alloc(3 * slotBytes * d.Len())
	out := make([]any, 0, d.Len())
	for _, k := range d.keys {
		out = append(out, Tuple{k, d.val(k)})
	}
	err = r.sortAny(out, truth(a.get(2, false)), func(it any) any {
		x := it.(Tuple)[pos]
		if lower {
			return ignoreCase(x)
		}
		return x
	})
	return out, err
}

func fGroupby(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_groupby", args, kw, "!attribute", "default", "case_sensitive")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	def := a.get(1, nil)
	lower := !truth(a.get(2, false))
	key := r.attrGetter(a[0], lower, def)
	sorted := r.list(items)
	if err := r.sortAny(sorted, false, key); err != nil {
		return nil, err
	}
	var out []any
	var group []any
	var gkey any
	flush := func() {
		if group == nil {
			return
		}
		grouper := gkey
		if lower {
			grouper = r.attrGetter(a[0], false, def)(group[0])
		}
		out = append(out, Tuple{grouper, group})
	}
	for i, it := range sorted {
		k := key(it)
		if i == 0 || !r.equal(k, gkey) {
			flush()
			group, gkey = nil, k
		}
		group = append(group, it)
	}
	flush()
	r.alloc(3 * slotBytes * len(out))
	if out == nil {
		out = []any{}
	}
	return out, nil
}

func fMinMax(name string, dir int) filterFn {
	return func(r *renderer, v any, args []any, kw *Dict) (any, error) {
		a, err := bind("do_"+name, args, kw, "case_sensitive", "attribute")
		if err != nil {
			return nil, err
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return Undefined{Name: name}, nil
		}
		key := r.attrGetter(a.get(1, nil), !truth(a.get(0, false)), nil)
		best, bestKey := items[0], key(items[0])
		for _, it := range items[1:] {
			k := key(it)
			c, err := r.compare(k, bestKey, map[int]string{1: ">", -1: "<"}[dir])
			if err != nil {
				return nil, err
			}
			if c*dir > 0 {
				best, bestKey = it, k
			}
		}
		return best, nil
	}
}

func fMap(r *renderer, v any, args []any, kw *Dict) (any, error) {
	if !truth(v) { // Jinja's map yields nothing for a false value (None too)
		return &generator{name: "sync_do_map"}, nil
	}
	var f func(any) (any, error)
	if attr, ok := kw.Get("attribute"); ok && len(args) == 0 {
		def, _ := kw.Get("default")
		for _, k := range kw.keys {
			if k != "attribute" && k != "default" {
				return nil, fmt.Errorf("Unexpected keyword argument %s", shortRepr(k))
			}
		}
		g := r.attrGetter(attr, false, def)
		f = func(x any) (any, error) { return g(x), nil }
	} else {
		if len(args) == 0 {
			return nil, errors.New("map requires a filter argument")
		}
		name, _ := unmark(args[0]).(string)
		fn, ok := filters[name]
		if !ok {
			return nil, fmt.Errorf("No filter named %s.", shortRepr(args[0]))
		}
		rest := args[1:]
		f = func(x any) (any, error) {
			return r.applyFilter(0, name, fn, x, rest, kw), nil
		}
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	r.alloc(slotBytes * len(items))
	out := make([]any, len(items))
	for i, it := range items {
		r.step(1)
		if out[i], err = f(it); err != nil {
			return nil, err
		}
	}
	return &generator{items: out, name: "sync_do_map"}, nil
}

// fSelect builds select/reject/selectattr/rejectattr.
func fSelect(name string, reject, attr bool) filterFn {
	return func(r *renderer, v any, args []any, kw *Dict) (any, error) {
		if !truth(v) { // as in Jinja, a false value (None too) selects nothing
			return &generator{name: "select_or_reject"}, nil
		}
		get := func(x any) any { return x }
		if attr {
			if len(args) == 0 {
				return nil, errors.New("Missing parameter for attribute name")
			}
			get = r.attrGetter(args[0], false, nil)
			args = args[1:]
		}
		var test testFn
		var targs []any
		if len(args) > 0 {
			tname, _ := unmark(args[0]).(string)
			t, ok := tests[tname]
			if !ok {
				return nil, fmt.Errorf("No test named %s.", shortRepr(args[0]))
			}
			test, targs = t, args[1:]
		}
		items, err := r.iterate(v)
		if err != nil {
			return nil, err
		}
		var out []any
		for _, it := range items {
			r.step(1)
			x := get(it)
			ok := truth(x)
			if test != nil {
				if ok, err = test(r, x, targs); err != nil {
					return nil, err
				}
			}
			if ok != reject {
				out = append(out, it)
			}
		}
		r.alloc(slotBytes * len(out))
		return &generator{items: out, name: "select_or_reject"}, nil
	}
}

func fBatch(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_batch", args, kw, "!linecount", "fill_with")
	if err != nil {
		return nil, err
	}
	n, ok := intVal(a[0])
	if !ok {
		return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	fill := a.get(1, nil)
	var out []any
	var tmp []any
	for _, it := range items {
		r.step(1)
		if int64(len(tmp)) == n {
			out = append(out, tmp)
			tmp = nil
		}
		tmp = append(tmp, it)
	}
	if tmp != nil {
		if fill != nil && int64(len(tmp)) < n {
			extra := n - int64(len(tmp))
			r.need(fixed(extra, slotBytes, 0))
			r.alloc(int(extra) * slotBytes)
			for range extra {
				tmp = append(tmp, fill)
			}
		}
		out = append(out, tmp)
	}
	r.alloc(slotBytes * (len(out) + len(items)))
	for i, b := range out {
		if b == nil {
			out[i] = []any{}
		}
	}
	return &generator{items: out, name: "do_batch"}, nil
}

func fSlice(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("sync_do_slice", args, kw, "!slices", "fill_with")
	if err != nil {
		return nil, err
	}
	slices, ok := intVal(a[0])
	if !ok {
		return nil, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	if slices == 0 {
		return nil, errors.New("integer division or modulo by zero")
	}
	fill := a.get(1, nil)
	n := int64(len(items))
	per := n / slices
	extra := n % slices
	if (n%slices != 0) && ((n < 0) != (slices < 0)) {
		per--
		extra = n - per*slices
	}
	r.need(fixed(max(slices, 0), slotBytes*2, int64(len(items))*slotBytes))
	r.step(int(max(slices, 0)))
	var out []any
	offset := int64(0)
	for i := int64(0); i < slices; i++ {
		start := offset + i*per
		if i < extra {
			offset++
		}
		end := offset + (i+1)*per
		part := []any{}
		if start < end {
			part = append(part, items[start:end]...)
		}
		if fill != nil && i >= extra {
			part = append(part, fill)
		}
		out = append(out, part)
	}
	r.alloc(slotBytes * (len(out) + len(items)))
	return &generator{items: out, name: "sync_do_slice"}, nil
}

func fSort(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_sort", args, kw, "reverse", "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	out := r.list(items)
	r.step(len(out) * (1 + bitsLen(len(out))))
	key := r.multiAttrGetter(a.get(2, nil), !truth(a.get(1, false)))
	return out, r.sortAny(out, truth(a.get(0, false)), key)
}

func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

func fSum(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_sum", args, kw, "attribute", "start")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	total := a.get(1, int64(0))
	if isText(total) {
		return nil, errors.New("sum() can't sum strings [use ''.join(seq) instead]")
	}
	var get func(any) any
	if attr := a.get(0, nil); attr != nil {
		get = r.attrGetter(attr, false, nil)
	}
	for _, it := range items {
		r.step(1)
		if get != nil {
			it = get(it)
		}
		total = r.arith(0, "+", total, it)
	}
	return total, nil
}

func fUnique(r *renderer, v any, args []any, kw *Dict) (any, error) {
	a, err := bind("do_unique", args, kw, "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := r.iterate(v)
	if err != nil {
		return nil, err
	}
	key := r.attrGetter(a.get(1, nil), !truth(a.get(0, false)), nil)
	seen := map[any]bool{}
	var out []any
	for _, it := range items {
		k := key(it)
		if !hashable(k) {
			return nil, fmt.Errorf("unhashable type: '%s'", typeName(k))
		}
		nk := normKey(k)
		if s, ok := nk.(string); ok {
			r.scan(len(s))
		}
		if !seen[nk] {
			seen[nk] = true
			out = append(out, it)
		}
	}
	r.alloc((slotBytes + entryBytes) * len(out))
	return &generator{items: out, name: "sync_do_unique"}, nil
}

// sortAny sorts items stably by key (Python's sorted: reverse keeps the
// order of equal items), charging the comparisons.
func (r *renderer) sortAny(items []any, reverse bool, key func(any) any) error {
	keys := make([]any, len(items))
	for i, it := range items {
		keys[i] = key(it)
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var err error
	slices.SortStableFunc(idx, func(a, b int) int {
		if err != nil {
			return 0
		}
		c, e := r.compare(keys[a], keys[b], "<")
		if e != nil {
			err = e
			return 0
		}
		if reverse {
			return -c
		}
		return c
	})
	if err != nil {
		return err
	}
	out := make([]any, len(items))
	for i, j := range idx {
		out[i] = items[j]
	}
	copy(items, out)
	return nil
}
