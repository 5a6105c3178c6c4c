package kernels

import "syscall"

// threadCPU is the CPU time the calling thread has used, in nanoseconds
// (benchmarks lock their thread and report it beside the wall time, which
// other processes on a busy machine inflate).
func threadCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
