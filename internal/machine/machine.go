// Package machine measures the machine a roofline is drawn against: read
// bandwidth, the instruction peaks of the cores, and what Loom's own
// kernel reaches.
package machine

import (
	"fmt"
	"sync"
	"time"

	"github.com/loom-inference/loom/internal/hugepage"
	"github.com/loom-inference/loom/internal/kernels"
	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// Machine is one measurement of the machine, which loom bench --bandwidth
// and loom explain both report against: the roofline's memory roof (read
// bandwidth) and compute roofs (the instruction peaks of the threads'
// cores), and what Loom's own prefill kernel reaches in cache.
type Machine struct {
	// BandwidthGBs is the read bandwidth decode-shaped products reach:
	// one token against twelve 5632×2048 F16 matrices in turn (264 MiB, far
	// larger than any cache).
	BandwidthGBs float64 `json:"bandwidth_gbs"`
	// PeakGFLOPS is the compute roof: the highest instruction peak below
	// (2 operations per multiply-add), or KernelGFLOPS on a CPU without
	// the instructions measured. For one model's weights see For.
	PeakGFLOPS float64 `json:"peak_gflops"`
	// Int8GOPS is the 8-bit multiply-add peak of the threads' cores
	// (AVX-512 VNNI VPDPBUSD: quantized weights); 0 where the CPU lacks it.
	Int8GOPS float64 `json:"int8_gops"`
	// F32GFLOPS is the float32 FMA peak of the threads' cores (AVX-512
	// VFMADD231PS: F16/F32 weights); 0 where not measured.
	F32GFLOPS float64 `json:"f32_gflops"`
	// KernelGFLOPS is what Loom's Q8_0 product of 16 tokens reaches on a
	// matrix that stays in L2: a kernel's rate, below the roofs.
	KernelGFLOPS float64 `json:"kernel_gflops"`
	Threads      int     `json:"threads"`
	Method       string  `json:"method"`
	// CPU names the processor measured (kernels.CPUInfo's line).
	CPU string `json:"cpu,omitempty"`
}

// For is the machine with PeakGFLOPS the compute roof of a model's
// weights: the 8-bit peak for quantized weights (their products are 8-bit
// integer multiply-adds), the float32 FMA peak for F16/F32/BF16 ones;
// unchanged when that peak was not measured.
func (m Machine) For(quantized bool) Machine {
	switch {
	case quantized && m.Int8GOPS > 0:
		m.PeakGFLOPS = m.Int8GOPS
		m.Method += "; compute roof for quantized weights: the 8-bit VNNI peak"
	case !quantized && m.F32GFLOPS > 0:
		m.PeakGFLOPS = m.F32GFLOPS
		m.Method += "; compute roof for float weights: the float32 FMA peak"
	}
	return m
}

// CPU describes the processor: vendor, model and the instruction sets the
// kernels choose between (what a measurement belongs to).
func CPU() kernels.CPUInfo { return kernels.CPU() }

var (
	measured   = map[int]Machine{}
	measuredMu sync.Mutex

	peaksOnce       sync.Once
	peakI8, peakF32 float64
)

// corePeaks is one core's instruction peaks, measured once per process.
func corePeaks() (int8GOPS, f32GFLOPS float64) {
	peaksOnce.Do(func() { peakI8, peakF32 = kernels.InstructionPeaks() })
	return peakI8, peakF32
}

// Measure measures the machine on the given threads (about half a
// second, remembered per process and thread count):
//   - bandwidth: one token against twelve 5632×2048 F16 matrices in turn
//     (a 1B model's FFN shape, 264 MiB), the access pattern of decode;
//     best of 3, on huge pages where the kernel offers them. One matrix of 256 MiB (32768×4096) read 15% slower on one
//     Zen 4 core than these, and slower than decode itself;
//   - compute roofs: one core's VPDPBUSD and FMA throughput
//     (InstructionPeaks, measured once per process) times the
//     threads;
//   - Loom's kernel rate: the Q8_0 matrix × 16 tokens of a prefill on a
//     1 MiB matrix that stays in L2, repeated (2 operations per
//     multiply-add).
func Measure(threads int) Machine {
	threads = max(threads, 1)
	measuredMu.Lock()
	defer measuredMu.Unlock()
	if m, ok := measured[threads]; ok {
		return m
	}
	meter := NewMeter(threads)
	defer meter.Close()
	m := MeasureWith(meter)
	measured[threads] = m
	return m
}

// MeasureWith is Measure on meter's threads, its bandwidth read by meter:
// a caller that holds a Meter (loom bench --bandwidth) allocates no second
// set of matrices. Not remembered.
func MeasureWith(meter *Meter) Machine {
	p := meter.pr.p
	threads := p.Threads()
	m := Machine{Threads: threads, CPU: CPU().String()}
	m.BandwidthGBs = meter.Bandwidth()
	const smallRows, smallCols, tokens = 512, 2048, 16 // 1.06 MiB of Q8_0
	s := newProducts(p, tensor.Q8_0, smallRows, smallCols, 1, tokens).best(8, 3)
	m.KernelGFLOPS = float64(2*smallRows*smallCols*tokens) / s / 1e9
	i8, f32 := corePeaks()
	m.Int8GOPS, m.F32GFLOPS = i8*float64(threads), f32*float64(threads)
	roof := "the best instruction peak (8-bit VNNI or float32 FMA) × threads"
	m.PeakGFLOPS = max(m.Int8GOPS, m.F32GFLOPS)
	if m.PeakGFLOPS == 0 {
		m.PeakGFLOPS = m.KernelGFLOPS
		roof = "Loom's Q8_0 × 16 tokens in cache (no instruction peak measured on this CPU)"
	}
	m.Method = fmt.Sprintf("measured now on %d thread(s): bandwidth = one token × 12 F16 matrices 5632×2048 (264 MiB); compute roof = %s; Loom's Q8_0 × 16 tokens in cache reaches %.1f GFLOP/s",
		threads, roof, m.KernelGFLOPS)
	return m
}

// InstructionPeaks is one core's throughput of the instructions the
// prefill kernels are built on, in billions of operations per second (2
// per multiply-add): 8-bit multiply-adds (AVX-512 VNNI, quantized
// weights) and float32 FMAs (F16/F32 weights); 0 where the CPU lacks them.
// It is the measurement Measure's Int8GOPS and F32GFLOPS are (per
// thread), taken once per process; prefer those.
func InstructionPeaks() (int8GOPS, f32GFLOPS float64) { return corePeaks() }

// products is one prepared measurement: n tokens against mats matrices
// of type t, [rows, cols] each, with a nonzero pattern (untouched pages
// would all map the kernel's zero page and read from cache).
type products struct {
	p      *parallel.Pool
	ms     []*kernels.Matrix
	x, out []float32
	n      int
	ws     kernels.Workspace
}

func newProducts(p *parallel.Pool, t tensor.DType, rows, cols, mats, n int) *products {
	tr := t.Traits()
	pr := &products{p: p, ms: make([]*kernels.Matrix, mats), n: n}
	for k := range pr.ms {
		data := make([]byte, rows*cols/tr.BlockSize*tr.TypeSize)
		// On huge pages, as a model's weights are (engine's moveWeights,
		// kernels.Matrix.Pack): a roof read through 4 KiB pages would sit
		// below decode itself.
		hugepage.Advise(data)
		for i := 0; i < len(data); i += 2 {
			data[i], data[i+1] = byte(i>>1), 0x3c // F16 values (and scales) near 1.0
		}
		var err error
		if pr.ms[k], err = kernels.NewMatrix("calibration", t, rows, cols, data); err != nil {
			panic(err) // sizes are constants here
		}
	}
	pr.x = make([]float32, n*cols)
	for i := range pr.x {
		pr.x[i] = float32(i%7) - 3
	}
	pr.out = make([]float32, n*rows)
	pr.ws.Reserve(n, pr.ms)
	return pr
}

// best runs reps products against each matrix in turn, passes times, and
// returns the time of one matrix's product in the fastest pass.
func (pr *products) best(reps, passes int) float64 {
	best := 0.0
	for range passes {
		t0 := time.Now()
		for range reps {
			for _, m := range pr.ms {
				pr.ws.MatMul(pr.p, m, pr.x, pr.n, pr.out)
			}
		}
		if s := time.Since(t0).Seconds(); best == 0 || s < best {
			best = s
		}
	}
	return best / float64(reps*len(pr.ms))
}

// Meter measures Machine.BandwidthGBs again and again on one set of
// matrices, allocated once (264 MiB): loom bench --bandwidth measures it
// beside every decode run, as a host's bandwidth can change from one run
// to the next (the two-core machines here switch between about 36 and 60
// GB/s every ten seconds or so).
type Meter struct {
	own bool // the pool is the meter's
	pr  *products
}

const bigRows, bigCols, bigMats = 5632, 2048, 12 // 264 MiB of F16

// NewMeter prepares a bandwidth measurement on threads threads.
func NewMeter(threads int) *Meter {
	m := newMeter(parallel.New(max(threads, 1)))
	m.own = true
	return m
}

func newMeter(p *parallel.Pool) *Meter {
	return &Meter{pr: newProducts(p, tensor.F16, bigRows, bigCols, bigMats, 1)}
}

// Bandwidth is the read bandwidth now, GB/s: one token against the twelve
// matrices in turn, best of three passes (about 30 ms at 30 GB/s).
func (m *Meter) Bandwidth() float64 {
	return float64(bigRows*bigCols*2) / m.pr.best(1, 3) / 1e9
}

// Close stops the meter's threads (NewMeter's) and lets its matrices go.
func (m *Meter) Close() {
	if m.own {
		m.pr.p.Close()
	}
	m.pr = nil
}
