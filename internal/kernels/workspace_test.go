package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// workspaceMatrices are 48×256 weights of the types whose products take
// different paths: the float GEMM (F16, F32 with n ≥ 2), packed groups
// (Q4_0, Q8_0, Q4_K, Q6_K where this CPU packs them), rows one at a time
// (unpacked Q8_0), and ggml's one-row order for experts (VecDotOnly),
// MXFP4 experts in llama.cpp's repacked order and in its vec_dot order.
func workspaceMatrices(t testing.TB, rng *rand.Rand) []*Matrix {
	const rows, cols = 48, 256
	var ms []*Matrix
	for _, c := range []struct {
		typ        tensor.DType
		pack, expt bool
	}{
		{tensor.F16, false, false}, {tensor.F32, false, false}, {tensor.Q8_0, false, false},
		{tensor.Q8_0, true, false}, {tensor.Q4_0, true, false}, {tensor.Q4_K, true, false},
		{tensor.Q6_K, true, false}, {tensor.Q8_0, false, true},
		{tensor.MXFP4, true, true}, {tensor.MXFP4, false, true},
	} {
		var data []byte
		if c.typ == tensor.F16 || c.typ == tensor.F32 {
			data = randomFloatRows(rng, c.typ, rows, cols)
		} else {
			for range rows {
				data = append(data, randomRow(rng, c.typ, cols)...)
			}
		}
		m, err := NewMatrix(fmt.Sprintf("%v", c.typ), c.typ, rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		if c.pack {
			m.Pack()
		}
		m.VecDotOnly = c.expt
		ms = append(ms, m)
	}
	return ms
}

func randomInput(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// TestWorkspaceZeroAllocs: with its scratch reserved, a workspace's
// products (one token and several, fresh conversions and reused ones)
// allocate nothing.
func TestWorkspaceZeroAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ms := workspaceMatrices(t, rng)
	p := parallel.New(2)
	defer p.Close()
	for _, n := range []int{1, 5} {
		var ws Workspace
		ws.Reserve(n, ms)
		x := randomInput(rng, n*ms[0].Cols)
		out := make([]float32, n*ms[0].Rows)
		for i, m := range ms {
			prev := ms[(i+len(ms)-1)%len(ms)]
			allocs := testing.AllocsPerRun(20, func() {
				ws.MatMul(p, prev, x, n, out)
				ws.MatMulNext(p, m, prev, x, n, out)
			})
			if allocs != 0 {
				t.Errorf("%s (%s) after %s, n=%d: %v allocations", m.Name, m.Kernel(), prev.Name, n, allocs)
			}
		}
	}
}

// TestWorkspacesShareMatrix: runners multiplying by the same matrices at
// once, each with its own workspace and thread pool, get exactly what each
// gets alone. Under -race this also proves a product never writes to the
// weights.
func TestWorkspacesShareMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	ms := workspaceMatrices(t, rng)
	const runners, rounds = 3, 8
	type job struct {
		x    []float32
		n    int
		want [][]float32 // per matrix: [n, Rows]
	}
	jobs := make([]job, runners)
	for r := range jobs {
		n := []int{1, 4, 7}[r]
		j := job{x: randomInput(rng, n*ms[0].Cols), n: n}
		var ws Workspace
		p := parallel.New(1)
		for i, m := range ms {
			out := make([]float32, n*m.Rows)
			if i%2 == 1 { // a reused conversion where the layouts agree
				ws.MatMulNext(p, m, ms[i-1], j.x, n, out)
			} else {
				ws.MatMul(p, m, j.x, n, out)
			}
			j.want = append(j.want, out)
		}
		p.Close()
		jobs[r] = j
	}
	var wg sync.WaitGroup
	errs := make([]error, runners)
	for r := range jobs {
		wg.Go(func() {
			j := &jobs[r]
			var ws Workspace
			p := parallel.New(2)
			defer p.Close()
			for range rounds {
				for i, m := range ms {
					out := make([]float32, j.n*m.Rows)
					if i%2 == 1 {
						ws.MatMulNext(p, m, ms[i-1], j.x, j.n, out)
					} else {
						ws.MatMul(p, m, j.x, j.n, out)
					}
					for k := range out {
						if math.Float32bits(out[k]) != math.Float32bits(j.want[i][k]) {
							errs[r] = fmt.Errorf("runner %d, %s: out[%d] = %g, alone %g", r, m.Kernel(), k, out[k], j.want[i][k])
							return
						}
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestMatMulNextChecksPrev: MatMulNext after a product on another matrix
// (or another token count) than prev converts x itself instead of reading
// a stale conversion.
func TestMatMulNextChecksPrev(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	ms := workspaceMatrices(t, rng)
	p := parallel.New(2)
	defer p.Close()
	a, b := ms[3], ms[3] // packed Q8_0 reads its own layout: a reuse candidate
	const n = 3
	x, y := randomInput(rng, (n+1)*a.Cols), randomInput(rng, n*a.Cols)
	want := make([]float32, n*b.Rows)
	new(Workspace).MatMul(p, b, y, n, want)
	var ws Workspace
	got := make([]float32, n*b.Rows)
	ws.MatMul(p, a, x, n, got)
	ws.MatMul(p, ms[0], x, n, got) // another matrix converted last
	ws.MatMulNext(p, b, a, y, n, got)
	ws.MatMul(p, a, x, n+1, make([]float32, (n+1)*a.Rows)) // another token count
	got2 := make([]float32, n*b.Rows)
	ws.MatMulNext(p, b, a, y, n, got2)
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(got2[i]) != math.Float32bits(want[i]) {
			t.Fatalf("out[%d] = %g, %g; MatMul %g", i, got[i], got2[i], want[i])
		}
	}
}

// TestMatMuls: one input by up to three matrices equals MatMul on the
// first and MatMulNext on the next, bit for bit, for every path (one pass
// where all are packed and read one conversion; the products in turn
// otherwise), shapes with rows past the last packed group and groups of
// 4·k+1 (the one-token streams' leftovers), nil entries, one token and
// three, one to three threads; and allocates nothing.
func TestMatMuls(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const cols = 512
	mat := func(typ tensor.DType, rows int, pack bool) *Matrix {
		var data []byte
		if typ == tensor.F16 {
			data = randomFloatRows(rng, typ, rows, cols)
		} else {
			for range rows {
				data = append(data, randomRow(rng, typ, cols)...)
			}
		}
		m, err := NewMatrix(fmt.Sprintf("%v×%d", typ, rows), typ, rows, cols, data)
		if err != nil {
			t.Fatal(err)
		}
		if pack {
			m.Pack()
		}
		return m
	}
	q4a, q4b, q4c := mat(tensor.Q4_0, 272, true), mat(tensor.Q4_0, 64, true), mat(tensor.Q4_0, 88, true)
	q8a, q8b := mat(tensor.Q8_0, 160, true), mat(tensor.Q8_0, 40, true)
	q4k, q6k := mat(tensor.Q4_K, 96, true), mat(tensor.Q6_K, 48, true)
	q8u, f16 := mat(tensor.Q8_0, 64, false), mat(tensor.F16, 48, false)
	fused := 0
	for _, ms := range [][3]*Matrix{
		{q4a, q4b, q4c}, {q4c, q4a, nil}, {nil, q4b, q4a}, {q8a, q8b, q8a}, {q4k, q4k, nil},
		{q4k, q6k, nil}, {q4a, q8a, nil}, {q8u, q8u, q8u}, {f16, f16, nil}, {q4a, nil, nil},
	} {
		for _, threads := range []int{1, 2, 3} {
			p := parallel.New(threads)
			for _, n := range []int{1, 3} {
				x := randomInput(rng, n*cols)
				var got, want [3][]float32
				var wws Workspace
				var prev *Matrix
				for i, m := range ms {
					if m == nil {
						continue
					}
					got[i], want[i] = make([]float32, n*m.Rows), make([]float32, n*m.Rows)
					if prev == nil {
						wws.MatMul(p, m, x, n, want[i])
					} else {
						wws.MatMulNext(p, m, prev, x, n, want[i])
					}
					prev = m
				}
				var ws Workspace
				if ws.oneProduct(ms, n) {
					fused++
				}
				ws.MatMuls(p, ms, x, n, got)
				for i := range ms {
					for j := range want[i] {
						if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
							t.Fatalf("%v threads=%d n=%d: outs[%d][%d] = %g, in turn %g", names(ms), threads, n, i, j, got[i][j], want[i][j])
						}
					}
				}
				if allocs := testing.AllocsPerRun(10, func() { ws.MatMuls(p, ms, x, n, got) }); allocs != 0 {
					t.Errorf("%v threads=%d n=%d: %v allocations", names(ms), threads, n, allocs)
				}
			}
			p.Close()
		}
	}
	if fused == 0 {
		t.Skip("no packed kernels on this CPU: every MatMuls ran its products in turn")
	}
}

func names(ms [3]*Matrix) []string {
	var s []string
	for _, m := range ms {
		if m != nil {
			s = append(s, m.Name)
		} else {
			s = append(s, "nil")
		}
	}
	return s
}
