package kernels

import (
	"bytes"
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
// gemmWant is what MatMul of n ≥ 2 tokens must give: tinyBLAS's order
// (floatGemmExact) when the matrix takes llamafile_sgemm's path, which
// needs a number of rows that is a multiple of 4; otherwise ggml's
// vec_dot per row and token, the one-token product's order.
func gemmWant(m *Matrix, typ tensor.DType, data []byte, rows, k int, x []float32, n int) []float32 {
	if rows%4 == 0 {
		return floatGemmExact(typ, data, rows, k, x, n)
	}
	p := parallel.New(1)
	defer p.Close()
	out := make([]float32, n*rows)
	for t := range n {
		new(Workspace).MatMul(p, m, x[t*k:(t+1)*k], 1, out[t*rows:(t+1)*rows])
	}
	return out
}

func floatGemmExact(typ tensor.DType, data []byte, rows, k int, x []float32, n int) []float32 {
	esz := 2
	if typ == tensor.F32 {
		esz = 4
	}
	if typ != tensor.F32 { // vec_dot's type: activations rounded to F16 or BF16
		x = append([]float32(nil), x...)
		for i, v := range x {
			if typ == tensor.F16 {
				x[i] = quant.RoundF16(v)
			} else {
				x[i] = quant.BF16ToF32(quant.F32ToBF16(v))
			}
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
	if typ == tensor.BF16 {
		b := make([]byte, 2*rows*k)
		for i := range rows * k {
			v := rng.NormFloat64() * math.Ldexp(1, rng.IntN(30)-15)
			binary.LittleEndian.PutUint16(b[2*i:], quant.F32ToBF16(float32(v)))
		}
		return b
	}
	b := make([]byte, 4*rows*k)
	for i := range rows * k {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(30)-15))))
	}
	return b
}

// TestFloatGemm: MatMul with n ≥ 2 tokens on F16/BF16/F32 weights
// computes tinyBLAS's order: bit-identical to exact FMAs with the SIMD
// tiles (and with the portable code for BF16, whose products are exact),
// within a few ulps of the terms with the portable code; rows and tokens
// that do not fill a tile, 1–3 threads, row lengths not a multiple of 16
// (those stay on the vec_dot path) and one token (vec_dot too).
func TestFloatGemm(t *testing.T) {
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16, tensor.F32} {
		t.Run(typ.String()+"/"+table[typ].gemm.name, func(t *testing.T) { testFloatGemm(t, typ) })
		for _, alt := range gemmAlt[typ] {
			// The tiles of the other choices (gemmPrefetch, gemmWiden).
			t.Run(typ.String()+"/"+alt.name, func(t *testing.T) {
				saved := table[typ].gemm
				table[typ].gemm = alt
				t.Cleanup(func() { table[typ].gemm = saved })
				testFloatGemm(t, typ)
			})
		}
	}
	// The conditions of llamafile_sgemm: a row length not a multiple of 16,
	// or a single token, goes to vec_dot.
	rng := rand.New(rand.NewPCG(5, 6))
	m, _ := NewMatrix("w", tensor.F16, 4, 40, randomFloatRows(rng, tensor.F16, 4, 40))
	if m.usesFloatGemm(8) {
		t.Fatal("k=40 uses the float GEMM; llama.cpp would not")
	}
	m, _ = NewMatrix("w", tensor.F16, 4, 32, randomFloatRows(rng, tensor.F16, 4, 32))
	if m.usesFloatGemm(1) || !m.usesFloatGemm(2) {
		t.Fatal("float GEMM must serve n ≥ 2 tokens only")
	}
}

