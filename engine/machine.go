package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// Machine is the roofline's two roofs as Loom's kernels reach them on
// this machine.
type Machine struct {
	BandwidthGBs float64 `json:"bandwidth_gbs"`
	PeakGFLOPS   float64 `json:"peak_gflops"`
	Threads      int     `json:"threads"`
	Method       string  `json:"method"`
}

var (
	measured   = map[int]Machine{}
	measuredMu sync.Mutex
)

// MeasureMachine estimates the roofline's two roofs with Loom's own kernels on the
// given threads (about half a second, remembered per process):
//   - bandwidth: an F16 matrix × vector over a 256 MiB matrix (far larger
//     than any cache), the access pattern of decode; best of 3;
//   - peak: the Q8_0 matrix × 16 tokens of a prefill on a 1 MiB matrix that
//     stays in L2, repeated (2 operations per multiply-add).
//
// Both are what Loom's kernels reach, not vendor numbers: the roofs a
// forward pass can actually approach.
func MeasureMachine(threads int) Machine {
	threads = max(threads, 1)
	measuredMu.Lock()
	defer measuredMu.Unlock()
	if m, ok := measured[threads]; ok {
		return m
	}
	p := parallel.New(threads)
	defer p.Close()
	m := Machine{Threads: threads}
	// [rows, cols] F16 with a nonzero pattern: untouched pages would all
	// map the kernel's zero page and read from cache.
	run := func(t tensor.DType, rows, cols, n, reps, passes int) float64 {
		tr := t.Traits()
		data := make([]byte, rows*cols/tr.BlockSize*tr.TypeSize)
		for i := 0; i < len(data); i += 2 {
			data[i], data[i+1] = byte(i>>1), 0x3c // F16 values (and scales) near 1.0
		}
		mat, err := kernels.NewMatrix("calibration", t, rows, cols, data)
		if err != nil {
			panic(err) // sizes are constants here
		}
		x := make([]float32, n*cols)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		out := make([]float32, n*rows)
		act := make([]byte, mat.ActBytes(n))
		best := 0.0
		for range passes {
			t0 := time.Now()
			for range reps {
				kernels.MatMul(p, mat, x, n, out, act)
			}
			if s := time.Since(t0).Seconds(); best == 0 || s < best {
				best = s
			}
		}
		return best / float64(reps)
	}
	const bigRows, bigCols = 32768, 4096 // 256 MiB
	s := run(tensor.F16, bigRows, bigCols, 1, 1, 3)
	m.BandwidthGBs = float64(bigRows*bigCols*2) / s / 1e9
	const smallRows, smallCols, tokens = 512, 2048, 16 // 1.06 MiB of Q8_0
	s = run(tensor.Q8_0, smallRows, smallCols, tokens, 8, 3)
	m.PeakGFLOPS = float64(2*smallRows*smallCols*tokens) / s / 1e9
	m.Method = fmt.Sprintf("measured now on %d thread(s) with Loom's kernels: bandwidth = F16 matrix×vector over 256 MiB; peak = Q8_0 matrix × 16 tokens in cache", threads)
	measured[threads] = m
	return m
}

// InstructionPeaks is one core's throughput of the instructions the
// prefill kernels are built on, in billions of operations per second (2
// per multiply-add): 8-bit multiply-adds (AVX-512 VNNI, quantized
// weights) and float32 FMAs (F16/F32 weights); 0 where the CPU lacks them.
// Prefill GFLOP/s compare against these times the threads.
func InstructionPeaks() (int8GOPS, f32GFLOPS float64) { return kernels.InstructionPeaks() }
