// Package parallel runs data-parallel loops on a fixed set of worker
// goroutines, so the forward pass spawns no goroutine per operation.
package parallel

import "sync"

// Task is a unit of parallel work over an index range. Passing a pointer
// to a preallocated Task lets hot loops run without allocating.
type Task interface {
	Do(worker, lo, hi int)
}

// Pool is a fixed set of workers. The calling goroutine takes part in every
// Run as worker 0, so a Pool of n threads starts n-1 goroutines.
// A Pool serves one Run at a time (Run holds a lock); Run is not reentrant.
type Pool struct {
	n     int
	tasks []chan job
	wg    sync.WaitGroup
	mu    sync.Mutex
}

type job struct {
	t              Task
	worker, lo, hi int
}

// MaxThreads bounds a pool's size, so kernels can keep fixed per-worker scratch.
const MaxThreads = 64

// New returns a pool of n threads (n < 1 means 1, at most MaxThreads).
func New(n int) *Pool {
	n = min(max(n, 1), MaxThreads)
	p := &Pool{n: n, tasks: make([]chan job, n-1)}
	for i := range p.tasks {
		ch := make(chan job, 1)
		p.tasks[i] = ch
		go p.worker(ch)
	}
	return p
}

func (p *Pool) worker(ch chan job) {
	for j := range ch {
		j.t.Do(j.worker, j.lo, j.hi)
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

// funcTask adapts a closure (convenient, but allocates per call).
type funcTask func(worker, lo, hi int)

func (f funcTask) Do(w, lo, hi int) { f(w, lo, hi) }

// Run calls fn on disjoint ranges covering [0, n), split into chunks of
// whole multiples of grain (the last may be shorter), one per thread.
func (p *Pool) Run(n, grain int, fn func(lo, hi int)) {
	p.RunTask(n, grain, funcTask(func(_, lo, hi int) { fn(lo, hi) }))
}

// RunWorker is Run with the worker index (0..Threads()-1) passed to fn, so
// each worker can use its own scratch buffer.
func (p *Pool) RunWorker(n, grain int, fn func(worker, lo, hi int)) {
	p.RunTask(n, grain, funcTask(fn))
}

// RunTask runs t over [0, n) like RunWorker, without allocating.
func (p *Pool) RunTask(n, grain int, t Task) {
	if n <= 0 {
		return
	}
	if grain < 1 {
		grain = 1
	}
	chunks := (n + grain - 1) / grain
	threads := min(p.n, chunks)
	if threads <= 1 {
		t.Do(0, 0, n)
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
		p.tasks[w-1] <- job{t, w, lo, hi}
	}
	t.Do(0, 0, min(per, n))
	p.wg.Wait()
}
