package parallel

import (
	"sync/atomic"
	"testing"
)

func TestPoolCoversRange(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		p := New(threads)
		for _, n := range []int{0, 1, 5, 16, 17, 1000} {
			for _, grain := range []int{1, 4, 16} {
				hits := make([]int32, n)
				p.RunWorker(n, grain, func(w, lo, hi int) {
					if w < 0 || w >= threads {
						t.Errorf("worker %d", w)
					}
					for i := lo; i < hi; i++ {
						atomic.AddInt32(&hits[i], 1)
					}
				})
				for i, h := range hits {
					if h != 1 {
						t.Fatalf("threads %d n %d grain %d: index %d run %d times", threads, n, grain, i, h)
					}
				}
			}
		}
		p.Close()
	}
}
