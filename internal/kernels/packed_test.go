package kernels

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/tensor"
)

// TestPackedExact: a packed matrix product equals the unpacked one bit for
// bit (same ggml summation order), for group counts with leftover rows,
// short and long rows, odd token counts and 1–3 threads; and both stay
// within float noise of the generic reference.
func TestPackedExact(t *testing.T) {
	type format struct {
		typ tensor.DType
		f   *packedFormat
	}
	// This CPU's choice per type, then the formats it can run but does
	// not choose (packedAlt), in a fixed order, so the random data is the
	// same every run.
	var formats []format
	for _, typ := range slices.Sorted(maps.Keys(table)) {
		if f := table[typ].packed; f != nil {
			formats = append(formats, format{typ, f})
		}
		for _, f := range packedAlt[typ] {
			formats = append(formats, format{typ, f})
		}
	}
	if len(formats) == 0 {
		t.Skip("no packed kernels on this CPU / build")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ft := range formats {
		typ, f := ft.typ, ft.f
		for _, shape := range [][2]int{{16, 32}, {21, 64}, {48, 96}, {35, 2048}, {64, 4096}, {115, 64}, {2053, 256}} {
			rows, cols := shape[0], shape[1]
			if cols%f.blockCols != 0 {
				cols = 256 * (cols/256 + 1)
			}
			var data []byte
			for range rows {
				data = append(data, randomRow(rng, typ, cols)...)
			}
			for _, n := range []int{1, 2, 3, 5} {
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for _, threads := range []int{1, 3} {
					name := fmt.Sprintf("%v/%s/%dx%d/n%d/t%d", typ, f, rows, cols, n, threads)
					p := parallel.New(threads)
					plain, _ := NewMatrix("w", typ, rows, cols, data)
					packed, _ := NewMatrix("w", typ, rows, cols, data)
					packed.packWith(f, nil)
					want := make([]float32, n*rows)
					got := make([]float32, n*rows)
					var ws Workspace
					ws.MatMul(p, plain, x, n, want)
					ws.MatMul(p, packed, x, n, got)
					p.Close()
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: out[%d] = %g, unpacked %g", name, i, got[i], want[i])
						}
					}
					// And the generic reference, within float noise: the
					// orders differ, so the error scales with the terms'
					// size, not with a result that cancels (an output of
					// 0.38 among outputs of 50 differs by 3e-4), and the
					// token's largest output stands for that size.
					gen := genericDot(typ)
					act := make([]byte, plain.ActBytes(1))
					refs := make([]float32, rows)
					for tok := range n {
						plain.row.ref.QuantizeAct(act, x[tok*cols:(tok+1)*cols])
						scale := 1.0
						for r := range rows {
							refs[r] = gen(cols, data[r*plain.RowBytes:(r+1)*plain.RowBytes], act)
							scale = max(scale, math.Abs(float64(refs[r])))
						}
						for r, ref := range refs {
							if d := math.Abs(float64(got[tok*rows+r] - ref)); d > 1e-4*scale {
								t.Fatalf("%s: out[%d][%d] = %g, generic %g (largest output %g)", name, tok, r, got[tok*rows+r], ref, scale)
							}
						}
					}
				}
			}
		}
	}
}

// TestRepackOrder: the kernels of the formats in llama.cpp's repacked
// order equal their reference dot (rest) bit for bit, for leftover rows,
// token counts around the four-token kernel and 1–3 threads; Pack picks
// them exactly when llama.cpp repacks.
func TestRepackOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	type format struct {
		typ tensor.DType
		f   *packedFormat
		alt bool // not this CPU's choice (repackAlt)
	}
	var formats []format
	for _, typ := range slices.Sorted(maps.Keys(table)) {
		if ro := table[typ].repack; ro != nil && ro.format != nil {
			formats = append(formats, format{typ, ro.format, false})
		}
		for _, f := range repackAlt[typ] {
			formats = append(formats, format{typ, f, true})
		}
	}
	tested := 0
	for _, ft := range formats {
		typ, f := ft.typ, ft.f
		tested++
		for _, shape := range [][2]int{{16, 32}, {21, 64}, {48, 96}, {35, 2048}, {115, 64}, {2053, 256}} {
			rows, cols := shape[0], shape[1]
			var data []byte
			for range rows {
				data = append(data, randomRow(rng, typ, cols)...)
			}
			for _, n := range []int{1, 3, 4, 5, 9} {
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				for _, threads := range []int{1, 3} {
					name := fmt.Sprintf("%s/%dx%d/n%d/t%d", f, rows, cols, n, threads)
					p := parallel.New(threads)
					m, _ := NewMatrix("w", typ, rows, cols, data)
					m.packWith(f, nil)
					got := make([]float32, n*rows)
					new(Workspace).MatMul(p, m, x, n, got)
					p.Close()
					act := make([]byte, m.ActBytes(1))
					gen := genericDot(typ)
					for tok := range n {
						m.row.ref.QuantizeAct(act, x[tok*cols:(tok+1)*cols])
						for r := range rows {
							w := data[r*m.RowBytes : (r+1)*m.RowBytes]
							want := f.rest(cols, w, act)
							if math.Float32bits(got[tok*rows+r]) != math.Float32bits(want) {
								t.Fatalf("%s: out[%d][%d] = %g, reference %g", name, tok, r, got[tok*rows+r], want)
							}
							if ref := gen(cols, w, act); math.Abs(float64(want-ref)) > 1e-4*(1+math.Abs(float64(ref))) {
								t.Fatalf("%s: reference %g, generic %g", name, want, ref)
							}
						}
					}
				}
			}
		}
		if ft.alt {
			continue
		}
		for _, c := range []struct {
			rows  int
			embd  bool
			order bool
		}{{64, false, true}, {64, true, false}, {36, false, false}} {
			data := make([]byte, 0)
			for range c.rows {
				data = append(data, randomRow(rng, typ, 64)...)
			}
			m, _ := NewMatrix("w", typ, c.rows, 64, data)
			m.Embedding = c.embd
			m.Pack()
			if got := m.pf == f; got != c.order {
				t.Errorf("%v rows=%d embedding=%v: repack order %v, want %v", typ, c.rows, c.embd, got, c.order)
			}
		}
	}
	if tested == 0 {
		t.Skip("no repack-order kernels on this CPU / build")
	}
}

