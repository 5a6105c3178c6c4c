// Package parallel runs data-parallel loops on a fixed set of worker
// goroutines, so the forward pass spawns no goroutine per operation.
package parallel

import "sync"

// Pool is a fixed set of workers. The calling goroutine takes part in every
// Run as worker 0, so a Pool of n threads starts n-1 goroutines.
// A Pool serves one Run at a time; Run is not reentrant.
type Pool struct {
	n     int
	tasks []chan task
	wg    sync.WaitGroup
	mu    sync.Mutex
}

type task struct {
	fn        func(lo, hi int)
	lo, hi    int
	fnWorker  func(worker, lo, hi int)
	worker    int
	useWorker bool
}

// New returns a pool of n threads (n < 1 means 1).
func New(n int) *Pool {
	if n < 1 {
		n = 1
	}
	p := &Pool{n: n, tasks: make([]chan task, n-1)}
	for i := range p.tasks {
		ch := make(chan task, 1)
		p.tasks[i] = ch
		go p.worker(ch)
	}
	return p
}

func (p *Pool) worker(ch chan task) {
	for t := range ch {
		if t.useWorker {
			t.fnWorker(t.worker, t.lo, t.hi)
		} else {
			t.fn(t.lo, t.hi)
		}
		p.wg.Done()
	}
}

// Threads is the number of threads a Run uses.
func (p *Pool) Threads() int { return p.n }

// Close stops the workers.
func (p *Pool) Close() {
	for _, ch := range p.tasks {
		close(ch)
	}
	p.tasks = nil
}

// Run calls fn on disjoint ranges covering [0, n), split into chunks of
// whole multiples of grain (the last may be shorter), one per thread.
func (p *Pool) Run(n, grain int, fn func(lo, hi int)) {
	p.run(n, grain, task{fn: fn})
}

// RunWorker is Run with the worker index (0..Threads()-1) passed to fn, so
// each worker can use its own scratch buffer.
func (p *Pool) RunWorker(n, grain int, fn func(worker, lo, hi int)) {
	p.run(n, grain, task{fnWorker: fn, useWorker: true})
}

func (p *Pool) run(n, grain int, t task) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	chunks := (n + grain - 1) / grain
	threads := min(p.n, chunks)
	if threads <= 1 {
		call(t, 0, 0, n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	per := (chunks + threads - 1) / threads * grain
	p.wg.Add(threads - 1)
	for w := 1; w < threads; w++ {
		lo, hi := w*per, min((w+1)*per, n)
		if lo >= hi {
			p.wg.Done()
			continue
		}
		tt := t
		tt.lo, tt.hi, tt.worker = lo, hi, w
		p.tasks[w-1] <- tt
	}
	call(t, 0, 0, min(per, n))
	p.wg.Wait()
}

func call(t task, w, lo, hi int) {
	if t.useWorker {
		t.fnWorker(w, lo, hi)
	} else {
		t.fn(lo, hi)
	}
}
