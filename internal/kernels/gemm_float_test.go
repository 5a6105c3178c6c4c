package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

func TestFMA32(t *testing.T) {
	// x = 1+2⁻²³: x·x − 1 = 2⁻²² + 2⁻⁴⁶ exactly (an unfused product would
	// lose the 2⁻⁴⁶).
	x := float32(1 + math.Ldexp(1, -23))
	if got, want := FMA32(x, x, -1), float32(math.Ldexp(1, -22)+math.Ldexp(1, -46)); got != want {
		t.Fatalf("FMA32(x,x,-1) = %v, want %v", got, want)
	}
	// Double rounding: a = 1+2⁻¹², a·a = 1 + 2⁻¹¹ + 2⁻²⁴ is a float32 tie;
	// + 2⁻⁸⁰ lifts it above, so the exact result rounds up. Rounding to
	// float64 first would drop the 2⁻⁸⁰ and then round the tie to even.
	a := float32(1 + math.Ldexp(1, -12))
	c := float32(math.Ldexp(1, -80))
	if got, want := FMA32(a, a, c), float32(1+math.Ldexp(1, -11)+math.Ldexp(1, -23)); got != want {
		t.Fatalf("FMA32 tie+tiny = %v, want %v", got, want)
	}
	if naive := float32(float64(a)*float64(a) + float64(c)); naive == float32(1+math.Ldexp(1, -11)+math.Ldexp(1, -23)) {
		t.Fatal("test case does not exercise double rounding")
	}
	// Non-finite operands give the IEEE results (ExpF32 feeds it −Inf).
	inf := float32(math.Inf(1))
	if got := FMA32(-inf, 2, 1); got != -inf {
		t.Fatalf("FMA32(-Inf, 2, 1) = %v", got)
	}
	if got := FMA32(inf, 1, -inf); !math.IsNaN(float64(got)) {
		t.Fatalf("FMA32(Inf, 1, -Inf) = %v", got)
	}
}

// floatGemmExact is the float GEMM computed with exact FMAs: what the SIMD
// tiles must reproduce bit for bit.
func floatGemmExact(typ tensor.DType, data []byte, rows, k int, x []float32, n int) []float32 {
	esz := 2
	if typ == tensor.F32 {
		esz = 4
	}
	if typ == tensor.F16 { // vec_dot's type: activations rounded to F16
		x = append([]float32(nil), x...)
		for i, v := range x {
			x[i] = quant.RoundF16(v)
		}
	}
	out := make([]float32, n*rows)
	var w [16]float32
	for r := range rows {
		row := data[r*k*esz : (r+1)*k*esz]
		for j := range n {
			var acc [16]float32
			for l := 0; l < k; l += 16 {
				floatLoad16(&w, typ, row, l)
				for i := range acc {
					acc[i] = FMA32(w[i], x[j*k+l+i], acc[i])
				}
			}
			out[j*rows+r] = reduce16(&acc)
		}
	}
	return out
}

func randomFloatRows(rng *rand.Rand, typ tensor.DType, rows, k int) []byte {
	if typ == tensor.F16 {
		b := make([]byte, 2*rows*k)
		for i := range rows * k {
			// Wide exponent range, subnormals included.
			v := rng.NormFloat64() * math.Ldexp(1, rng.IntN(20)-14)
			binary.LittleEndian.PutUint16(b[2*i:], quant.F32ToF16(float32(v)))
		}
		return b
	}
	b := make([]byte, 4*rows*k)
	for i := range rows * k {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(30)-15))))
	}
	return b
}

// TestFloatGemm: MatMul with n ≥ 2 tokens on F16/F32 weights computes
// tinyBLAS's order: bit-identical to exact FMAs with the SIMD tiles, within
// a few ulps of the terms with the portable code; rows and tokens that do
// not fill a tile, 1–3 threads, row lengths not a multiple of 16 (those
// stay on the vec_dot path) and one token (vec_dot too).
func TestFloatGemm(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []tensor.DType{tensor.F16, tensor.F32} {
		simd := table[typ].gemm.x4x6 != nil
		for _, shape := range [][2]int{{4, 16}, {7, 48}, {13, 96}, {40, 2048}, {9, 5632}} {
			rows, k := shape[0], shape[1]
			data := randomFloatRows(rng, typ, rows, k)
			m, err := NewMatrix("w", typ, rows, k, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{2, 5, 6, 7, 13, 31} {
				x := make([]float32, n*k)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				want := floatGemmExact(typ, data, rows, k, x, n)
				for _, threads := range []int{1, 3} {
					name := fmt.Sprintf("%v/%dx%d/n%d/t%d", typ, rows, k, n, threads)
					p := parallel.New(threads)
					got := make([]float32, n*rows)
					new(Workspace).MatMul(p, m, x, n, got)
					p.Close()
					for i := range got {
						if simd && rows%4 == 0 {
							if got[i] != want[i] {
								t.Fatalf("%s: out[%d] = %v, exact FMA order %v", name, i, got[i], want[i])
							}
							continue
						}
						var mag float64
						r, j := i%rows, i/rows
						for l := range k {
							mag += math.Abs(float64(m.rowValue(r, l) * x[j*k+l]))
						}
						if math.Abs(float64(got[i]-want[i])) > 1e-5*mag+1e-30 {
							t.Fatalf("%s: out[%d] = %v, exact FMA order %v (|terms| %g)", name, i, got[i], want[i], mag)
						}
					}
				}
			}
		}
	}
	// The conditions of llamafile_sgemm: a row length not a multiple of 16,
	// or a single token, goes to vec_dot.
	m, _ := NewMatrix("w", tensor.F16, 4, 40, randomFloatRows(rng, tensor.F16, 4, 40))
	if m.usesFloatGemm(8) {
		t.Fatal("k=40 uses the float GEMM; llama.cpp would not")
	}
	m, _ = NewMatrix("w", tensor.F16, 4, 32, randomFloatRows(rng, tensor.F16, 4, 32))
	if m.usesFloatGemm(1) || !m.usesFloatGemm(2) {
		t.Fatal("float GEMM must serve n ≥ 2 tokens only")
	}
}

// rowValue is weight (r, l) as float32.
func (m *Matrix) rowValue(r, l int) float32 {
	var w [16]float32
	floatLoad16(&w, m.Type, m.Data[r*m.RowBytes:], l/16*16)
	return w[l%16]
}

// BenchmarkFloatGemm reports GB/s of weights for a 2048×2048 product with
// 32 tokens (prefill shape) on one thread.
func BenchmarkFloatGemm(b *testing.B) {
	const rows, k, n = 2048, 2048, 32
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []tensor.DType{tensor.F16, tensor.F32} {
		data := randomFloatRows(rng, typ, rows, k)
		m, _ := NewMatrix("w", typ, rows, k, data)
		x := make([]float32, n*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		out := make([]float32, n*rows)
		var ws Workspace
		ws.Reserve(n, []*Matrix{m})
		p := parallel.New(1)
		b.Run(fmt.Sprintf("%v/%s/n%d", typ, m.GemmKernel(), n), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				ws.MatMul(p, m, x, n, out)
			}
			b.ReportMetric(float64(2*rows*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
		p.Close()
	}
}