// BenchmarkPacked: one token (decode) and 32 tokens (prefill) against a
// packed 2048×2048 matrix, GB/s of weights.
func BenchmarkPacked(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []tensor.DType{tensor.Q4_0, tensor.Q5_0, tensor.Q8_0, tensor.Q4_K, tensor.Q6_K, tensor.MXFP4} {
		if r := table[typ]; r.packed == nil && (r.repack == nil || r.repack.format == nil) {
			continue
		}
		const rows, cols = 2048, 2048
		var data []byte
		for range rows {
			data = append(data, randomRow(rng, typ, cols)...)
		}
		for _, pack := range []bool{false, true} {
			for _, n := range []int{1, 32} {
				m, _ := NewMatrix("w", typ, rows, cols, data)
				if pack {
					m.Pack()
				}
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				out := make([]float32, n*rows)
				var ws Workspace
				ws.Reserve(n, []*Matrix{m})
				p := parallel.New(1)
				b.Run(fmt.Sprintf("%v/%s/n%d", typ, m.Kernel(), n), func(b *testing.B) {
					b.SetBytes(int64(len(data)) * int64(n))
					for range b.N {
						ws.MatMul(p, m, x, n, out)
					}
				})
				p.Close()
			}
		}
	}
}

// randomMatrix is a rows×cols matrix of typ made of randomRow rows.
func randomMatrix(t *testing.T, rng *rand.Rand, typ tensor.DType, rows, cols int) *Matrix {
	t.Helper()
	var data []byte
	for range rows {
		data = append(data, randomRow(rng, typ, cols)...)
	}
	m, err := NewMatrix("w", typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestNarrowNotStale: a one-token F16 or BF16 product narrows its own
// input row; the next product on a new row never reads the last one's.
func TestNarrowNotStale(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const rows, cols = 40, 256
	p := parallel.New(2)
	defer p.Close()
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16} {
		m := randomMatrix(t, rng, typ, rows, cols)
		x, y := randomInput(rng, cols), randomInput(rng, cols)
		want, got := make([]float32, rows), make([]float32, rows)
		new(Workspace).MatMul(p, m, y, 1, want)
		var ws Workspace
		ws.MatMul(p, m, x, 1, got)
		ws.MatMul(p, m, y, 1, got)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%v: out[%d] = %g after another row, alone %g", typ, i, got[i], want[i])
			}
		}
	}
}

// TestMatMulNext: a product that reuses the previous conversion equals a
// plain MatMul, whether the layouts match (reuse) or not (reconvert), for
// three tokens and for one (where F16 and BF16 also reuse the activation
// row narrowed for the four-row kernels).
func TestMatMulNext(t *testing.T) {
	for _, n := range []int{3, 1} {
		testMatMulNext(t, n)
	}
}

