package grammar

import (
	"fmt"
	"slices"
)

// flat is a grammar's rules laid out for matching: every rule's elements
// in one slice, each rule's alternatives located, and the code point
// intervals within which every character class answers alike.
type flat struct {
	elems  []elem
	start  []int32   // rule id → first element
	alts   [][]int32 // rule id → first element of each alternative
	bounds []uint32  // sorted interval starts
	work   int       // units of work parse-time analysis spent (tests check it stays linear)
}

// saturating bound for the static counts below
const countCap = 1 << 40

// analyze lays the rules out and checks, in time linear in the grammar
// and without recursion:
//   - left recursion (a rule reaching itself without consuming input:
//     the matcher would expand it forever). Unlike llama.cpp's check,
//     nullability is computed to a fixed point, so left recursion through
//     a rule that is only indirectly empty is caught too;
//   - MaxStacks: how many parse stacks the expansion of one position can
//     produce (the terminal positions reachable without consuming input,
//     counted per path; nested nullable repetitions multiply);
//   - MaxStackDepth: how many rule references one expansion opens.
func (g *Grammar) analyze() error {
	f := &g.flat
	n := len(g.rules)
	for _, r := range g.rules {
		f.start = append(f.start, int32(len(f.elems)))
		f.elems = append(f.elems, r...)
	}
	f.alts = make([][]int32, n)
	for id, r := range g.rules {
		s := f.start[id]
		f.alts[id] = append(f.alts[id], s)
		for i, e := range r {
			if e.typ == eAlt {
				f.alts[id] = append(f.alts[id], s+int32(i)+1)
			}
		}
	}
	for i, e := range f.elems {
		switch e.typ {
		case eChar, eCharNot, eCharAlt:
			hi := e.val
			if i+1 < len(f.elems) && f.elems[i+1].typ == eRngUpper {
				hi = f.elems[i+1].val
			}
			f.bounds = append(f.bounds, e.val, hi+1)
		}
	}
	slices.Sort(f.bounds)
	f.bounds = slices.Compact(f.bounds)
	f.work += len(f.elems)

	// Nullable rules, by a worklist: each alternative made only of rule
	// references counts the references not yet known nullable.
	nullable := make([]bool, n)
	var pending []int32         // per alternative: references left
	var altRule []int32         // per alternative: its rule
	users := make([][]int32, n) // rule → alternatives (all refs) that reference it
	var queue []int32
	for id := range g.rules {
		for _, a := range f.alts[id] {
			refs, terminal := 0, false
			for p := a; !f.isEnd(p); p++ {
				if f.elems[p].typ != eRef {
					terminal = true
					break
				}
				refs++
			}
			if terminal {
				continue
			}
			ai := int32(len(pending))
			pending = append(pending, int32(refs))
			altRule = append(altRule, int32(id))
			if refs == 0 && !nullable[id] {
				nullable[id] = true
				queue = append(queue, int32(id))
			}
			for p := a; !f.isEnd(p); p++ {
				users[f.elems[p].val] = append(users[f.elems[p].val], ai)
			}
		}
	}
	for len(queue) > 0 {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		for _, ai := range users[r] {
			f.work++
			if pending[ai]--; pending[ai] == 0 && !nullable[altRule[ai]] {
				nullable[altRule[ai]] = true
				queue = append(queue, altRule[ai])
			}
		}
	}
	users = nil

	// Left edges: the references in an alternative's nullable prefix
	// (and the first one after it). Depth-first over them, iteratively:
	// a back edge is left recursion; the post-order lets the counts below
	// be computed bottom-up.
	left := make([][]int32, n)
	for id := range g.rules {
		for _, a := range f.alts[id] {
			for p := a; !f.isEnd(p); p++ {
				e := f.elems[p]
				f.work++
				if e.typ != eRef {
					break
				}
				left[id] = append(left[id], int32(e.val))
				if !nullable[e.val] {
					break
				}
			}
		}
	}
	state := make([]uint8, n) // 0 new, 1 on the path, 2 done
	order := make([]int32, 0, n)
	type visit struct{ rule, next int32 }
	var path []visit
	for id := range g.rules {
		if state[id] != 0 {
			continue
		}
		state[id] = 1
		path = append(path[:0], visit{int32(id), 0})
		for len(path) > 0 {
			top := &path[len(path)-1]
			if int(top.next) == len(left[top.rule]) {
				state[top.rule] = 2
				order = append(order, top.rule)
				path = path[:len(path)-1]
				continue
			}
			to := left[top.rule][top.next]
			top.next++
			f.work++
			switch state[to] {
			case 1:
				return fmt.Errorf("grammar: left recursion in rule %q (it can reach itself without consuming input)", g.names[to])
			case 0:
				state[to] = 1
				path = append(path, visit{to, 0})
			}
		}
	}

	// leaves[r]: the terminal stacks expanding rule r reaches (before its
	// end), counted per path (an upper bound of the distinct ones); depth[r]:
	// the most references its expansion opens on one stack. Bottom-up in
	// the post-order: an alternative's count needs only its left edges'.
	leaves := make([]int64, n)
	depth := make([]int64, n)
	for _, r := range order {
		var l, d int64
		for _, a := range f.alts[r] {
			for p := a; !f.isEnd(p); p++ {
				e := f.elems[p]
				f.work++
				if e.typ != eRef {
					l = min(l+1, countCap)
					break
				}
				l = min(l+leaves[e.val], countCap)
				open := int64(1)
				if f.isEnd(p + 1) {
					open = 0 // a tail reference replaces its caller's frame
				}
				d = max(d, min(open+depth[e.val], countCap))
				if !nullable[e.val] {
					break
				}
			}
		}
		leaves[r], depth[r] = l, d
	}
	// The same from every position an expansion can start at (after a
	// character, or where a finished reference resumes): backwards over
	// each alternative, so the whole pass is linear.
	var maxStacks, maxDepth int64
	for id, r := range g.rules {
		s := f.start[id]
		var l, d int64 // counts from the position after the current one
		for i := len(r) - 1; i >= 0; i-- {
			e := r[i]
			f.work++
			switch e.typ {
			case eEnd, eAlt:
				l, d = 0, 0
				continue
			case eRef:
				open := int64(1)
				if f.isEnd(s + int32(i) + 1) {
					open = 0
				}
				if nullable[e.val] {
					l, d = min(l+leaves[e.val], countCap), max(d, min(open+depth[e.val], countCap))
				} else {
					l, d = leaves[e.val], min(open+depth[e.val], countCap)
				}
			default:
				l, d = 1, 0
			}
			maxStacks, maxDepth = max(maxStacks, l), max(maxDepth, d)
		}
	}
	if maxStacks > int64(g.lim.MaxStacks) {
		return &LimitError{"MaxStacks", g.lim.MaxStacks, fmt.Sprintf("one step of the grammar can reach %s parse stacks (nested optional repetitions multiply them)", countString(maxStacks))}
	}
	if maxDepth > int64(g.lim.MaxStackDepth) {
		return &LimitError{"MaxStackDepth", g.lim.MaxStackDepth, fmt.Sprintf("one step of the grammar opens %s nested rule references", countString(maxDepth))}
	}
	return nil
}

func countString(n int64) string {
	if n >= countCap {
		return "over 2^40"
	}
	return fmt.Sprint(n)
}

func (f *flat) isEnd(pos int32) bool {
	t := f.elems[pos].typ
	return t == eEnd || t == eAlt
}