// testFloatGemm is TestFloatGemm on one type's registered float GEMM.
func testFloatGemm(t *testing.T, typ tensor.DType) {
	rng := rand.New(rand.NewPCG(5, 6))
	{
		exact := table[typ].gemm.tiles[1] != nil || table[typ].gemm.row4 != nil || typ == tensor.BF16
		for _, shape := range [][2]int{{1, 32}, {3, 64}, {4, 16}, {7, 48}, {13, 96}, {40, 2048}, {9, 5632}} {
			rows, k := shape[0], shape[1]
			data := randomFloatRows(rng, typ, rows, k)
			m, err := NewMatrix("w", typ, rows, k, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{2, 5, 6, 7, 8, 13, 14, 31} {
				x := make([]float32, n*k)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				want := gemmWant(m, typ, data, rows, k, x, n)
				for _, c := range []struct{ threads, target int }{{1, panelTarget}, {3, panelTarget}, {1, 1}, {3, 2 * m.Cols * 4 * panelTokens}} {
					// The target as built, and passes of one and of two
					// panels (each pass reads the weights again).
					threads := c.threads
					name := fmt.Sprintf("%v/%dx%d/n%d/t%d/target%d", typ, rows, k, n, threads, c.target)
					p := parallel.New(threads)
					got := make([]float32, n*rows)
					saved := panelTarget
					panelTarget = c.target
					new(Workspace).MatMul(p, m, x, n, got)
					panelTarget = saved
					p.Close()
					for i := range got {
						if exact {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
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
}

// rowValue is weight (r, l) as float32.
func (m *Matrix) rowValue(r, l int) float32 {
	var w [16]float32
	floatLoad16(&w, m.Type, m.Data[r*m.RowBytes:], l/16*16)
	return w[l%16]
}

// BenchmarkFloatGemm: the products of a 128-token prefill on the shapes
// of a tinyllama layer (attention, FFN gate/up, FFN down), one thread; GB/s
// of weights and GFLOP/s.
func BenchmarkFloatGemm(b *testing.B) {
	const n = 128
	rng := rand.New(rand.NewPCG(7, 8))
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16, tensor.F32} {
		for _, shape := range [][2]int{{2048, 2048}, {5632, 2048}, {2048, 5632}} {
			rows, k := shape[0], shape[1]
			m, _ := NewMatrix("w", typ, rows, k, randomFloatRows(rng, typ, rows, k))
			x := make([]float32, n*k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			out := make([]float32, n*rows)
			var ws Workspace
			ws.Reserve(n, []*Matrix{m})
			p := parallel.New(1)
			b.Run(fmt.Sprintf("%v/%s/%dx%d/n%d", typ, m.GemmKernel(), rows, k, n), func(b *testing.B) {
				b.SetBytes(int64(len(m.Data)))
				for b.Loop() {
					ws.MatMul(p, m, x, n, out)
				}
				b.ReportMetric(float64(2*rows*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			p.Close()
		}
	}
}

// roundBF16Ref rounds v to BF16 (nearest even, ggml's FP32_TO_BF16).
func roundBF16Ref(v float32) float32 { return quant.BF16ToF32(quant.F32ToBF16(v)) }

// packTileRef is the weight tile the SIMD tiles of g read (gemm_float.go),
// in portable code: per chunk the four rows' chunks in turn — F16 and F32
// copied, BF16 in bf16Pairs' layout, or (g widened: 16-element chunks of
// 64 bytes) every value
// as float32.
func packTileRef(g *floatGemm, typ tensor.DType, k int, rows [4][]byte) []byte {
	var out []byte
	switch {
	case g.halves:
		for h := range 2 {
			for c := range k / 16 {
				for _, r := range rows {
					var w [16]float32
					floatLoad16(&w, typ, r, 16*c)
					for _, v := range w[8*h : 8*h+8] {
						out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
					}
				}
			}
		}
	case typ != tensor.F32 && g.rowEl == 64 && g.chunk == 16:
		for c := range k / 16 {
			for _, r := range rows {
				var w [16]float32
				floatLoad16(&w, typ, r, 16*c)
				for _, v := range w {
					out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
				}
			}
		}
	case typ == tensor.BF16:
		for c := range (k + 31) / 32 {
			for _, r := range rows {
				for l := range 16 {
					out = binary.LittleEndian.AppendUint32(out, bf16WeightPair(r, k, c, l))
				}
			}
		}
	default:
		esz := 2
		if typ == tensor.F32 {
			esz = 4
		}
		for c := range k / 16 {
			for _, r := range rows {
				out = append(out, r[16*esz*c:16*esz*(c+1)]...)
			}
		}
	}
	return out
}

// TestGemmPacking: the SIMD packing of weight tiles and the panel writers
// of the activations, of every float GEMM this CPU can run, write exactly
// the portable references' bytes, for every row length up to 320 and, for
// the activations, the values whose rounding is delicate (ties, NaN
// payloads, infinities, subnormals, the largest finite values).
func TestGemmPacking(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xff800001), math.Float32frombits(0x7f800100),
		math.Float32frombits(1), math.Float32frombits(0x80007fff), math.Float32frombits(0x00408000),
		math.MaxFloat32, -math.MaxFloat32, 65504, 65520, 1 + 0x1p-8, 1 + 0x1p-11, 1 + 3*0x1p-9, 0x1p-25, 0x1p-14}
	refs := map[tensor.DType]func(dst []byte, x []float32){tensor.F16: f16PanelRow, tensor.BF16: bf16PanelRow, tensor.F32: f32PanelRow}
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16, tensor.F32} {
		for _, g := range append([]*floatGemm{table[typ].gemm}, gemmAlt[typ]...) {
			if g.tiles[1] == nil {
				t.Logf("%v: no SIMD tiles in this build", typ)
				continue
			}
			ref := refs[typ]
			if typ == tensor.BF16 && g.chunk == 16 {
				ref = bf16WPanelRow
			}
			if g.halves {
				round := map[tensor.DType]func(float32) float32{tensor.F16: quant.RoundF16, tensor.BF16: roundBF16Ref,
					tensor.F32: func(v float32) float32 { return v }}[typ]
				ref = func(dst []byte, x []float32) { halvesPanelRow(dst, x, round) }
			}
			for k := 16; k <= 320; k += 16 {
				var rows [4][]byte
				var ptrs [4]*byte
				for i := range rows {
					rows[i] = randomFloatRows(rng, typ, 1, k)
					ptrs[i] = &rows[i][0]
				}
				want := packTileRef(g, typ, k, rows)
				got := make([]byte, len(want)+64)
				g.pack(k, &ptrs, &got[0])
				if !bytes.Equal(got[:len(want)], want) {
					t.Fatalf("%v %s k=%d: packed tile differs from the reference", typ, g.name, k)
				}
				x := make([]float32, k)
				for i := range x {
					if rng.IntN(3) == 0 {
						x[i] = special[rng.IntN(len(special))]
					} else {
						x[i] = float32(rng.NormFloat64())
					}
				}
				size := g.panelBytes(k)
				wantP, gotP := make([]byte, size), make([]byte, size)
				slot := rng.IntN(panelTokens) * g.slot
				ref(wantP[slot:], x)
				g.panel(gotP[slot:], x)
				if !bytes.Equal(gotP, wantP) {
					t.Fatalf("%v %s k=%d: panel slot %d differs from the reference", typ, g.name, k, slot/g.slot)
				}
			}
		}
	}
}

// TestPanelSpan: the panels cover tokens 0…n-1 in order, each token once,
// in the slot panelSlot gives it, no panel holds more than six, and no last
// panel holds one or two tokens when an earlier panel could share them.
func TestPanelSpan(t *testing.T) {
	for n := 1; n <= 64; n++ {
		panels := (n + panelTokens - 1) / panelTokens
		next := 0
		for pi := range panels {
			j, nt := panelSpan(n, pi)
			if j != next || nt < 1 || nt > panelTokens {
				t.Fatalf("n=%d: panel %d spans [%d, %d), the last ended at %d", n, pi, j, j+nt, next)
			}
			if pi == panels-1 && n > panelTokens && nt < 3 {
				t.Errorf("n=%d: the last panel holds %d tokens", n, nt)
			}
			for s := range nt {
				if p, sl := panelSlot(n, j+s); p != pi || sl != s {
					t.Fatalf("n=%d: token %d in panel %d slot %d, panelSlot says %d, %d", n, j+s, pi, s, p, sl)
				}
			}
			next = j + nt
		}
		if next != n {
			t.Fatalf("n=%d: the panels end at token %d", n, next)
		}
	}
}

// BenchmarkFloatTile: one type's 4×6 tile on a packed weight tile and a
// panel that stay in L1 (k = 512), GFLOP/s: the kernel's own speed, apart
// from the caches and memory BenchmarkFloatGemm adds.
func BenchmarkFloatTile(b *testing.B) {
	const k = 512
	rng := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []tensor.DType{tensor.F16, tensor.BF16, tensor.F32} {
		g := table[typ].gemm
		if g.tiles[panelTokens] == nil {
			b.Logf("%v: no SIMD tiles in this build", typ)
			continue
		}
		var rows [4]*byte
		for i := range rows {
			rows[i] = &randomFloatRows(rng, typ, 1, k)[0]
		}
		chunks := k / g.chunk
		w := make([]byte, chunks*tileRows*g.rowEl)
		g.pack(k, &rows, &w[0])
		panel := make([]byte, g.panelBytes(k))
		x := make([]float32, k)
		for s := range panelTokens {
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			g.panel(panel[s*g.slot:], x)
		}
		var out [tileRows * panelTokens]float32
		b.Run(fmt.Sprintf("%v/%s", typ, g.name), func(b *testing.B) {
			for b.Loop() {
				g.tiles[panelTokens](chunks, &w[0], &panel[0], &out[0], 4*tileRows)
			}
			b.ReportMetric(float64(2*tileRows*panelTokens*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