func testMatMulNext(t *testing.T, n int) {
	rng := rand.New(rand.NewPCG(9, 10))
	const rows, cols = 40, 256
	mk := func(typ tensor.DType, pack bool) *Matrix {
		m := randomMatrix(t, rng, typ, rows, cols)
		if pack {
			m.Pack()
		}
		return m
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	p := parallel.New(2)
	defer p.Close()
	for _, pair := range [][2]*Matrix{
		{mk(tensor.Q4_0, true), mk(tensor.Q4_0, true)},
		{mk(tensor.Q4_0, true), mk(tensor.Q8_0, true)},
		{mk(tensor.Q4_K, false), mk(tensor.Q6_K, false)},
		{mk(tensor.Q8_0, false), mk(tensor.Q4_0, true)},
		{mk(tensor.F16, false), mk(tensor.Q8_0, true)},
		{mk(tensor.F16, false), mk(tensor.F16, false)}, // float GEMM, shared F16 rounding
		{mk(tensor.F32, false), mk(tensor.F16, false)},
		{mk(tensor.Q8_0, true), mk(tensor.F16, false)},
		{mk(tensor.BF16, false), mk(tensor.BF16, false)},
		{mk(tensor.F16, false), mk(tensor.BF16, false)},
	} {
		a, b := pair[0], pair[1]
		outA, got, want := make([]float32, n*rows), make([]float32, n*rows), make([]float32, n*rows)
		var ws Workspace
		ws.MatMul(p, a, x, n, outA)
		ws.MatMulNext(p, b, a, x, n, got)
		new(Workspace).MatMul(p, b, x, n, want)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d %s after %s: out[%d] = %g, MatMul %g", n, b.Kernel(), a.Kernel(), i, got[i], want[i])
			}
		}
	}
}

// TestRepackRows: where this CPU runs llama.cpp's repacked order on plain
// rows (no packed kernels), the one-token, four-token and four-row kernels
// equal that order's reference bit for bit on every block count, and a
// product through Pack and MatMul gives every output the reference's
// value, for row counts Pack repacks and ones it leaves, token counts
// around the four-token kernel and 1–3 threads.
func TestRepackRows(t *testing.T) {
	tested := 0
	for typ, row := range table {
		if row.repack == nil || row.repack.rows == nil {
			continue
		}
		tested++
		ro, impl := row.repack, *row.repack.rows
		rng := rand.New(rand.NewPCG(15, uint64(typ)))
		bs := typ.BlockSize()
		for nb := 0; nb <= 20; nb++ {
			n := nb * bs
			var w [4][]byte
			for r := range w {
				w[r] = randomRow(rng, typ, n)
			}
			ab, _ := tensor.RowBytes(row.ref.ActType, uint64(n))
			stride := int(ab) + 3 // an odd stride
			act := make([]byte, 4*stride)
			for k := range 4 {
				if n > 0 {
					row.ref.QuantizeAct(act[k*stride:k*stride+int(ab)], randomInput(rng, n))
				}
			}
			y := func(k int) []byte { return act[k*stride : k*stride+int(ab)] }
			got4 := []float32{-1, -1, -1, -1}
			impl.Dot4(n, w[0], act, stride, got4)
			gotR := []float32{-1, -1, -1, -1}
			impl.Rows4(n, w[0], w[1], w[2], w[3], y(1), gotR)
			for k := range 4 {
				check := func(what string, got, want float32) {
					t.Helper()
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%v %s nb=%d %d: %v, reference %v", typ, what, nb, k, got, want)
					}
				}
				check("Dot", impl.Dot(n, w[k], y(k)), ro.ref(n, w[k], y(k)))
				check("Dot4", got4[k], ro.ref(n, w[0], y(k)))
				check("Rows4", gotR[k], ro.ref(n, w[k], y(1)))
			}
		}
		for _, shape := range [][2]int{{16, 32}, {24, 64}, {21, 64}, {40, 2048}, {2056, 256}} {
			rows, cols := shape[0], shape[1]
			m := randomMatrix(t, rng, typ, rows, cols)
			m.Pack()
			want := impl.Name
			if rows%ro.rowMultiple != 0 {
				want = row.best().Name
			}
			// With packed kernels in the order (AVX-512 VNNI) Pack takes
			// them (TestRepackOrder); the results below hold either way.
			if got := m.Kernel(); ro.format == nil && got != want {
				t.Errorf("%v %d rows: kernel %q, want %q", typ, rows, got, want)
			}
			dot := m.rowImpl.Dot
			if rows%ro.rowMultiple == 0 {
				dot = ro.ref
			}
			for _, n := range []int{1, 3, 4, 5, 9} {
				x := randomInput(rng, n*cols)
				act := make([]byte, m.ActBytes(1))
				for _, threads := range []int{1, 3} {
					p := parallel.New(threads)
					got := make([]float32, n*rows)
					new(Workspace).MatMul(p, m, x, n, got)
					p.Close()
					for tok := range n {
						row.ref.QuantizeAct(act, x[tok*cols:(tok+1)*cols])
						for r := range rows {
							want := dot(cols, m.Data[r*m.RowBytes:(r+1)*m.RowBytes], act)
							if math.Float32bits(got[tok*rows+r]) != math.Float32bits(want) {
								t.Fatalf("%v %dx%d n=%d threads=%d: out[%d][%d] = %v, reference %v", typ, rows, cols, n, threads, tok, r, got[tok*rows+r], want)
							}
						}
					}
				}
			}
		}
	}
	if tested == 0 {
		t.Skip("no repack-order row kernels on this CPU / build")
	}
}
