package kvcache

// lru is an intrusive doubly linked list of entries 0..n-1 (blocks, or
// window slots) in release order: the head is the least recently released,
// evicted first. Links live in prev and next, -1 at the ends and off the
// list.
type lru struct {
	prev, next []int32
	head, tail int32
	n          int // entries on the list
}

func newLRU(n int) lru {
	l := lru{prev: make([]int32, n), next: make([]int32, n), head: -1, tail: -1}
	for i := range n {
		l.prev[i], l.next[i] = -1, -1
	}
	return l
}

// has reports whether entry e is on the list.
func (l *lru) has(e int32) bool { return l.prev[e] >= 0 || l.head == e }

// push appends e (the most recently released).
func (l *lru) push(e int32) {
	l.prev[e], l.next[e] = l.tail, -1
	if l.tail >= 0 {
		l.next[l.tail] = e
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

// remove unlinks e, which is on the list.
func (l *lru) remove(e int32) {
	if l.prev[e] >= 0 {
		l.next[l.prev[e]] = l.next[e]
	} else {
		l.head = l.next[e]
	}
	if l.next[e] >= 0 {
		l.prev[l.next[e]] = l.prev[e]
	} else {
		l.tail = l.prev[e]
	}
	l.prev[e], l.next[e] = -1, -1
	l.n--
}
