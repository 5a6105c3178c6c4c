package kernels

//go:generate go run gen_gemm_float.go

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/loom-inference/loom/internal/parallel"
	"github.com/loom-inference/loom/internal/quant"
	"github.com/loom-inference/loom/internal/tensor"
)

// Float GEMM: F16 and F32 weights times two or more tokens.
//
// llama.cpp hands such products to llamafile's tinyBLAS (ggml-cpu's
// llamafile_sgemm takes them when the batch has n ≥ 2 tokens and the row
// length k is a multiple of 16; one token stays on ggml's vec_dot). The
// activations are those of vec_dot's type: float32 as they are for F32
// weights, rounded to F16 for F16 weights. tinyBLAS gives each output one
// 16-lane accumulator: lane l sums, by FMA, elements l, l+16, l+32, … of
// the row; the lanes are then added as _mm512_reduce_add_ps does (8+8, 4+4,
// 2+2, 1+1). Loom computes that function in that order: on the reference
// recordings the F32 files' worst logit differences dropped to ≤ 0.0001
// and the F16 ones shrank (tinyllama 0.029 → 0.024) against the ggml
// vec_dot order used before. The tiles below only decide which outputs are
// computed together, never the order of any sum.
//
// Tiles: 4 weight rows × 6 tokens (24 accumulators, each weight vector
// converted once and used six times); tokens left over go 4 × 1; rows left
// over (Rows % 4) and the portable build use floatGemmGeneric.

// floatKernel computes a 4-row × tokens tile: c[j·ldc + 4i] (bytes) =
// row i of a (stride lda bytes) · token j of b (stride ldb bytes), over k
// elements (a positive multiple of 16).
type floatKernel func(k int, a []byte, lda int, b []float32, ldb int, c []float32, ldc int)

// floatGemm holds one weight type's tiles; nil entries use the generic code.
type floatGemm struct {
	name       string
	x4x6, x4x1 floatKernel
}

// gemmTask computes row tiles [lo, hi) (4 rows each) for all tokens.
type gemmTask struct {
	m   *Matrix
	g   *floatGemm
	x   []float32
	n   int
	out []float32
}

// tokenChunk is how many tokens' activations a worker keeps hot while it
// walks its rows: about half of a 1 MiB L2, a multiple of the 6-token tile.
func tokenChunk(cols int) int {
	return max(6, (512<<10)/(4*cols)/6*6)
}

func (t *gemmTask) Do(_, lo, hi int) {
	m, g := t.m, t.g
	k, rows := m.Cols, m.Rows
	chunk := tokenChunk(k)
	for t0 := 0; t0 < t.n; t0 += chunk {
		t1 := min(t.n, t0+chunk)
		for tile := lo; tile < hi; tile++ {
			r0 := 4 * tile
			if r0+4 > rows || g.x4x6 == nil {
				floatGemmGeneric(m, t.x, t.out, r0, min(r0+4, rows), t0, t1)
				continue
			}
			a := m.Data[r0*m.RowBytes:]
			j := t0
			for ; j+6 <= t1; j += 6 {
				g.x4x6(k, a, m.RowBytes, t.x[j*k:], 4*k, t.out[j*rows+r0:], 4*rows)
			}
			for ; j < t1; j++ {
				g.x4x1(k, a, m.RowBytes, t.x[j*k:], 4*k, t.out[j*rows+r0:], 4*rows)
			}
		}
	}
}

// floatInput returns the float GEMM's activations [n, Cols]: x itself for
// F32 weights; for F16, x rounded to F16 (held as float32) in w's scratch,
// converted unless an earlier product with the same input already did.
func (w *Workspace) floatInput(p *parallel.Pool, m *Matrix, x []float32, n int, convert bool) []float32 {
	if m.Type != tensor.F16 {
		return x[:n*m.Cols]
	}
	act := w.scratch(n * m.actRow)
	if convert {
		w.quant = quantTask{m: m, x: x[:n*m.Cols], act: act}
		p.RunTask(n, 1, &w.quant)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&act[0])), n*m.Cols)
}

// matMulFloat runs the float GEMM: x [n, Cols] float32 → out [n, Rows].
func (w *Workspace) matMulFloat(p *parallel.Pool, m *Matrix, g *floatGemm, x []float32, n int, out []float32) {
	w.gemm = gemmTask{m: m, g: g, x: x[:n*m.Cols], n: n, out: out[:n*m.Rows]}
	p.RunTask((m.Rows+3)/4, 1, &w.gemm)
	w.gemm = gemmTask{}
}

// floatGemmGeneric is the portable float GEMM over rows [r0, r1) and tokens
// [t0, t1): tinyBLAS's order, with a rounded multiply and add where the
// SIMD tiles fuse them (within a few ulps of the terms' magnitude; the
// tests pin the SIMD tiles bit-exactly to an exact-FMA emulation).
func floatGemmGeneric(m *Matrix, x, out []float32, r0, r1, t0, t1 int) {
	k, rows := m.Cols, m.Rows
	var w [16]float32
	for r := r0; r < r1; r++ {
		row := m.Data[r*m.RowBytes : (r+1)*m.RowBytes]
		for j := t0; j < t1; j++ {
			xj := x[j*k : (j+1)*k]
			var acc [16]float32
			for l := 0; l < k; l += 16 {
				floatLoad16(&w, m.Type, row, l)
				b := xj[l : l+16]
				for i := range acc {
					acc[i] += float32(w[i] * b[i])
				}
			}
			out[j*rows+r] = reduce16(&acc)
		}
	}
}

// floatLoad16 converts weights [l, l+16) of a F16 or F32 row to float32.
func floatLoad16(w *[16]float32, t tensor.DType, row []byte, l int) {
	if t == tensor.F16 {
		for i := range w {
			w[i] = quant.F16ToF32(binary.LittleEndian.Uint16(row[2*(l+i):]))
		}
		return
	}
	for i := range w {
		w[i] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*(l+i):]))
	}
}

// reduce16 adds sixteen lanes in _mm512_reduce_add_ps's tree.
func reduce16(a *[16]float32) float32 {
	var h [8]float32
	for i := range h {
		h[i] = a[i] + a[i+8]
	}
	var q [4]float32
	for i := range q {
		q[i] = h[i] + h[i+4]
	}
	return (q[0] + q[2]) + (q[1] + q[3])
}
