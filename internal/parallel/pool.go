// Package parallel runs data-parallel loops on a fixed set of worker
// goroutines, so the forward pass spawns no goroutine per operation.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Task is a unit of parallel work over an index range. Passing a pointer
// to a preallocated Task lets hot loops run without allocating.
type Task interface {
	Do(worker, lo, hi int)
}

// Pool is a fixed set of workers. The calling goroutine takes part in every
// Run as worker 0, so a Pool of n threads starts n-1 goroutines.
// A Pool serves one Run at a time (Run holds a lock); Run is not reentrant.
//
// A decode step runs a few hundred short parallel operations, each tens of
// microseconds; waking a parked goroutine costs about as much. So workers
// spin on their slot for a while after each job (SpinFor) and park only
// when no work came, and the caller spins until its workers are done.
type Pool struct {
	n       int
	slots   []*slot
	pending atomic.Int32 // jobs posted and not yet finished
	mu      sync.Mutex
	closed  atomic.Bool
}

// SpinFor is how long an idle worker polls for the next job before it
// parks: longer than the gaps inside a forward pass, short enough that an
// idle engine stops using the CPU at once.
const SpinFor = 200 * time.Microsecond

// slot is one worker's mailbox, padded to its own cache lines.
type slot struct {
	seq      atomic.Uint32 // bumped when a job is posted
	sleeping atomic.Bool
	job      job
	wake     chan struct{} // buffered: a wake-up is never lost
	_        [64]byte
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
	p := &Pool{n: n}
	for range n - 1 {
		s := &slot{wake: make(chan struct{}, 1)}
		p.slots = append(p.slots, s)
		go p.worker(s)
	}
	return p
}

func (p *Pool) worker(s *slot) {
	var last uint32 // seq starts at 0; a job may be posted before this goroutine runs
	for {
		// Wait for the next job: spin, then park.
		start := time.Now()
		for spins := 0; s.seq.Load() == last; spins++ {
			if spins&255 != 255 || time.Since(start) < SpinFor {
				continue
			}
			s.sleeping.Store(true)
			if s.seq.Load() == last { // re-check after announcing: no lost wake-up
				<-s.wake
			}
			s.sleeping.Store(false)
			start = time.Now()
		}
		last = s.seq.Load()
		if p.closed.Load() {
			return
		}
		j := s.job
		j.t.Do(j.worker, j.lo, j.hi)
		p.pending.Add(-1)
	}
}

// post hands a job to a worker and wakes it if it parked.
func (s *slot) post(j job) {
	s.job = j
	s.seq.Add(1)
	if s.sleeping.Load() {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Threads is the number of threads a Run uses.
func (p *Pool) Threads() int { return p.n }

// Close stops the workers.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Swap(true) {
		return
	}
	for _, s := range p.slots {
		s.post(job{})
	}
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
	if threads <= 1 || p.closed.Load() {
		t.Do(0, 0, n)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	per := (chunks + threads - 1) / threads * grain
	for w := 1; w < threads; w++ {
		lo, hi := w*per, min((w+1)*per, n)
		if lo >= hi {
			continue
		}
		p.pending.Add(1)
		p.slots[w-1].post(job{t, w, lo, hi})
	}
	t.Do(0, 0, min(per, n))
	for spins := 0; p.pending.Load() != 0; spins++ {
		if spins&1023 == 1023 {
			runtime.Gosched() // fewer OS threads than workers: let them run
		}
	}
}
